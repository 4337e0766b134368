// log_sum_exp in a file of its own, compiled with -ffast-math as activation.cpp is: that lets GCC
// call glibc's vectorized expf (libmvec) and keep the double sum in vector lanes. A perplexity or
// an ablation takes it over the whole vocabulary at every scored token; the scalar expf calls
// were a tenth of an ablation of GPT-2.
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

}  // namespace attn
