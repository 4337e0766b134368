// The AVX-VNNI kernels of the int8 GEMM (src/kernels/gemm_int8.h): 256-bit vpdpbusd
// (_mm256_dpbusd_avx_epi32, the VEX encoding of AVX-VNNI, which CPUs with AVX2 but without
// AVX-512 have, and AMD's Zen 5 too), 8 columns per panel. Compiled with -mavx2 -mfma -mf16c
// -mavxvnni and without AVX-512 on every x86-64 build (CMakeLists.txt), and used only on a CPU
// that has AVX-VNNI (cpu_features.h).

#include <immintrin.h>

#include "src/kernels/avx2_floats.h"
#include "src/kernels/gemm_int8_simd.h"

namespace attn {

namespace {

struct AvxVnni : Avx2Floats {
  // The 32 products u[k] s[k], summed by fours into 8 int32 lanes.
  static __m256i sum_u8_s8(__m256i u, __m256i s) {
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, s);
  }

  // vpdpbusd multiplies unsigned by signed bytes, so the activations are stored + 128.
  using Ints = __m256i;
  static constexpr bool kUnsignedActivations = true;
  static Ints zero_ints() { return _mm256_setzero_si256(); }
  static Ints load_ints(const void* p) { return _mm256_loadu_si256(static_cast<const Ints*>(p)); }
  static Ints broadcast_int32(int32_t value) { return _mm256_set1_epi32(value); }
  static Vector to_floats(Ints v) { return _mm256_cvtepi32_ps(v); }
  static Ints dot_bytes(Ints acc, Ints a, Ints w) { return _mm256_dpbusd_avx_epi32(acc, a, w); }
};

}  // namespace

// 6 rows of 8 columns: 6 integer and 6 float sums, a group of the panel, a row's broadcast bytes
// and the column scales in 15 of the 16 registers.
const Int8GemmKernels& avxvnni_int8_gemm_kernels() {
  static constexpr Int8GemmKernels kernels = simd::int8_gemm_kernels_of<AvxVnni, 6>("avxvnni");
  return kernels;
}

}  // namespace attn
