#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "src/kernels/gemm_int8.h"
#include "src/kernels/weight_kernels_simd.h"

// The vector kernels of src/kernels/gemm_int8.h, written once for any register width. Included
// only by the translation units of the instruction sets (weight_kernels_avx2.cpp,
// gemm_int8_avxvnni.cpp, weight_kernels_avx512.cpp), each with its own `Isa` in an unnamed
// namespace, so that every instantiation stays inside the unit compiled for it. Beyond the float
// operations of weight_kernels_simd.h (Vector, kLanes, zero, broadcast, load, store, add, fmadd)
// and its sum_u8_s8, an Isa provides:
//   mul(a, b)                          a * b
//   Ints                               a register of kLanes int32 lanes; a panel is kLanes wide
//   zero_ints(), load_ints(const void*), broadcast_int32(int32_t), to_floats(Ints)
//   dot_bytes(acc, a, w)               acc + in each int32 lane, the sum of the 4 products of
//                                      its bytes of a and w (w signed; a unsigned where
//                                      kUnsignedActivations, else signed), without saturation
//   kUnsignedActivations               whether A is stored + 128 (gemm_int8.h)

namespace attn::simd {

// Int8GemmKernels::quantize_rows: quantize_activations row by row (the one-row kernels' own
// quantization), then + 128 (the sign bit flipped) for unsigned activations.
template <class Isa>
void quantize_rows(int8_t* values, float* scales, const float* a, long a_stride, int rows, int in) {
  const int n_blocks = in / kQuantBlockSize;
  for (int r = 0; r < rows; ++r) {
    int8_t* row_values = values + long(r) * in;
    quantize_activations<Isa>(row_values, scales + long(r) * n_blocks, a + r * a_stride, n_blocks);
    if constexpr (Isa::kUnsignedActivations) {
      for (int i = 0; i < in; i += kQuantBlockSize) {
        auto* at = reinterpret_cast<__m256i*>(row_values + i);
        _mm256_storeu_si256(at,
                            _mm256_xor_si256(_mm256_loadu_si256(at), _mm256_set1_epi8(char(0x80))));
      }
    }
  }
}

// The transpose of 8 x 8 int32 in place: rows[i] becomes column i. (A template of the Isa only
// so that each instruction set's translation unit keeps its own copy.)
template <class Isa>
void transpose_8x8_int32(__m256i rows[8]) {
  __m256i pairs[8], quads[8];
  for (int r = 0; r < 8; r += 4) {
    // pairs[r..r+3]: elements 0,1 | 4,5 and 2,3 | 6,7 of rows r, r+1 and r+2, r+3 interleaved.
    pairs[r] = _mm256_unpacklo_epi32(rows[r], rows[r + 1]);
    pairs[r + 1] = _mm256_unpackhi_epi32(rows[r], rows[r + 1]);
    pairs[r + 2] = _mm256_unpacklo_epi32(rows[r + 2], rows[r + 3]);
    pairs[r + 3] = _mm256_unpackhi_epi32(rows[r + 2], rows[r + 3]);
    // quads[r + i]: element i (low half) and i + 4 (high half) of the four rows.
    quads[r] = _mm256_unpacklo_epi64(pairs[r], pairs[r + 2]);
    quads[r + 1] = _mm256_unpackhi_epi64(pairs[r], pairs[r + 2]);
    quads[r + 2] = _mm256_unpacklo_epi64(pairs[r + 1], pairs[r + 3]);
    quads[r + 3] = _mm256_unpackhi_epi64(pairs[r + 1], pairs[r + 3]);
  }
  for (int i = 0; i < 4; ++i) {
    rows[i] = _mm256_permute2x128_si256(quads[i], quads[i + 4], 0x20);
    rows[i + 4] = _mm256_permute2x128_si256(quads[i], quads[i + 4], 0x31);
  }
}

// Int8GemmKernels::pack_panel for one block type: 8 columns at a time, each column's block of 32
// values read as 8 groups of 4 bytes and transposed so that group g of the 8 columns lies
// together.
template <class Isa, class Block>
void pack_panel_blocks(std::byte* panel, const Block* rows, long row_blocks, int n_blocks,
                       int width) {
  constexpr int kColumns = Isa::kLanes;
  for (int b = 0; b < n_blocks; ++b) {
    std::byte* values = panel + b * panel_block_bytes(kColumns);  // (8, kColumns, 4)
    std::byte* corrections = values + 32 * kColumns;              // (kColumns) int32
    std::byte* scales = corrections + 4 * kColumns;               // (kColumns) f32
    for (int first = 0; first < kColumns; first += 8) {
      __m256i groups[8];
      alignas(32) float column_scales[8];
      for (int i = 0; i < 8; ++i) {
        const int column = first + i;
        if (column < width) {
          const Block& block = rows[column * row_blocks + b];
          groups[i] = block_values<Isa>(block);
          column_scales[i] = _cvtsh_ss(block.scale);
        } else {
          groups[i] = _mm256_setzero_si256();
          column_scales[i] = 0;
        }
      }
      transpose_8x8_int32<Isa>(groups);
      __m256i sums = _mm256_setzero_si256();  // of each column's 32 values
      for (int g = 0; g < 8; ++g) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(values + (g * kColumns + first) * 4),
                            groups[g]);
        if constexpr (Isa::kUnsignedActivations) {
          sums = _mm256_add_epi32(sums, Isa::sum_u8_s8(_mm256_set1_epi8(1), groups[g]));
        }
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(corrections + first * 4),
                          _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sums, 7)));
      _mm256_storeu_ps(reinterpret_cast<float*>(scales + first * 4), _mm256_load_ps(column_scales));
    }
  }
}

