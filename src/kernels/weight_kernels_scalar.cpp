// The fallback kernels of src/kernels/weight_kernels.h, plain C++ compiled without SIMD flags
// (CMakeLists.txt): for machines with neither AVX2 nor AVX-512.

#include <cstdint>

#include "src/kernels/weight_kernels.h"

namespace attn {

namespace {

template <WeightType kType>
void dot_rows(float* y, const void* weight, long row_stride, const float* x, int in, int n_rows) {
  using Element = WeightElement<kType>;
  const auto* rows = static_cast<const Element*>(weight);
  for (int j = 0; j < n_rows; ++j) {
    const Element* row = rows + j * row_stride;
    float sum = 0;
    for (int i = 0; i < in; ++i) sum += weight_value<kType>(row[i]) * x[i];
    y[j] = sum;
  }
}

template <WeightType kType>
void accumulate_rows(float* y, const void* weight, long row_stride, const float* x, int n_rows,
                     int n) {
  using Element = WeightElement<kType>;
  const auto* rows = static_cast<const Element*>(weight);
  for (int i = 0; i < n_rows; ++i) {
    const Element* row = rows + i * row_stride;
    for (int j = 0; j < n; ++j) y[j] += x[i] * weight_value<kType>(row[j]);
  }
}

template <WeightType kType>
void to_floats(float* y, const void* weight, int n) {
  const auto* row = static_cast<const WeightElement<kType>*>(weight);
  for (int j = 0; j < n; ++j) y[j] = weight_value<kType>(row[j]);
}

template <WeightType kType>
constexpr WeightKernels kernels_of() {
  return {.dot_rows = dot_rows<kType>,
          .accumulate_rows = accumulate_rows<kType>,
          .to_floats = to_floats<kType>};
}

}  // namespace

const WeightKernels& scalar_weight_kernels(WeightType type) {
  static constexpr WeightKernels table[kWeightTypeCount] = {kernels_of<WeightType::kF32>(),
                                                            kernels_of<WeightType::kF16>(),
                                                            kernels_of<WeightType::kBF16>()};
  return table[int(type)];
}

}  // namespace attn
