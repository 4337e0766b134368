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

std::vector<const GemmKernels*> runnable_gemm_kernels() {
  std::vector<const GemmKernels*> kernels = {&scalar_gemm_kernels()};
#if ATTN_KERNELS_X86
  if (cpu_features().avx2) kernels.push_back(&avx2_gemm_kernels());
  // avx512_bf16 is avx512's kernels with bf16 products for bf16 weights: one or the other.
  if (cpu_features().avx512) {
    kernels.push_back(cpu_features().avx512_bf16 ? &avx512_bf16_gemm_kernels()
                                                 : &avx512_gemm_kernels());
  }
#endif
  return kernels;
}

const GemmKernels& gemm_kernels() {
  static const GemmKernels& widest = *runnable_gemm_kernels().back();
  return widest;
}

}  // namespace attn
