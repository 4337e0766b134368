#pragma once

#include "src/kernels/weight_kernels.h"

// The vector kernels of src/kernels/weight_kernels.h, written once for any register width.
// Included only by weight_kernels_avx2.cpp and weight_kernels_avx512.cpp, each with its own
// `Isa` defined in an unnamed namespace, so that every instantiation stays inside the
// translation unit compiled for that instruction set. An Isa provides:
//   Vector, kLanes                 the register type and how many floats it holds
//   zero(), broadcast(value)
//   load(const float*), store(float*, Vector), fmadd(a, b, c) = a * b + c, sum(Vector)
//   load_weights<kType>(const WeightElement<kType>*)   kLanes elements converted to floats

namespace attn::simd {

// y[r] = sum_i W[r, i] x[i] for kRows rows at once: each vector of x, loaded once, serves all
// of them. w points at row 0; rows are row_stride elements apart.
template <class Isa, WeightType kType, int kRows>
void dot_row_block(float* y, const WeightElement<kType>* w, long row_stride, const float* x,
                   int in) {
  typename Isa::Vector sums[kRows];
  for (int r = 0; r < kRows; ++r) sums[r] = Isa::zero();
  int i = 0;
  for (; i + Isa::kLanes <= in; i += Isa::kLanes) {
    const auto xs = Isa::load(x + i);
    for (int r = 0; r < kRows; ++r) {
      sums[r] = Isa::fmadd(Isa::template load_weights<kType>(w + r * row_stride + i), xs, sums[r]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    float sum = Isa::sum(sums[r]);
    for (int k = i; k < in; ++k) sum += weight_value<kType>(w[r * row_stride + k]) * x[k];
    y[r] = sum;
  }
}

template <class Isa, WeightType kType>
void dot_rows(float* y, const void* weight, long row_stride, const float* x, int in, int n_rows) {
  const auto* w = static_cast<const WeightElement<kType>*>(weight);
  int j = 0;
  for (; j + 4 <= n_rows; j += 4) {
    dot_row_block<Isa, kType, 4>(y + j, w + j * row_stride, row_stride, x, in);
  }
  for (; j < n_rows; ++j)
    dot_row_block<Isa, kType, 1>(y + j, w + j * row_stride, row_stride, x, in);
}

// y[j] += sum_r x[r] W[r, j] over kRows rows at once: y is read and written once for all of
// them. w points at row 0; rows are row_stride elements apart.
template <class Isa, WeightType kType, int kRows>
void accumulate_row_block(float* y, const WeightElement<kType>* w, long row_stride, const float* x,
                          int n) {
  typename Isa::Vector xs[kRows];
  for (int r = 0; r < kRows; ++r) xs[r] = Isa::broadcast(x[r]);
  int j = 0;
  for (; j + Isa::kLanes <= n; j += Isa::kLanes) {
    auto sums = Isa::load(y + j);
    for (int r = 0; r < kRows; ++r) {
      sums = Isa::fmadd(xs[r], Isa::template load_weights<kType>(w + r * row_stride + j), sums);
    }
    Isa::store(y + j, sums);
  }
  for (; j < n; ++j) {
    float sum = y[j];
    for (int r = 0; r < kRows; ++r) sum += x[r] * weight_value<kType>(w[r * row_stride + j]);
    y[j] = sum;
  }
}

template <class Isa, WeightType kType>
void accumulate_rows(float* y, const void* weight, long row_stride, const float* x, int n_rows,
                     int n) {
  const auto* w = static_cast<const WeightElement<kType>*>(weight);
  int i = 0;
  for (; i + 4 <= n_rows; i += 4) {
    accumulate_row_block<Isa, kType, 4>(y, w + i * row_stride, row_stride, x + i, n);
  }
  for (; i < n_rows; ++i) {
    accumulate_row_block<Isa, kType, 1>(y, w + i * row_stride, row_stride, x + i, n);
  }
}

template <class Isa, WeightType kType>
void to_floats(float* y, const void* weight, int n) {
  const auto* w = static_cast<const WeightElement<kType>*>(weight);
  int j = 0;
  for (; j + Isa::kLanes <= n; j += Isa::kLanes) {
    Isa::store(y + j, Isa::template load_weights<kType>(w + j));
  }
  for (; j < n; ++j) y[j] = weight_value<kType>(w[j]);
}

template <class Isa, WeightType kType>
constexpr WeightKernels kernels_of() {
  return {.dot_rows = dot_rows<Isa, kType>,
          .accumulate_rows = accumulate_rows<Isa, kType>,
          .to_floats = to_floats<Isa, kType>};
}

// The table of one instruction set, indexed by WeightType.
template <class Isa>
constexpr WeightKernels kTable[kWeightTypeCount] = {kernels_of<Isa, WeightType::kF32>(),
                                                    kernels_of<Isa, WeightType::kF16>(),
                                                    kernels_of<Isa, WeightType::kBF16>()};

}  // namespace attn::simd
