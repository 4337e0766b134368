#pragma once

#include <immintrin.h>

#include <cstdint>
#include <utility>

#include "src/kernels/gemm.h"

// The vector micro-kernel of src/kernels/gemm.h, written once for any register width (the Isa of
// weight_kernels_simd.h, plus add(a, b)). Included only by weight_kernels_avx2.cpp and
// weight_kernels_avx512.cpp, so that each instantiation stays in the translation unit compiled
// for its instruction set.

namespace attn::simd {

// Two registers of each row of C: a panel is 2 kLanes columns wide.
constexpr int kTileVectors = 2;

// c (kRows, 2 kLanes) += a (kRows, depth) . panel (depth, 2 kLanes). The kRows x 2 sums stay
// in registers for the whole depth: per step of k, two loads of B and kRows broadcasts of A feed
// 2 kRows multiply-adds.
template <class Isa, int kRows>
void multiply_tile_rows(float* c, long c_stride, const float* a, long a_stride, const float* panel,
                        int depth) {
  constexpr int kColumns = kTileVectors * Isa::kLanes;
  typename Isa::Vector sums[kRows][kTileVectors];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    for (int v = 0; v < kTileVectors; ++v) sums[r][v] = Isa::zero();
  }
#pragma GCC unroll 4
  for (int k = 0; k < depth; ++k) {
    const typename Isa::Vector b0 = Isa::load(panel + long(k) * kColumns);
    const typename Isa::Vector b1 = Isa::load(panel + long(k) * kColumns + Isa::kLanes);
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const typename Isa::Vector a_rk = Isa::broadcast(a[r * a_stride + k]);
      sums[r][0] = Isa::fmadd(a_rk, b0, sums[r][0]);
      sums[r][1] = Isa::fmadd(a_rk, b1, sums[r][1]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    for (int v = 0; v < kTileVectors; ++v) {
      float* out = c + r * c_stride + v * Isa::kLanes;
      Isa::store(out, Isa::add(Isa::load(out), sums[r][v]));
    }
  }
}

// The transpose of an 8 x 8 block: out row i (8 floats, out_stride apart) = column i of in
// (rows in_stride apart), in AVX's three rounds of shuffles. (A template of the Isa only so that
// each instruction set's translation unit keeps its own copy.)
template <class Isa>
void transpose_8x8(float* out, long out_stride, const float* in, long in_stride) {
  __m256 rows[8], pairs[8], quads[8];
  for (int r = 0; r < 8; ++r) rows[r] = _mm256_loadu_ps(in + r * in_stride);
  for (int r = 0; r < 8; r += 2) {
    pairs[r] = _mm256_unpacklo_ps(rows[r], rows[r + 1]);
    pairs[r + 1] = _mm256_unpackhi_ps(rows[r], rows[r + 1]);
  }
  for (int r = 0; r < 8; r += 4) {
    for (int h = 0; h < 2; ++h) {
      quads[r + h] = _mm256_shuffle_ps(pairs[r + h], pairs[r + h + 2], _MM_SHUFFLE(1, 0, 1, 0));
      quads[r + h + 2] = _mm256_shuffle_ps(pairs[r + h], pairs[r + h + 2], _MM_SHUFFLE(3, 2, 3, 2));
    }
  }
  // quads[0..3] hold columns 0, 4 | 2, 6 | 1, 5 | 3, 7 of rows 0-3 in their two halves, and
  // quads[4..7] the same of rows 4-7.
  constexpr int kColumnOf[4] = {0, 2, 1, 3};
  for (int q = 0; q < 4; ++q) {
    const int column = kColumnOf[q];
    _mm256_storeu_ps(out + column * out_stride,
                     _mm256_permute2f128_ps(quads[q], quads[q + 4], 0x20));
    _mm256_storeu_ps(out + (column + 4) * out_stride,
                     _mm256_permute2f128_ps(quads[q], quads[q + 4], 0x31));
  }
}

// GemmKernels::pack_transposed: 8 x 8 blocks through registers, the edges one by one.
template <class Isa>
void pack_transposed(float* panel, const float* source, long source_stride, int depth, int width) {
  constexpr int kColumns = kTileVectors * Isa::kLanes;
  int j = 0;
  for (; j + 8 <= width; j += 8) {
    int k = 0;
    for (; k + 8 <= depth; k += 8) {
      // The source usually comes from DRAM, in runs too short (a block's depth) for the hardware
      // prefetcher: fetch the same columns of the next panel's rows meanwhile. (In bytes, as an
      // integer: those rows may lie past the end of the matrix, where a prefetch is harmless but
      // C++ pointer arithmetic would not be.)
      if (k % 16 == 0) {
        for (int r = 0; r < 8; ++r) {
          _mm_prefetch(reinterpret_cast<const char*>(
                           uintptr_t(source + j * source_stride + k) +
                           uintptr_t((kColumns + r) * source_stride * long(sizeof(float)))),
                       _MM_HINT_T0);
        }
      }
      transpose_8x8<Isa>(panel + long(k) * kColumns + j, kColumns, source + j * source_stride + k,
                         source_stride);
    }
    for (; k < depth; ++k) {
      for (int jj = j; jj < j + 8; ++jj)
        panel[long(k) * kColumns + jj] = source[jj * source_stride + k];
    }
  }
  for (int k = 0; k < depth; ++k) {
    float* panel_row = panel + long(k) * kColumns;
    for (int jj = j; jj < width; ++jj) panel_row[jj] = source[jj * source_stride + k];
    for (int jj = width; jj < kColumns; ++jj) panel_row[jj] = 0.0f;
  }
}

// multiply_tile_rows for any 1 <= rows <= kTileRows, each count its own instantiation.
template <class Isa, int kTileRows>
void multiply_tile(float* c, long c_stride, const float* a, long a_stride, const float* panel,
                   int depth, int rows) {
  [&]<int... kRows>(std::integer_sequence<int, kRows...>) {
    ((rows == kRows + 1 ? multiply_tile_rows<Isa, kRows + 1>(c, c_stride, a, a_stride, panel, depth)
                        : void()),
     ...);
  }
  (std::make_integer_sequence<int, kTileRows>());
}

// GemmKernels::peak_loop: 10 chains of a * m + c, whose results are kept (through `sink`) so
// that the compiler cannot drop the work.
template <class Isa>
double peak_loop(long iterations) {
  constexpr int kChains = 10;
  typename Isa::Vector chains[kChains];
  for (int i = 0; i < kChains; ++i) chains[i] = Isa::broadcast(0.001f * float(i));
  const typename Isa::Vector m = Isa::broadcast(0.9999f), c = Isa::broadcast(0.0001f);
  for (long n = 0; n < iterations; ++n) {
#pragma GCC unroll 10
    for (int i = 0; i < kChains; ++i) chains[i] = Isa::fmadd(chains[i], m, c);
  }
  volatile float sink = 0;
  for (int i = 0; i < kChains; ++i) sink = sink + Isa::sum(chains[i]);
  return 2.0 * kChains * Isa::kLanes * double(iterations);
}

template <class Isa, int kTileRows>
constexpr GemmKernels gemm_kernels_of(const char* name) {
  return {.tile_rows = kTileRows,
          .tile_columns = kTileVectors * Isa::kLanes,
          .multiply_tile = multiply_tile<Isa, kTileRows>,
          .pack_transposed = pack_transposed<Isa>,
          .peak_loop = peak_loop<Isa>,
          .name = name};
}

}  // namespace attn::simd