template <class Isa>
void pack_panel(std::byte* panel, WeightType type, const void* weight, long row_blocks,
                int n_blocks, int width) {
  if (type == WeightType::kQ8_0) {
    pack_panel_blocks<Isa>(panel, static_cast<const BlockQ8_0*>(weight), row_blocks, n_blocks,
                           width);
  } else {
    pack_panel_blocks<Isa>(panel, static_cast<const BlockQ4_0*>(weight), row_blocks, n_blocks,
                           width);
  }
}

// c (kRows, kLanes) += the kRows quantized rows . n_blocks blocks of a panel. Per block, the
// kRows integer dot products with the panel's columns stay in registers over the 8 groups of 4
// bytes (each group of the panel, loaded once, serves every row), then each becomes floats
// scaled by (row scale x column scale), as the one-row kernels scale theirs, and is added to the
// row's f32 sums.
template <class Isa, int kRows>
void multiply_int8_tile_rows(float* c, long c_stride, const int8_t* values, long values_stride,
                             const float* scales, long scales_stride, const std::byte* panel,
                             int n_blocks) {
  constexpr int kColumns = Isa::kLanes;
  typename Isa::Vector sums[kRows];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) sums[r] = Isa::zero();
  for (int b = 0; b < n_blocks; ++b) {
    const std::byte* block = panel + b * panel_block_bytes(kColumns);
    // Unsigned activations are a + 128: the dot products start from -128 x sum w.
    const typename Isa::Ints start =
        Isa::kUnsignedActivations ? Isa::load_ints(block + 32 * kColumns) : Isa::zero_ints();
    typename Isa::Ints dots[kRows];
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) dots[r] = start;
#pragma GCC unroll 8
    for (int g = 0; g < 8; ++g) {
      const typename Isa::Ints w = Isa::load_ints(block + g * 4 * kColumns);
#pragma GCC unroll 16
      for (int r = 0; r < kRows; ++r) {
        int32_t group;  // bytes 4 g to 4 g + 3 of the row's block
        std::memcpy(&group, values + r * values_stride + b * kQuantBlockSize + 4 * g, 4);
        dots[r] = Isa::dot_bytes(dots[r], Isa::broadcast_int32(group), w);
      }
    }
    const typename Isa::Vector column_scales =
        Isa::load(reinterpret_cast<const float*>(block + 36 * kColumns));
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const typename Isa::Vector scale =
          Isa::mul(Isa::broadcast(scales[r * scales_stride + b]), column_scales);
      sums[r] = Isa::fmadd(Isa::to_floats(dots[r]), scale, sums[r]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    float* out = c + r * c_stride;
    Isa::store(out, Isa::add(Isa::load(out), sums[r]));
  }
}

// multiply_int8_tile_rows for any 1 <= rows <= kTileRows, each count its own instantiation.
template <class Isa, int kTileRows>
void multiply_int8_tile(float* c, long c_stride, const int8_t* values, long values_stride,
                        const float* scales, long scales_stride, const std::byte* panel,
                        int n_blocks, int rows) {
  [&]<int... kRows>(std::integer_sequence<int, kRows...>) {
    ((rows == kRows + 1
          ? multiply_int8_tile_rows<Isa, kRows + 1>(c, c_stride, values, values_stride, scales,
                                                    scales_stride, panel, n_blocks)
          : void()),
     ...);
  }
  (std::make_integer_sequence<int, kTileRows>());
}

// Int8GemmKernels::peak_loop: 10 chains of acc = dot_bytes(acc, a, w), as the micro-kernel's
// rows are, the results kept through `sink`. The empty asm tells the compiler that `a` may change
// at every round, so that it cannot compute the products once, outside the loop (AVX2's dot_bytes
// is four instructions of which only the last depends on acc; a chain through all four would
// time their latency, not their throughput).
template <class Isa>
double int8_peak_loop(long iterations) {
  constexpr int kChains = 10;
  typename Isa::Ints chains[kChains];
  for (int i = 0; i < kChains; ++i) chains[i] = Isa::broadcast_int32(i);
  typename Isa::Ints a = Isa::broadcast_int32(0x01020304);
  const typename Isa::Ints w = Isa::broadcast_int32(0x7F81FF01);
  for (long n = 0; n < iterations; ++n) {
    asm volatile("" : "+v"(a));
#pragma GCC unroll 10
    for (int i = 0; i < kChains; ++i) chains[i] = Isa::dot_bytes(chains[i], a, w);
  }
  volatile float sink = 0;
  for (int i = 0; i < kChains; ++i) sink = sink + Isa::sum(Isa::to_floats(chains[i]));
  return 2.0 * 4 * kChains * Isa::kLanes * double(iterations);
}

template <class Isa, int kTileRows>
constexpr Int8GemmKernels int8_gemm_kernels_of(const char* name) {
  return {.tile_rows = kTileRows,
          .tile_columns = Isa::kLanes,
          .unsigned_activations = Isa::kUnsignedActivations,
          .quantize_rows = quantize_rows<Isa>,
          .pack_panel = pack_panel<Isa>,
          .multiply_tile = multiply_int8_tile<Isa, kTileRows>,
          .peak_loop = int8_peak_loop<Isa>,
          .name = name};
}

}  // namespace attn::simd
