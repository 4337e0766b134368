#include "src/kernels/weight_kernels.h"

#include "src/kernels/cpu_features.h"
#include "src/kernels/gemm.h"

namespace attn {

// The widest instruction set the CPU has (see weight_kernels.h).
const WeightKernels& weight_kernels(WeightType type) {
#if ATTN_KERNELS_X86
  if (cpu_features().avx512) return avx512_weight_kernels(type);
  if (cpu_features().avx2) return avx2_weight_kernels(type);
#endif
  return scalar_weight_kernels(type);
}

const GemmKernels& gemm_kernels() {
#if ATTN_KERNELS_X86
  if (cpu_features().avx512) return avx512_gemm_kernels();
  if (cpu_features().avx2) return avx2_gemm_kernels();
#endif
  return scalar_gemm_kernels();
}

}  // namespace attn
