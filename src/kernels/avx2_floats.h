#pragma once

#include <immintrin.h>

// The 256-bit float operations of an Isa (weight_kernels_simd.h, gemm_simd.h,
// gemm_int8_simd.h), shared by the two translation units whose instruction sets have 256-bit
// registers and no AVX-512: weight_kernels_avx2.cpp and gemm_int8_avxvnni.cpp. Included only by
// them, and in an unnamed namespace, so that each keeps its own copy compiled with its own flags.

namespace attn {

namespace {

struct Avx2Floats {
  using Vector = __m256;
  static constexpr int kLanes = 8;

  static Vector zero() { return _mm256_setzero_ps(); }
  static Vector broadcast(float value) { return _mm256_set1_ps(value); }
  static Vector load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Vector v) { _mm256_storeu_ps(p, v); }
  static Vector add(Vector a, Vector b) { return _mm256_add_ps(a, b); }
  static Vector mul(Vector a, Vector b) { return _mm256_mul_ps(a, b); }
  static Vector fmadd(Vector a, Vector b, Vector c) { return _mm256_fmadd_ps(a, b, c); }
  static float sum(Vector v) {
    const __m128 halves = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 pairs = _mm_add_ps(halves, _mm_movehl_ps(halves, halves));
    return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_movehdup_ps(pairs)));
  }
};

}  // namespace

}  // namespace attn
