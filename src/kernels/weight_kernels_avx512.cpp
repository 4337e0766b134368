// The AVX-512 kernels of src/kernels/weight_kernels.h and the GEMM micro-kernel of
// src/kernels/gemm.h: 16 floats per register; q8_0 and q4_0 256 bits wide, with VNNI's byte dot
// products, and the int8 GEMM of gemm_int8.h. Compiled with AVX-512 F, BW, DQ, VL and VNNI enabled
// (CMakeLists.txt) on every x86-64 build, and used only on a CPU that has them all
// (cpu_features.h).

// GCC 12's AVX-512 intrinsics start from a deliberately undefined register (_mm512_cvtph_ps,
// _mm512_reduce_add_ps, ...), which its -Wmaybe-uninitialized flags once they are inlined
// (GCC bug 105593), as does its -Wuninitialized where a result feeds a volatile; -Werror would
// make either an error.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>

#include "src/kernels/gemm_int8_simd.h"
#include "src/kernels/gemm_simd.h"
#include "src/kernels/weight_kernels_simd.h"

namespace attn {

namespace {

struct Avx512 {
  using Vector = __m512;
  static constexpr int kLanes = 16;

  static Vector zero() { return _mm512_setzero_ps(); }
  static Vector broadcast(float value) { return _mm512_set1_ps(value); }
  static Vector load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Vector v) { _mm512_storeu_ps(p, v); }
  static Vector add(Vector a, Vector b) { return _mm512_add_ps(a, b); }
  static Vector mul(Vector a, Vector b) { return _mm512_mul_ps(a, b); }
  static Vector fmadd(Vector a, Vector b, Vector c) { return _mm512_fmadd_ps(a, b, c); }
  static float sum(Vector v) { return _mm512_reduce_add_ps(v); }
  static float sum(__m256 v) { return _mm512_reduce_add_ps(_mm512_zextps256_ps512(v)); }

  template <WeightType kType>
  static Vector load_weights(const WeightElement<kType>* p) {
    if constexpr (kType == WeightType::kF32) {
      return _mm512_loadu_ps(p);
    } else {
      const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      if constexpr (kType == WeightType::kF16) {
        return _mm512_cvtph_ps(bits);
      } else {  // a bfloat16 is the top half of a float
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
      }
    }
  }

  // One instruction: the 4 neighbouring products added into each int32 lane, without
  // saturation.
  static __m256i sum_u8_s8(__m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
  }

  // The int8 GEMM (gemm_int8_simd.h), 16 columns per panel: vpdpbusd multiplies unsigned by
  // signed bytes, so the activations are stored + 128.
  using Ints = __m512i;
  static constexpr bool kUnsignedActivations = true;
  static Ints zero_ints() { return _mm512_setzero_si512(); }
  static Ints load_ints(const void* p) { return _mm512_loadu_si512(p); }
  static Ints broadcast_int32(int32_t value) { return _mm512_set1_epi32(value); }
  static Vector to_floats(Ints v) { return _mm512_cvtepi32_ps(v); }
  static Ints dot_bytes(Ints acc, Ints a, Ints w) { return _mm512_dpbusd_epi32(acc, a, w); }
};

}  // namespace

const WeightKernels& avx512_weight_kernels(WeightType type) {
  return simd::kTable<Avx512>[int(type)];
}

// 12 rows of 32 columns: 24 sums, 2 rows of B and a broadcast in 27 of the 32 registers.
const GemmKernels& avx512_gemm_kernels() {
  static constexpr GemmKernels kernels = simd::gemm_kernels_of<Avx512, 12>("avx512");
  return kernels;
}

// 12 rows of 16 columns: 12 integer and 12 float sums, a group of the panel and the column scales
// in 26 of the 32 registers.
const Int8GemmKernels& avx512_int8_gemm_kernels() {
  static constexpr Int8GemmKernels kernels = simd::int8_gemm_kernels_of<Avx512, 12>("avx512");
  return kernels;
}

}  // namespace attn
