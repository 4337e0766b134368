#include "src/kernels/weight_kernels.h"

namespace attn {

// The widest instruction set the build machine has (see weight_kernels.h).
const WeightKernels& weight_kernels(WeightType type) {
#if ATTN_KERNELS_AVX512
  return avx512_weight_kernels(type);
#elif ATTN_KERNELS_AVX2
  return avx2_weight_kernels(type);
#else
  return scalar_weight_kernels(type);
#endif
}

}  // namespace attn
