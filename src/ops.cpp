#include "src/ops.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>

namespace attn {

void linear_forward(float* y, const float* x, int rows, const Linear& linear) {
  const int in = linear.in;
  const int out = linear.out;
  if (rows == 1) {
    // One token (decode): a matrix-vector product, bound by reading the weights once.
    if (linear.bias) {
      std::copy(linear.bias, linear.bias + out, y);
    } else {
      std::fill(y, y + out, 0.0f);
    }
    if (linear.in_out_layout) {
      cblas_sgemv(CblasRowMajor, CblasTrans, in, out, 1.0f, linear.weight, linear.row_stride, x, 1,
                  1.0f, y, 1);
    } else {
      cblas_sgemv(CblasRowMajor, CblasNoTrans, out, in, 1.0f, linear.weight, linear.row_stride, x,
                  1, 1.0f, y, 1);
    }
    return;
  }
  if (linear.bias) {
    for (int r = 0; r < rows; ++r) std::copy(linear.bias, linear.bias + out, y + long(r) * out);
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, linear.in_out_layout ? CblasNoTrans : CblasTrans, rows,
              out, in, 1.0f, x, in, linear.weight, linear.row_stride, linear.bias ? 1.0f : 0.0f, y,
              out);
}

void layer_norm_forward(float* y, const float* x, int rows, int d, const Norm& norm) {
  for (int r = 0; r < rows; ++r) {
    const float* row = x + long(r) * d;
    float* out = y + long(r) * d;
    // Accumulate in double: d can be thousands, and HF's float32 LayerNorm is the reference.
    double sum = 0;
    for (int i = 0; i < d; ++i) sum += row[i];
    const double mean = sum / d;
    double squares = 0;
    for (int i = 0; i < d; ++i) squares += (row[i] - mean) * (row[i] - mean);
    const float inv_std = float(1.0 / std::sqrt(squares / d + norm.eps));
    const float mean_f = float(mean);
    for (int i = 0; i < d; ++i) out[i] = (row[i] - mean_f) * inv_std * norm.weight[i] + norm.bias[i];
  }
}

void activation_forward(float* x, long n, Activation activation) {
  switch (activation) {
    case Activation::kGeluTanh: {
      // GPT-2's gelu_new: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      const float sqrt_2_over_pi = 0.7978845608028654f;
      for (long i = 0; i < n; ++i) {
        const float v = x[i];
        x[i] = 0.5f * v * (1.0f + std::tanh(sqrt_2_over_pi * (v + 0.044715f * v * v * v)));
      }
      break;
    }
    case Activation::kGeluErf: {
      const float inv_sqrt_2 = 0.7071067811865476f;
      for (long i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * inv_sqrt_2));
      break;
    }
  }
}

void softmax_row(float* x, int n) {
  const float max = *std::max_element(x, x + n);
  float sum = 0;
  for (int i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv_sum = 1.0f / sum;
  for (int i = 0; i < n; ++i) x[i] *= inv_sum;
}

void add_in_place(float* y, const float* x, long n) {
  for (long i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace attn
