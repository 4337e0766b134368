// The bf16 kernels of src/kernels/gemm.h (Bf16GemmKernels): products by bf16 weights with
// AVX512_BF16's vdpbf16ps, which adds two products of bf16 pairs into each of 16 f32 lanes per
// instruction, twice the multiply-adds of an f32 FMA. Compiled with AVX-512 F, BW, DQ, VL and
// BF16 enabled (CMakeLists.txt) on every x86-64 build, and used only on a CPU that has them all
// (cpu_features().avx512_bf16).
//
// Both instructions used here ignore MXCSR: vcvtne2ps2bf16 and vdpbf16ps always round to nearest
// even, read denormal inputs as zero and flush denormal results to zero, and raise no
// exceptions. So an activation or a bf16 weight below 2^-126 in magnitude counts as 0, as does a
// partial sum that falls below it; the f32 path would keep them. Such values are far below
// anything that changes a transformer's output.

// GCC 12's AVX-512 intrinsics start from a deliberately undefined register, which its
// -Wmaybe-uninitialized flags once they are inlined (GCC bug 105593), as does its
// -Wuninitialized where a result feeds a volatile (see weight_kernels_avx512.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>

#include <cstdint>
#include <utility>

#include "src/kernels/gemm.h"

namespace attn {

namespace {

// Columns of a panel: two registers of 16 f32 sums per row of C.
constexpr int kColumns = 32;
// Rows of A per tile: 12 x 2 sums, 2 vectors of B and a broadcast pair of A in 27 of the 32
// registers.
constexpr int kTileRows = 12;

// The first n of 16 lanes (none for n <= 0, all for n >= 16).
__mmask16 first_lanes16(int n) {
  return _cvtu32_mask16(n <= 0 ? 0u : n >= 16 ? 0xFFFFu : (1u << n) - 1);
}

// The first n of 32 lanes (none for n <= 0, all for n >= 32).
__mmask32 first_lanes32(int n) {
  return _cvtu32_mask32(n <= 0 ? 0u : n >= 32 ? 0xFFFFFFFFu : (1u << n) - 1);
}

// Bf16GemmKernels::round_rows: 32 floats per step, rounded by one vcvtne2ps2bf16 into 16 pairs;
// the loads past `depth` are masked off (zero), so an odd depth ends on a pair whose high half is
// 0.
void round_rows(uint32_t* pairs, long pair_stride, const float* a, long a_stride, int depth,
                int rows) {
  for (int r = 0; r < rows; ++r) {
    const float* row = a + r * a_stride;
    uint32_t* out = pairs + r * pair_stride;
    for (int k = 0; k < depth; k += 32) {
      const int n = depth - k;  // floats left in the row (more than 32 past this step)
      const __m512 low = _mm512_maskz_loadu_ps(first_lanes16(n), row + k);
      // Only a pointer into the row is formed: row + k + 16 lies past it when n <= 16.
      const __m512 high =
          n > 16 ? _mm512_maskz_loadu_ps(first_lanes16(n - 16), row + k + 16) : _mm512_setzero_ps();
      // Word i of the result is float i of (low, high): pair p holds floats 2p and 2p + 1.
      const __m512i rounded = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(high, low));
      _mm512_mask_storeu_epi32(out + k / 2, first_lanes16((n + 1) / 2), rounded);
    }
  }
}

// rows[i] = column i of the 16 x 16 matrix of 32-bit elements whose row i was rows[i]: unpacks
// of 32-bit then 64-bit elements leave each 128-bit lane holding a column of 4 rows, and two
// rounds of 128-bit lane shuffles gather the 4 lanes of each column.
void transpose_16x16(__m512i rows[16]) {
  __m512i pairs[16], quads[16];
  for (int r = 0; r < 16; r += 2) {
    pairs[r] = _mm512_unpacklo_epi32(rows[r], rows[r + 1]);
    pairs[r + 1] = _mm512_unpackhi_epi32(rows[r], rows[r + 1]);
  }
  // quads[4g + c], lane L: column 4L + c of rows 4g .. 4g + 3.
  for (int g = 0; g < 16; g += 4) {
    quads[g] = _mm512_unpacklo_epi64(pairs[g], pairs[g + 2]);
    quads[g + 1] = _mm512_unpackhi_epi64(pairs[g], pairs[g + 2]);
    quads[g + 2] = _mm512_unpacklo_epi64(pairs[g + 1], pairs[g + 3]);
    quads[g + 3] = _mm512_unpackhi_epi64(pairs[g + 1], pairs[g + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    // Lanes 0, 1 (low) or 2, 3 (high) of rows 0-3 and 4-7, and of rows 8-11 and 12-15.
    const __m512i top_low = _mm512_shuffle_i32x4(quads[c], quads[4 + c], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i top_high = _mm512_shuffle_i32x4(quads[c], quads[4 + c], _MM_SHUFFLE(3, 2, 3, 2));
    const __m512i bottom_low =
        _mm512_shuffle_i32x4(quads[8 + c], quads[12 + c], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i bottom_high =
        _mm512_shuffle_i32x4(quads[8 + c], quads[12 + c], _MM_SHUFFLE(3, 2, 3, 2));
    rows[c] = _mm512_shuffle_i32x4(top_low, bottom_low, _MM_SHUFFLE(2, 0, 2, 0));
    rows[4 + c] = _mm512_shuffle_i32x4(top_low, bottom_low, _MM_SHUFFLE(3, 1, 3, 1));
    rows[8 + c] = _mm512_shuffle_i32x4(top_high, bottom_high, _MM_SHUFFLE(2, 0, 2, 0));
    rows[12 + c] = _mm512_shuffle_i32x4(top_high, bottom_high, _MM_SHUFFLE(3, 1, 3, 1));
  }
}

// Bf16GemmKernels::pack_transposed: in a stored row (a column of B), the elements k and k + 1 of
// a pair lie side by side already, so the panel is the transpose of the stored rows seen as
// 32-bit pairs, done 16 columns by 16 pairs at a time. Loads past `depth` or `width` are masked
// off, which leaves the zeros of the padding.
void pack_transposed(uint32_t* panel, const uint16_t* source, long source_stride, int depth,
                     int width) {
  const int pairs = (depth + 1) / 2;
  for (int j0 = 0; j0 < kColumns; j0 += 16) {
    for (int p0 = 0; p0 < pairs; p0 += 16) {
      const __mmask32 elements = first_lanes32(depth - 2 * p0);
      __m512i block[16];  // 16 columns' 32 elements (16 pairs) each, then 16 pairs' 16 columns
      for (int i = 0; i < 16; ++i) {
        const int j = j0 + i;
        block[i] = j < width
                       ? _mm512_maskz_loadu_epi16(elements, source + j * source_stride + 2 * p0)
                       : _mm512_setzero_si512();
      }
      transpose_16x16(block);
      const int count = pairs - p0 < 16 ? pairs - p0 : 16;
      for (int q = 0; q < count; ++q) {
        _mm512_storeu_si512(panel + long(p0 + q) * kColumns + j0, block[q]);
      }
    }
  }
}

// Word indices into (row k, row k + 1) of 32 words each that interleave their first 16
// columns (kInterleaveLow) and their last 16 (kInterleaveHigh): k's word, then k + 1's.
constexpr uint16_t kInterleaveLow[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                         37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                         11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
constexpr uint16_t kInterleaveHigh[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21,
                                          53, 22, 54, 23, 55, 24, 56, 25, 57, 26, 58,
                                          27, 59, 28, 60, 29, 61, 30, 62, 31, 63};

// Bf16GemmKernels::pack_interleaved: stored rows k and k + 1 (rows of B) hold a panel's 32
// columns each; one word permutation per half interleaves them. Loads past `width` are masked
// off, and past an odd depth the row k + 1 is zero.
void pack_interleaved(uint32_t* panel, const uint16_t* source, long source_stride, int depth,
                      int width) {
  const __m512i low = _mm512_loadu_si512(kInterleaveLow);
  const __m512i high = _mm512_loadu_si512(kInterleaveHigh);
  const __mmask32 columns = first_lanes32(width);
  for (int k = 0; k < depth; k += 2) {
    const __m512i even = _mm512_maskz_loadu_epi16(columns, source + k * source_stride);
    const __m512i odd = k + 1 < depth
                            ? _mm512_maskz_loadu_epi16(columns, source + (k + 1) * source_stride)
                            : _mm512_setzero_si512();
    uint32_t* panel_row = panel + long(k / 2) * kColumns;
    _mm512_storeu_si512(panel_row, _mm512_permutex2var_epi16(even, low, odd));
    _mm512_storeu_si512(panel_row + 16, _mm512_permutex2var_epi16(even, high, odd));
  }
}

// c (kRows, 32) += a (kRows, pairs) . panel (pairs, 32), all in pairs of bf16. The kRows x 2 sums
// stay in registers for the whole depth: per pair, two loads of B and kRows broadcasts of A feed
// 2 kRows vdpbf16ps, each 16 columns x 2 products.
template <int kRows>
void multiply_tile_rows(float* c, long c_stride, const uint32_t* a, long a_stride,
                        const uint32_t* panel, int pairs) {
  __m512 sums[kRows][2];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) sums[r][0] = sums[r][1] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int p = 0; p < pairs; ++p) {
    const __m512bh b0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(panel + long(p) * kColumns));
    const __m512bh b1 =
        reinterpret_cast<__m512bh>(_mm512_loadu_si512(panel + long(p) * kColumns + 16));
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const __m512bh a_rp = reinterpret_cast<__m512bh>(_mm512_set1_epi32(int(a[r * a_stride + p])));
      sums[r][0] = _mm512_dpbf16_ps(sums[r][0], a_rp, b0);
      sums[r][1] = _mm512_dpbf16_ps(sums[r][1], a_rp, b1);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    for (int v = 0; v < 2; ++v) {
      float* out = c + r * c_stride + v * 16;
      _mm512_storeu_ps(out, _mm512_add_ps(_mm512_loadu_ps(out), sums[r][v]));
    }
  }
}

// multiply_tile_rows for any 1 <= rows <= kTileRows, each count its own instantiation.
void multiply_tile(float* c, long c_stride, const uint32_t* a, long a_stride, const uint32_t* panel,
                   int pairs, int rows) {
  [&]<int... kRows>(std::integer_sequence<int, kRows...>) {
    ((rows == kRows + 1 ? multiply_tile_rows<kRows + 1>(c, c_stride, a, a_stride, panel, pairs)
                        : void()),
     ...);
  }
  (std::make_integer_sequence<int, kTileRows>());
}

// Bf16GemmKernels::peak_loop: 12 chains of vdpbf16ps (enough to hide its latency on two ports),
// whose results are kept (through `sink`) so that the compiler cannot drop the work. Each adds
// 0.001^2 twice per lane and step, far from overflow.
double peak_loop(long iterations) {
  constexpr int kChains = 12;
  __m512 chains[kChains];
  for (int i = 0; i < kChains; ++i) chains[i] = _mm512_set1_ps(0.001f * float(i));
  const __m512 small = _mm512_set1_ps(0.001f);
  const __m512bh a = _mm512_cvtne2ps_pbh(small, small), b = _mm512_cvtne2ps_pbh(small, small);
  for (long n = 0; n < iterations; ++n) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) chains[i] = _mm512_dpbf16_ps(chains[i], a, b);
  }
  volatile float sink = 0;
  for (int i = 0; i < kChains; ++i) sink = sink + _mm512_reduce_add_ps(chains[i]);
  // Per instruction, 16 lanes of 2 multiplies and 2 additions.
  return 4.0 * 16 * kChains * double(iterations);
}

constexpr Bf16GemmKernels kBf16Kernels = {.tile_rows = kTileRows,
                                          .tile_columns = kColumns,
                                          .round_rows = round_rows,
                                          .pack_transposed = pack_transposed,
                                          .pack_interleaved = pack_interleaved,
                                          .multiply_tile = multiply_tile,
                                          .peak_loop = peak_loop};

}  // namespace

// The AVX-512 f32 kernels, for every other weight type, and these for bf16 weights.
const GemmKernels& avx512_bf16_gemm_kernels() {
  static const GemmKernels kernels = [] {
    GemmKernels with_bf16 = avx512_gemm_kernels();
    with_bf16.bf16 = &kBf16Kernels;
    with_bf16.name = "avx512_bf16";
    return with_bf16;
  }();
  return kernels;
}

}  // namespace attn
