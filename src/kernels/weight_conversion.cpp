// Placeholder until the q8 branch lands (its version replaces this file).
#include "src/kernels/weight_conversion.h"

#include <immintrin.h>

#include <cmath>
#include <cstring>

namespace attn {

uint16_t float_to_f16(float value) { return _cvtss_sh(value, _MM_FROUND_TO_NEAREST_INT); }

uint16_t float_to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7FFFFFFF) > 0x7F800000) return uint16_t((bits >> 16) | 0x40);
  return uint16_t((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}

void convert_row(WeightType type, const float* x, void* out, long n) {
  switch (type) {
    case WeightType::kF32:
      std::memcpy(out, x, n * 4);
      return;
    case WeightType::kF16:
      for (long i = 0; i < n; ++i) static_cast<uint16_t*>(out)[i] = float_to_f16(x[i]);
      return;
    case WeightType::kBF16:
      for (long i = 0; i < n; ++i) static_cast<uint16_t*>(out)[i] = float_to_bf16(x[i]);
      return;
    case WeightType::kQ8_0:
      for (long b = 0; b < n / 32; ++b) {
        BlockQ8_0& block = static_cast<BlockQ8_0*>(out)[b];
        float amax = 0;
        for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
        const float d = amax / 127, id = d ? 1 / d : 0;
        block.scale = float_to_f16(d);
        for (int i = 0; i < 32; ++i) block.values[i] = int8_t(std::round(x[b * 32 + i] * id));
      }
      return;
  }
}

}  // namespace attn
