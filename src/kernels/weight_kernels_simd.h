#pragma once

#include <immintrin.h>

#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "src/kernels/weight_kernels.h"

// The vector kernels of src/kernels/weight_kernels.h, written once for any register width.
// Included only by weight_kernels_avx2.cpp and weight_kernels_avx512.cpp, each with its own
// `Isa` defined in an unnamed namespace, so that every instantiation stays inside the
// translation unit compiled for that instruction set. An Isa provides:
//   Vector, kLanes                 the register type and how many floats it holds
//   zero(), broadcast(value)
//   load(const float*), store(float*, Vector), fmadd(a, b, c) = a * b + c, sum(Vector)
//   load_weights<kType>(const WeightElement<kType>*)   kLanes elements converted to floats
// and, for the block types (below; 256-bit registers in either instruction set):
//   sum(__m256)                    the sum of its 8 floats
//   sum_u8_s8(__m256i u, __m256i s) -> __m256i   the 32 products u[k] s[k] of unsigned bytes u
//                                  (at most 128) and signed bytes s, summed by fours into 8
//                                  int32 lanes

namespace attn::simd {

// The one-row kernels stream weights from DRAM, and the hardware prefetcher alone keeps too few
// cache lines in flight for that (for the same reason as kBlockPrefetchRows below): while a block
// of rows is multiplied, each row's columns are prefetched this many rows further on. Measured on
// one thread of an AMD Zen 5 over 256 MiB of f32 (medians of 7 interleaved rounds, by a 1-core
// read of 19 GB/s): dot_rows, 768 wide, 16.5 GB/s with blocks of 4 rows prefetching 4 rows
// ahead, 22.0 with blocks of 8 prefetching 8 ahead (AVX2: 16.0 and 18.5; 16 ahead, 22.5: no
// better); accumulate_rows, 3072 wide, 19.2 GB/s prefetching 4 rows ahead, 21.0 8 ahead (AVX2:
// 19.2 and 18.9, the same within the noise).
constexpr int kPrefetchRows = 8;
// Rows of W that dot_rows multiplies at once (each vector of x, loaded once, serves all of them).
constexpr int kDotBlockRows = 8;
// Rows of W that accumulate_rows adds in at once (y read and written once for all of them). On
// one Zen 5 core over 256 MiB from DRAM (attn bench --kernels, read 29-32 GB/s), 4 rows against
// 8: f16 22-24 against 27-29 GB/s, bf16 22-26 against 27-28, f32 22-25 against 25-31, on the
// AVX2 and AVX-512 kernels alike. The sums are the same either way: each y[j] takes the rows'
// products in the same order.
constexpr int kAccumulateBlockRows = 8;

// y[r] = sum_i W[r, i] x[i] for kRows rows at once: each vector of x, loaded once, serves all
// of them. w points at row 0; rows are row_stride elements apart.
template <class Isa, WeightType kType, int kRows>
void dot_row_block(float* y, const WeightElement<kType>* w, long row_stride, const float* x,
                   int in) {
  // In bytes, as an integer: the rows ahead may lie past the end of the matrix, where a prefetch
  // is harmless but C++ pointer arithmetic would not be.
  const auto prefetch_distance =
      uintptr_t(kPrefetchRows * row_stride * long(sizeof(WeightElement<kType>)));
  typename Isa::Vector sums[kRows];
  for (int r = 0; r < kRows; ++r) sums[r] = Isa::zero();
  int i = 0;
  for (; i + Isa::kLanes <= in; i += Isa::kLanes) {
    const auto xs = Isa::load(x + i);
    for (int r = 0; r < kRows; ++r) {
      const WeightElement<kType>* elements = w + r * row_stride + i;
      _mm_prefetch(reinterpret_cast<const char*>(uintptr_t(elements) + prefetch_distance),
                   _MM_HINT_T0);
      sums[r] = Isa::fmadd(Isa::template load_weights<kType>(elements), xs, sums[r]);
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
  for (; j + kDotBlockRows <= n_rows; j += kDotBlockRows) {
    dot_row_block<Isa, kType, kDotBlockRows>(y + j, w + j * row_stride, row_stride, x, in);
  }
  for (; j < n_rows; ++j)
    dot_row_block<Isa, kType, 1>(y + j, w + j * row_stride, row_stride, x, in);
}

// y[j] += sum_r x[r] W[r, j] over kRows rows at once: y is read and written once for all of
// them. w points at row 0; rows are row_stride elements apart.
template <class Isa, WeightType kType, int kRows>
void accumulate_row_block(float* y, const WeightElement<kType>* w, long row_stride, const float* x,
                          int n) {
  const auto prefetch_distance =  // as in dot_row_block
      uintptr_t(kPrefetchRows * row_stride * long(sizeof(WeightElement<kType>)));
  typename Isa::Vector xs[kRows];
  for (int r = 0; r < kRows; ++r) xs[r] = Isa::broadcast(x[r]);
  int j = 0;
  for (; j + Isa::kLanes <= n; j += Isa::kLanes) {
    auto sums = Isa::load(y + j);
    for (int r = 0; r < kRows; ++r) {
      const WeightElement<kType>* elements = w + r * row_stride + j;
      _mm_prefetch(reinterpret_cast<const char*>(uintptr_t(elements) + prefetch_distance),
                   _MM_HINT_T0);
      sums = Isa::fmadd(xs[r], Isa::template load_weights<kType>(elements), sums);
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
  for (; i + kAccumulateBlockRows <= n_rows; i += kAccumulateBlockRows) {
    accumulate_row_block<Isa, kType, kAccumulateBlockRows>(y, w + i * row_stride, row_stride, x + i,
                                                           n);
  }
  for (; i < n_rows; ++i) {
    accumulate_row_block<Isa, kType, 1>(y, w + i * row_stride, row_stride, x + i, n);
  }
}

// The _of_seqs kernels take kSeqBlock sequences at once, and kSeqRows rows of W (dot) or vectors
// of columns (accumulate): kSeqBlock x kSeqRows sums in registers, with room for the weights
// loaded (AVX-512 has 32 registers, AVX2 16).
constexpr int kSeqBlock = 4;
template <class Isa>
constexpr int kSeqRows = Isa::kLanes == 16 ? 4 : 2;

// Calls block.operator()<kSeqs>(s) for sequences [s, s + kSeqs): blocks of kSeqBlock, then the
// 1 to kSeqBlock - 1 left, each with its own instantiation (its sums all in registers).
template <class Block>
void in_seq_blocks(int n_seqs, const Block& block) {
  static_assert(kSeqBlock == 4, "the cases below are the remainders of blocks of 4");
  int s = 0;
  for (; s + kSeqBlock <= n_seqs; s += kSeqBlock) block.template operator()<kSeqBlock>(s);
  switch (n_seqs - s) {
    case 3:
      block.template operator()<3>(s);
      break;
    case 2:
      block.template operator()<2>(s);
      break;
    case 1:
      block.template operator()<1>(s);
      break;
  }
}

// dot_row_block for kSeqs sequences: sums[s][r] is dot_row_block's sums[r] for x[s], taken in the
// same order, and each vector of W is loaded once for all of them.
template <class Isa, WeightType kType, int kSeqs, int kRows>
void dot_row_block_of_seqs(float* y, long y_stride, const WeightElement<kType>* w, long row_stride,
                           const float* x, long x_stride, int in) {
  const auto prefetch_distance =  // as in dot_row_block
      uintptr_t(kPrefetchRows * row_stride * long(sizeof(WeightElement<kType>)));
  typename Isa::Vector sums[kSeqs][kRows];
  for (int s = 0; s < kSeqs; ++s) {
    for (int r = 0; r < kRows; ++r) sums[s][r] = Isa::zero();
  }
  int i = 0;
  for (; i + Isa::kLanes <= in; i += Isa::kLanes) {
    typename Isa::Vector weights[kRows];
    for (int r = 0; r < kRows; ++r) {
      const WeightElement<kType>* elements = w + r * row_stride + i;
      _mm_prefetch(reinterpret_cast<const char*>(uintptr_t(elements) + prefetch_distance),
                   _MM_HINT_T0);
      weights[r] = Isa::template load_weights<kType>(elements);
    }
    for (int s = 0; s < kSeqs; ++s) {
      const auto xs = Isa::load(x + s * x_stride + i);
      for (int r = 0; r < kRows; ++r) sums[s][r] = Isa::fmadd(weights[r], xs, sums[s][r]);
    }
  }
  for (int s = 0; s < kSeqs; ++s) {
    const float* xs = x + s * x_stride;
    for (int r = 0; r < kRows; ++r) {
      float sum = Isa::sum(sums[s][r]);
      for (int k = i; k < in; ++k) sum += weight_value<kType>(w[r * row_stride + k]) * xs[k];
      y[s * y_stride + r] = sum;
    }
  }
}

template <class Isa, WeightType kType, int kSeqs>
void dot_rows_seq_block(float* y, long y_stride, const WeightElement<kType>* w, long row_stride,
                        const float* x, long x_stride, int in, int n_rows) {
  constexpr int kRows = kSeqRows<Isa>;
  int j = 0;
  for (; j + kRows <= n_rows; j += kRows) {
    dot_row_block_of_seqs<Isa, kType, kSeqs, kRows>(y + j, y_stride, w + j * row_stride, row_stride,
                                                    x, x_stride, in);
  }
  for (; j < n_rows; ++j) {
    dot_row_block_of_seqs<Isa, kType, kSeqs, 1>(y + j, y_stride, w + j * row_stride, row_stride, x,
                                                x_stride, in);
  }
}

template <class Isa, WeightType kType>
void dot_rows_of_seqs(float* y, long y_stride, const void* weight, long row_stride, const float* x,
                      long x_stride, int in, int n_rows, int n_seqs) {
  const auto* w = static_cast<const WeightElement<kType>*>(weight);
  in_seq_blocks(n_seqs, [&]<int kSeqs>(int s) {
    dot_rows_seq_block<Isa, kType, kSeqs>(y + s * y_stride, y_stride, w, row_stride,
                                          x + s * x_stride, x_stride, in, n_rows);
  });
}

// accumulate_row_block for kSeqs sequences over kVectors vectors of columns: each y[s][j] takes
// the rows' products in the same order as accumulate_rows gives them, and each vector of W is
// loaded once for all the sequences. y and w point at the block's first column.
template <class Isa, WeightType kType, int kSeqs, int kVectors>
void accumulate_block_of_seqs(float* y, long y_stride, const WeightElement<kType>* w,
                              long row_stride, const float* x, long x_stride, int n_rows) {
  const auto prefetch_distance =  // as in dot_row_block
      uintptr_t(kPrefetchRows * row_stride * long(sizeof(WeightElement<kType>)));
  typename Isa::Vector sums[kSeqs][kVectors];
  for (int s = 0; s < kSeqs; ++s) {
    for (int v = 0; v < kVectors; ++v) sums[s][v] = Isa::load(y + s * y_stride + v * Isa::kLanes);
  }
  for (int r = 0; r < n_rows; ++r) {
    typename Isa::Vector weights[kVectors];
    for (int v = 0; v < kVectors; ++v) {
      const WeightElement<kType>* elements = w + r * row_stride + v * Isa::kLanes;
      _mm_prefetch(reinterpret_cast<const char*>(uintptr_t(elements) + prefetch_distance),
                   _MM_HINT_T0);
      weights[v] = Isa::template load_weights<kType>(elements);
    }
    for (int s = 0; s < kSeqs; ++s) {
      const auto xs = Isa::broadcast(x[s * x_stride + r]);
      for (int v = 0; v < kVectors; ++v) sums[s][v] = Isa::fmadd(xs, weights[v], sums[s][v]);
    }
  }
  for (int s = 0; s < kSeqs; ++s) {
    for (int v = 0; v < kVectors; ++v) Isa::store(y + s * y_stride + v * Isa::kLanes, sums[s][v]);
  }
}

template <class Isa, WeightType kType, int kSeqs>
void accumulate_rows_seq_block(float* y, long y_stride, const WeightElement<kType>* w,
                               long row_stride, const float* x, long x_stride, int n_rows, int n) {
  constexpr int kVectors = kSeqRows<Isa>;
  int j = 0;
  for (; j + kVectors * Isa::kLanes <= n; j += kVectors * Isa::kLanes) {
    accumulate_block_of_seqs<Isa, kType, kSeqs, kVectors>(y + j, y_stride, w + j, row_stride, x,
                                                          x_stride, n_rows);
  }
  for (; j + Isa::kLanes <= n; j += Isa::kLanes) {
    accumulate_block_of_seqs<Isa, kType, kSeqs, 1>(y + j, y_stride, w + j, row_stride, x, x_stride,
                                                   n_rows);
  }
  if (j == n) return;
  // The last columns, less than a vector: accumulate_rows' own code for them, sequence by
  // sequence.
  for (int s = 0; s < kSeqs; ++s) {
    accumulate_rows<Isa, kType>(y + s * y_stride + j, w + j, row_stride, x + s * x_stride, n_rows,
                                n - j);
  }
}

template <class Isa, WeightType kType>
void accumulate_rows_of_seqs(float* y, long y_stride, const void* weight, long row_stride,
                             const float* x, long x_stride, int n_rows, int n, int n_seqs) {
  const auto* w = static_cast<const WeightElement<kType>*>(weight);
  in_seq_blocks(n_seqs, [&]<int kSeqs>(int s) {
    accumulate_rows_seq_block<Isa, kType, kSeqs>(y + s * y_stride, y_stride, w, row_stride,
                                                 x + s * x_stride, x_stride, n_rows, n);
  });
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
          .dot_rows_of_seqs = dot_rows_of_seqs<Isa, kType>,
          .accumulate_rows_of_seqs = accumulate_rows_of_seqs<Isa, kType>,
          .to_floats = to_floats<Isa, kType>};
}

// The block types, q8_0 and q4_0 (weight_type.h): both instruction sets work on one block at a
// time, 256 bits wide: a block's 32 values, as signed bytes, fill one register, their 32
// products sum into 8 int32 lanes, and those become 8 floats, scaled by the block's two scales
// and added up in f32. The activations x are quantized as q8_0 weights are (quantize_q8_block in
// weight_conversion.h, with an f32 scale), once per call, so that the products are of integers.
// (The functions below that do not use their Isa take it all the same, so that each instruction
// set gets its own instantiation.)

// values (n_blocks * 32) and scales (n_blocks) of the n_blocks blocks of x, exactly as
// quantize_q8_block gives them, 8 floats at a time.
template <class Isa>
void quantize_activations(int8_t* values, float* scales, const float* x, int n_blocks) {
  constexpr int kParts = kQuantBlockSize / 8;
  const __m256 sign_bits = _mm256_set1_ps(-0.0f);
  const __m256 largest_float = _mm256_set1_ps(std::numeric_limits<float>::max());
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  for (int b = 0; b < n_blocks; ++b) {
    __m256 parts[kParts];
    __m256 amax = _mm256_setzero_ps(), non_finite = _mm256_setzero_ps();
    for (int p = 0; p < kParts; ++p) {
      parts[p] = _mm256_loadu_ps(x + b * kQuantBlockSize + 8 * p);
      const __m256 magnitude = _mm256_andnot_ps(sign_bits, parts[p]);
      amax = _mm256_max_ps(amax, magnitude);
      // Not (magnitude <= largest float): infinities, and NaNs (unordered).
      non_finite = _mm256_or_ps(non_finite, _mm256_cmp_ps(magnitude, largest_float, _CMP_NLE_UQ));
    }
    int8_t* block_values = values + b * kQuantBlockSize;
    if (_mm256_movemask_ps(non_finite)) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(block_values), _mm256_setzero_si256());
      scales[b] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    __m128 amax4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    amax4 = _mm_max_ps(amax4, _mm_movehl_ps(amax4, amax4));
    amax4 = _mm_max_ss(amax4, _mm_movehdup_ps(amax4));
    const float scale = _mm_cvtss_f32(amax4) / 127;
    const __m256 inverse_scale = _mm256_set1_ps(
        scale >= std::numeric_limits<float>::min() ? 1 / scale : 0);  // as quantize_q8_block
    scales[b] = scale;
    __m256i ints[kParts];
    for (int p = 0; p < kParts; ++p) {
      // roundf (half away from zero) on the magnitude, whose fraction magnitude - whole is
      // exact; the sign goes back on after.
      const __m256 scaled = _mm256_mul_ps(parts[p], inverse_scale);
      const __m256 magnitude = _mm256_andnot_ps(sign_bits, scaled);
      const __m256 whole = _mm256_round_ps(magnitude, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
      const __m256 round_up =
          _mm256_and_ps(_mm256_cmp_ps(_mm256_sub_ps(magnitude, whole), half, _CMP_GE_OQ), one);
      const __m256 rounded =
          _mm256_or_ps(_mm256_add_ps(whole, round_up), _mm256_and_ps(sign_bits, scaled));
      ints[p] = _mm256_cvttps_epi32(rounded);
    }
    // The packs narrow within each 128-bit half, leaving the 4-byte groups in the order
    // ints[0][0:4], ints[1][0:4], ints[2][0:4], ints[3][0:4], ints[0][4:8], ...: put them back.
    const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(ints[0], ints[1]),
                                             _mm256_packs_epi32(ints[2], ints[3]));
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(block_values),
        _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  }
}

// While dot_row_block_quantized multiplies a row, it prefetches the same block of the row this
// many rows further on (two calls of 4 rows later). The hardware prefetcher alone leaves the loop
// waiting on memory (a dozen instructions per 34-byte block keep too few cache lines in flight):
// measured on one thread of an AMD Zen 5 with the weights coming from DRAM, 9-13 GB/s without,
// 27-30 GB/s prefetching 4 rows ahead, 31-36 GB/s 8 rows ahead.
constexpr int kBlockPrefetchRows = 8;

// The 32 q of a q4_0 block in order, as bytes from 0 to 15: the low halves (q[0:16]) in the low
// 128 bits, the high halves (q[16:32]) above.
template <class Isa>
__m256i block_nibbles(const BlockQ4_0& block) {
  const __m128i nibbles = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block.nibbles));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(nibbles, 4), nibbles),
                          _mm256_set1_epi8(0x0F));
}

