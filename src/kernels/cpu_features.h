#pragma once

// What the CPU attn runs on can do, read once at run time (CPUID, and whether the operating
// system saves the wider registers): attn is one binary for every x86-64 machine with AVX2, and
// uses AVX-512 only where it finds it.

namespace attn {

struct CpuFeatures {
  bool avx2 = false;    // AVX2 and FMA (and F16C, which comes with them): weight_kernels_avx2.cpp
  bool avx512 = false;  // AVX-512 F, BW, DQ, VL and VNNI: weight_kernels_avx512.cpp
};

const CpuFeatures& cpu_features();

}  // namespace attn
