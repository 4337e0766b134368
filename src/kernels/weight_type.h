#pragma once

#include <cstdint>
#include <type_traits>

#include "src/base/half_float.h"

// The element types a weight matrix can keep in memory, and the exact value of one element as
// a float. (The kernels in src/kernels/weight_kernels_*.cpp convert many at once with the
// CPU's own instructions; weight_value is their scalar counterpart, for tails and the
// fallback.)

namespace attn {

// kF16 is IEEE binary16; kBF16 is bfloat16, the top half of a binary32. kQ8_0 and kQ4_0 are
// ggml's q8_0 and q4_0, the block types: each run of 32 consecutive elements of a row is one
// BlockQ8_0 or BlockQ4_0.
enum class WeightType { kF32, kF16, kBF16, kQ8_0, kQ4_0 };

inline constexpr int kWeightTypeCount = 5;

inline constexpr bool is_block_type(WeightType type) {
  return type == WeightType::kQ8_0 || type == WeightType::kQ4_0;
}

// The elements of one block of either block type.
inline constexpr int kQuantBlockSize = 32;

// 32 weights w[k] = scale * values[k], symmetric int8 with one binary16 scale (34 bytes, as
// ggml stores q8_0, so that both read the same bytes per weight).
struct BlockQ8_0 {
  uint16_t scale;  // binary16
  int8_t values[kQuantBlockSize];
};
static_assert(sizeof(BlockQ8_0) == 34);

// 32 weights w[k] = scale * (q[k] - 8) with 4-bit q[k] in [0, 15] and one binary16 scale (18
// bytes, as ggml stores q4_0): q[k] is the low half of nibbles[k] for k < 16, the high half of
// nibbles[k - 16] for the rest.
struct BlockQ4_0 {
  uint16_t scale;  // binary16
  uint8_t nibbles[kQuantBlockSize / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

// Bytes that n consecutive elements of a row take; for the block types, n is a multiple of 32
// (a row whose length is not is never stored in them).
inline long storage_bytes(WeightType type, long n) {
  switch (type) {
    case WeightType::kF32:
      return 4 * n;
    case WeightType::kF16:
    case WeightType::kBF16:
      return 2 * n;
    case WeightType::kQ8_0:
      return n / kQuantBlockSize * long(sizeof(BlockQ8_0));
    case WeightType::kQ4_0:
      return n / kQuantBlockSize * long(sizeof(BlockQ4_0));
  }
  return 0;
}

inline const char* weight_type_name(WeightType type) {
  switch (type) {
    case WeightType::kF32:
      return "f32";
    case WeightType::kF16:
      return "f16";
    case WeightType::kBF16:
      return "bf16";
    case WeightType::kQ8_0:
      return "q8_0";
    case WeightType::kQ4_0:
      return "q4_0";
  }
  return "?";
}

// How one element of each element-wise type is stored: a float for kF32, the raw 16 bits for
// kF16 and kBF16.
template <WeightType kType>
using WeightElement = std::conditional_t<kType == WeightType::kF32, float, uint16_t>;

template <WeightType kType>
float weight_value(WeightElement<kType> element) {
  if constexpr (kType == WeightType::kF32) {
    return element;
  } else if constexpr (kType == WeightType::kF16) {
    return f16_to_float(element);
  } else {
    return bf16_to_float(element);
  }
}

}  // namespace attn