// The 32 values of a block, as signed bytes in order.
template <class Isa>
__m256i block_values(const BlockQ8_0& block) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.values));
}
template <class Isa>
__m256i block_values(const BlockQ4_0& block) {
  return _mm256_sub_epi8(block_nibbles<Isa>(block), _mm256_set1_epi8(8));
}

// The 32 products W[k] x[k] of a block by the same block of quantized x (xs, whose 32 values sum
// to x_sum), summed into 8 int32 lanes.
template <class Isa>
__m256i block_products(const BlockQ8_0& block, __m256i xs, int32_t /*x_sum*/) {
  const __m256i ws = block_values<Isa>(block);
  // The multiplication is of unsigned by signed bytes: w's sign moves onto x. |w| as an unsigned
  // byte is right even for -128 (128); x is never -128, so -x never overflows.
  return Isa::sum_u8_s8(_mm256_sign_epi8(ws, ws), _mm256_sign_epi8(xs, ws));
}
template <class Isa>
__m256i block_products(const BlockQ4_0& block, __m256i xs, int32_t x_sum) {
  // q is unsigned as it is, so no sign moves: sum (q - 8) x = sum q x - 8 x_sum, the correction
  // taken off lane 0. (Three instructions fewer per block than q - 8 and the sign moves.)
  return _mm256_sub_epi32(Isa::sum_u8_s8(block_nibbles<Isa>(block), xs),
                          _mm256_setr_epi32(8 * x_sum, 0, 0, 0, 0, 0, 0, 0));
}

