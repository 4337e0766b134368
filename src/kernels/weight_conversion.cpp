// The load-time conversions of src/kernels/weight_conversion.h: plain scalar code, run once per
// weight when a model is loaded in a precision other than its file's.

#include "src/kernels/weight_conversion.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace attn {

uint16_t float_to_f16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = uint16_t((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) {
    // NaN: keep the top of the payload and set the quiet bit, so that it cannot become 0 (inf).
    return uint16_t(sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu));
  }
  // 65520 is halfway between the largest binary16, 65504 (odd mantissa), and 65536, which
  // binary16 would write as infinity: from there up (infinity included) the nearest-even is inf.
  if (magnitude >= 0x477FF000u) return uint16_t(sign | 0x7C00u);
  if (magnitude >= 0x38800000u) {
    // Normal binary16 (2^-14 and up): move the exponent bias from 127 to 15, then round the 23
    // mantissa bits to 10, ties to even. A carry out of the mantissa rightly bumps the exponent.
    const uint32_t rebiased = magnitude - (112u << 23);
    const uint32_t lowest_kept_bit = (rebiased >> 13) & 1u;
    return uint16_t(sign | ((rebiased + 0xFFFu + lowest_kept_bit) >> 13));
  }
  // Subnormal binary16 (or zero): the result counts units of 2^-24. The float is
  // significand * 2^(exponent - 150), with the implicit leading one, so it is significand >>
  // (126 - exponent) units; shift, then round the bits shifted out, ties to even. Floats below
  // 2^-25 (float subnormals included) round to zero.
  const int exponent = int(magnitude >> 23);
  const int shift = 126 - exponent;
  if (shift > 24) return sign;
  const uint32_t significand = (magnitude & 0x7FFFFFu) | 0x800000u;
  uint32_t units = significand >> shift;
  const uint32_t remainder = significand & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (remainder > half || (remainder == half && (units & 1u))) ++units;
  return uint16_t(sign | units);
}

uint16_t float_to_bf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    // NaN: set the quiet bit, so that truncating the payload cannot leave infinity.
    return uint16_t((bits >> 16) | 0x40u);
  }
  // Round the low 16 bits away, ties to even; a carry runs into the exponent, and past the
  // largest finite value into infinity, as it should.
  const uint32_t lowest_kept_bit = (bits >> 16) & 1u;
  return uint16_t((bits + 0x7FFFu + lowest_kept_bit) >> 16);
}

float quantize_q8_block(const float* x, int8_t* values) {
  float amax = 0;
  bool finite = true;
  for (int k = 0; k < kQuantBlockSize; ++k) {
    const float magnitude = std::abs(x[k]);
    amax = std::max(amax, magnitude);
    finite = finite && magnitude <= std::numeric_limits<float>::max();  // false for NaN too
  }
  if (!finite) {
    std::memset(values, 0, kQuantBlockSize);
    return std::numeric_limits<float>::quiet_NaN();
  }
  const float scale = amax / 127;
  // ggml takes 1/scale for any scale but 0; below the smallest normal float that reciprocal
  // overflows or is too coarse to keep x / scale within [-127, 127]. Such a block is zero in
  // any case (its scale is 0 as binary16, and it adds 0 to a product of activations).
  const float inverse_scale = scale >= std::numeric_limits<float>::min() ? 1 / scale : 0;
  // |x * inverse_scale| <= 127 (1 + 3 * 2^-24) after three roundings, so roundf never
  // reaches 128 and -128 never arises.
  for (int k = 0; k < kQuantBlockSize; ++k) values[k] = int8_t(std::round(x[k] * inverse_scale));
  return scale;
}

float quantize_q4_block(const float* x, uint8_t* nibbles) {
  float amax = 0, extreme = 0;
  bool finite = true;
  for (int k = 0; k < kQuantBlockSize; ++k) {
    const float magnitude = std::abs(x[k]);
    if (magnitude > amax) {
      amax = magnitude;
      extreme = x[k];
    }
    finite = finite && magnitude <= std::numeric_limits<float>::max();  // false for NaN too
  }
  constexpr int kHalf = kQuantBlockSize / 2;
  if (!finite) {
    std::memset(nibbles, 0x88, kHalf);
    return std::numeric_limits<float>::quiet_NaN();
  }
  const float scale = extreme / -8;
  // As in quantize_q8_block: ggml's 1 / scale overflows below the smallest normal float.
  const float inverse_scale = std::abs(scale) >= std::numeric_limits<float>::min() ? 1 / scale : 0;
  // x[k] * inverse_scale lies in [-8, 8] up to three roundings, so q + 8.5 is positive and the
  // conversion truncates it as ggml's (int8_t) cast does.
  const auto q = [&](float value) { return std::min(15, int(value * inverse_scale + 8.5f)); };
  for (int k = 0; k < kHalf; ++k) nibbles[k] = uint8_t(q(x[k]) | q(x[k + kHalf]) << 4);
  return scale;
}

void convert_row(WeightType type, const float* x, void* out, long n) {
  switch (type) {
    case WeightType::kF32:
      std::memcpy(out, x, sizeof(float) * std::size_t(n));
      return;
    case WeightType::kF16: {
      auto* halves = static_cast<uint16_t*>(out);
      for (long i = 0; i < n; ++i) halves[i] = float_to_f16(x[i]);
      return;
    }
    case WeightType::kBF16: {
      auto* halves = static_cast<uint16_t*>(out);
      for (long i = 0; i < n; ++i) halves[i] = float_to_bf16(x[i]);
      return;
    }
    case WeightType::kQ8_0: {
      auto* blocks = static_cast<BlockQ8_0*>(out);
      for (long b = 0; b < n / kQuantBlockSize; ++b) {
        blocks[b].scale =
            float_to_f16(quantize_q8_block(x + b * kQuantBlockSize, blocks[b].values));
      }
      return;
    }
    case WeightType::kQ4_0: {
      auto* blocks = static_cast<BlockQ4_0*>(out);
      for (long b = 0; b < n / kQuantBlockSize; ++b) {
        blocks[b].scale =
            float_to_f16(quantize_q4_block(x + b * kQuantBlockSize, blocks[b].nibbles));
      }
      return;
    }
  }
}

}  // namespace attn
