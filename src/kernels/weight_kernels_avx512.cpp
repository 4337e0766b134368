// The AVX-512 kernels of src/kernels/weight_kernels.h: 16 floats per register; q8_0 256 bits
// wide, with VNNI's byte dot products where the CPU has them. Compiled with the build's
// -march=native, and only when that includes AVX-512F (CMakeLists.txt).

// GCC 12's AVX-512 intrinsics start from a deliberately undefined register (_mm512_cvtph_ps,
// _mm512_reduce_add_ps, ...), which its -Wmaybe-uninitialized flags once they are inlined
// (GCC bug 105593); -Werror would make that an error.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

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

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  // One instruction: the 4 neighbouring products added into each int32 lane, without
  // saturation.
  static __m256i sum_u8_s8(__m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
  }
#else
  // Some AVX-512 CPUs lack VNNI: AVX2's two steps (weight_kernels_avx2.cpp), exact for u <= 128.
  static __m256i sum_u8_s8(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
  }
#endif
};

}  // namespace

const WeightKernels& avx512_weight_kernels(WeightType type) {
  return simd::kTable<Avx512>[int(type)];
}

}  // namespace attn