// y[r] = sum_b w_scale[r, b] x_scale[b] (W[r, b] . x[b]) over the n_blocks blocks b, for kRows
// rows at once: each block of x, loaded once, serves all of them. w points at row 0's first
// block; rows are row_blocks blocks apart. x_sums[b] is the sum of block b's x_values.
template <class Isa, class Block, int kRows>
void dot_row_block_quantized(float* y, const Block* w, long row_blocks, const int8_t* x_values,
                             const float* x_scales, const int32_t* x_sums, int n_blocks) {
  // In bytes, as an integer: the rows ahead may lie past the end of the matrix, where a prefetch
  // is harmless but C++ pointer arithmetic would not be.
  const auto prefetch_distance = uintptr_t(kBlockPrefetchRows * row_blocks * sizeof(Block));
  __m256 sums[kRows];
  for (int r = 0; r < kRows; ++r) sums[r] = _mm256_setzero_ps();
  for (int b = 0; b < n_blocks; ++b) {
    const __m256i xs =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x_values + b * kQuantBlockSize));
    for (int r = 0; r < kRows; ++r) {
      const Block& block = w[r * row_blocks + b];
      _mm_prefetch(reinterpret_cast<const char*>(uintptr_t(&block) + prefetch_distance),
                   _MM_HINT_T0);
      const __m256i products = block_products<Isa>(block, xs, x_sums[b]);
      const __m256 scale = _mm256_set1_ps(_cvtsh_ss(block.scale) * x_scales[b]);
      sums[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(products), scale, sums[r]);
    }
  }
  for (int r = 0; r < kRows; ++r) y[r] = Isa::sum(sums[r]);
}

