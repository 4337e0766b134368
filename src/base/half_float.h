#pragma once

#include <bit>
#include <cstdint>

// The exact value of a 16-bit float as a float: IEEE binary16 (F16) and bfloat16 (BF16, the
// top half of a binary32). Every value of either, subnormals, infinities and NaNs included, is
// exact as a float.

namespace attn {

inline float f16_to_float(uint16_t half) {
  const uint32_t sign = uint32_t(half & 0x8000u) << 16;
  uint32_t exponent = (half >> 10) & 0x1F;
  uint32_t mantissa = half & 0x3FF;
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  if (exponent != 0)
    return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0) return std::bit_cast<float>(sign);
  // A subnormal half is a normal float: shift the mantissa up to its leading one.
  exponent = 113;
  while (!(mantissa & 0x400)) {
    mantissa <<= 1;
    --exponent;
  }
  return std::bit_cast<float>(sign | (exponent << 23) | ((mantissa & 0x3FF) << 13));
}

inline float bf16_to_float(uint16_t value) { return std::bit_cast<float>(uint32_t(value) << 16); }

}  // namespace attn
