#include "src/kernels/cpu_features.h"

namespace attn {

namespace {

CpuFeatures read_cpu_features() {
  CpuFeatures features;
#if ATTN_KERNELS_X86
  // __builtin_cpu_supports also checks that the operating system saves the registers (XGETBV).
  __builtin_cpu_init();
  // Every CPU with AVX2 and FMA has F16C too (clang cannot ask for it by name).
  features.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  features.avx512 = features.avx2 && __builtin_cpu_supports("avx512f") &&
                    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
#endif
  return features;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = read_cpu_features();
  return features;
}

}  // namespace attn