// dot_rows for a block type: row_stride and in are multiples of 32.
template <class Isa, class Block>
void dot_rows_quantized(float* y, const void* weight, long row_stride, const float* x, int in,
                        int n_rows) {
  const int n_blocks = in / kQuantBlockSize;
  // x quantized, (in) values, (n_blocks) scales and, for q4_0 only, (n_blocks) sums of each
  // block's values; each thread keeps its own between calls.
  static thread_local std::vector<int8_t> x_values;
  static thread_local std::vector<float> x_scales;
  static thread_local std::vector<int32_t> x_sums;
  x_values.resize(std::size_t(in));
  x_scales.resize(std::size_t(n_blocks));
  x_sums.assign(std::size_t(n_blocks), 0);
  quantize_activations<Isa>(x_values.data(), x_scales.data(), x, n_blocks);
  if constexpr (std::is_same_v<Block, BlockQ4_0>) {
    for (int i = 0; i < in; ++i) x_sums[i / kQuantBlockSize] += x_values[i];
  }
  const auto* w = static_cast<const Block*>(weight);
  const long row_blocks = row_stride / kQuantBlockSize;
  // Rows multiplied together: more rows, more cache lines in flight. q8_0 on one core of an AMD
  // Zen 5 with the weights from DRAM (attn bench --kernels, 26-35 GB/s read): 16-17 GB/s with 4
  // rows, 21-28 with 8, on the AVX2 and AVX-512 kernels alike. q4_0 loses with 8 (15 -> 12-15
  // GB/s: its nibbles take more registers), so it keeps 4.
  constexpr int kRows = std::is_same_v<Block, BlockQ8_0> ? 8 : 4;
  int j = 0;
  for (; j + kRows <= n_rows; j += kRows) {
    dot_row_block_quantized<Isa, Block, kRows>(y + j, w + j * row_blocks, row_blocks,
                                               x_values.data(), x_scales.data(), x_sums.data(),
                                               n_blocks);
  }
  for (; j < n_rows; ++j) {
    dot_row_block_quantized<Isa, Block, 1>(y + j, w + j * row_blocks, row_blocks, x_values.data(),
                                           x_scales.data(), x_sums.data(), n_blocks);
  }
}

