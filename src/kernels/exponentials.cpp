// The loops over exponentials, in a file of their own because it is compiled with -ffast-math as
// activation.cpp is: that lets GCC call glibc's vectorized expf (libmvec), where the scalar calls
// were a tenth of an ablation of GPT-2 (log_sum_exp over the vocabulary at every scored token) and
// of a q8 BERT pass (the attention's softmax).
#include <algorithm>
#include <cmath>

#include "src/kernels/ops.h"

namespace attn {

double log_sum_exp(const float* x, int n) {
  float max = x[0];
  for (int i = 1; i < n; ++i) max = std::max(max, x[i]);
  // Each exponent is at least -87 (-ffast-math assumes no infinities, and a logit may be -inf):
  // a term of e^-87 = 1.6e-38 or less is nothing beside the max's own term of 1.
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += std::exp(std::max(x[i] - max, -87.0f));
  return max + std::log(sum);
}

void exp_of_differences(float* x, int n, float shift) {
  for (int i = 0; i < n; ++i) x[i] = std::exp(x[i] - shift);
}

}  // namespace attn
