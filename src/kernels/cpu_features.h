#pragma once

// What the CPU attn runs on can do, read once at run time (CPUID, and whether the operating
// system saves the wider registers): attn is one binary for every x86-64 machine with AVX2, and
// uses AVX-512 only where it finds it.
//
// The environment variable ATTN_KERNELS=scalar|avx2|avx512 caps what attn uses at that
// instruction set (avx2 is AVX2 alone, as on a Zen 3, without AVX-VNNI), so that the tests and
// benchmarks can run each kernel set the CPU has; a set the CPU lacks is refused, never emulated.

namespace attn {

struct CpuFeatures {
  bool avx2 = false;      // AVX2 and FMA (and F16C, which comes with them): weight_kernels_avx2.cpp
  bool avx_vnni = false;  // AVX-VNNI: 256-bit byte dot products (vpdpbusd) without AVX-512
  bool avx512 = false;    // AVX-512 F, BW, DQ, VL and VNNI: weight_kernels_avx512.cpp
  bool avx512_bf16 = false;  // AVX512_BF16 (vdpbf16ps), on top of avx512
};

// The features attn uses: the CPU's, capped by ATTN_KERNELS.
const CpuFeatures& cpu_features();

// The CPU's own, whatever ATTN_KERNELS says.
const CpuFeatures& cpu_hardware_features();

// Applies a cap as ATTN_KERNELS does: "scalar", "avx2" or "avx512" (anything else, or a set the
// hardware lacks, throws with the value in the message).
CpuFeatures capped_features(const CpuFeatures& hardware, const char* cap);

}  // namespace attn