// to_floats for a block type: n is a multiple of 32; scale x value is exact in f32 (11 by 8
// bits).
template <class Isa, class Block>
void to_floats_quantized(float* y, const void* weight, int n) {
  const auto* blocks = static_cast<const Block*>(weight);
  for (int b = 0; b < n / kQuantBlockSize; ++b) {
    const __m256 scale = _mm256_set1_ps(_cvtsh_ss(blocks[b].scale));
    const __m256i values = block_values<Isa>(blocks[b]);
    const __m128i halves[2] = {_mm256_castsi256_si128(values), _mm256_extracti128_si256(values, 1)};
    for (int k = 0; k < kQuantBlockSize; k += 8) {
      const __m128i eight = k % 16 ? _mm_srli_si128(halves[k / 16], 8) : halves[k / 16];
      _mm256_storeu_ps(y + b * kQuantBlockSize + k,
                       _mm256_mul_ps(scale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(eight))));
    }
  }
}

template <class Isa, class Block>
constexpr WeightKernels quantized_kernels_of() {
  return {.dot_rows = dot_rows_quantized<Isa, Block>,
          .accumulate_rows = nullptr,
          .dot_rows_of_seqs = nullptr,
          .accumulate_rows_of_seqs = nullptr,
          .to_floats = to_floats_quantized<Isa, Block>};
}

// The table of one instruction set, indexed by WeightType. The block types have no
// accumulate_rows: their matrices are always stored [out, in] (weight_kernels.h).
template <class Isa>
constexpr WeightKernels kTable[kWeightTypeCount] = {
    kernels_of<Isa, WeightType::kF32>(), kernels_of<Isa, WeightType::kF16>(),
    kernels_of<Isa, WeightType::kBF16>(), quantized_kernels_of<Isa, BlockQ8_0>(),
    quantized_kernels_of<Isa, BlockQ4_0>()};

}  // namespace attn::simd
