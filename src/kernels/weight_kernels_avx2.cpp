// The AVX2 kernels of src/kernels/weight_kernels.h and the GEMM micro-kernel of
// src/kernels/gemm.h: 8 floats per register, F16C for the conversion of f16, FMA, and byte
// multiply-adds for q8_0 and q4_0 (one row, and the int8 GEMM of gemm_int8.h). Compiled with -mavx2
// -mfma -mf16c and without AVX-512 on every x86-64 build, so that its tests run on an AVX-512
// machine too (CMakeLists.txt).

#include <immintrin.h>

#include "src/kernels/avx2_floats.h"
#include "src/kernels/gemm_int8_simd.h"
#include "src/kernels/gemm_simd.h"
#include "src/kernels/weight_kernels_simd.h"

namespace attn {

namespace {

struct Avx2 : Avx2Floats {
  template <WeightType kType>
  static Vector load_weights(const WeightElement<kType>* p) {
    if constexpr (kType == WeightType::kF32) {
      return _mm256_loadu_ps(p);
    } else {
      const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      if constexpr (kType == WeightType::kF16) {
        return _mm256_cvtph_ps(bits);
      } else {  // a bfloat16 is the top half of a float
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
      }
    }
  }

  // maddubs multiplies the bytes and adds neighbours into int16: at most 2 x 128 x 127 = 32512
  // for u <= 128, so its saturation never comes into play; madd by ones adds neighbours again.
  static __m256i sum_u8_s8(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
  }

  // The int8 GEMM (gemm_int8_simd.h), 8 columns per panel. Without VNNI, the products go
  // through maddubs, whose int16 pairs would saturate for unsigned bytes up to 255 (a + 128), so
  // the activations stay signed and the sign trick of the one-row kernels applies: |w| times a
  // with w's sign moved onto it, at most 128 x 127 per product.
  using Ints = __m256i;
  static constexpr bool kUnsignedActivations = false;
  static Ints zero_ints() { return _mm256_setzero_si256(); }
  static Ints load_ints(const void* p) { return _mm256_loadu_si256(static_cast<const Ints*>(p)); }
  static Ints broadcast_int32(int32_t value) { return _mm256_set1_epi32(value); }
  static Vector to_floats(Ints v) { return _mm256_cvtepi32_ps(v); }
  static Ints dot_bytes(Ints acc, Ints a, Ints w) {
    return _mm256_add_epi32(acc, sum_u8_s8(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w)));
  }
};

}  // namespace

const WeightKernels& avx2_weight_kernels(WeightType type) { return simd::kTable<Avx2>[int(type)]; }

// 6 rows of 16 columns: 12 sums, 2 rows of B and a broadcast in 15 of the 16 registers.
const GemmKernels& avx2_gemm_kernels() {
  static constexpr GemmKernels kernels = simd::gemm_kernels_of<Avx2, 6>("avx2");
  return kernels;
}

// 4 rows of 8 columns: 4 integer and 4 float sums, a group of the panel, its magnitudes and the
// rows' broadcast bytes in the 16 registers.
const Int8GemmKernels& avx2_int8_gemm_kernels() {
  static constexpr Int8GemmKernels kernels = simd::int8_gemm_kernels_of<Avx2, 4>("avx2");
  return kernels;
}

}  // namespace attn
