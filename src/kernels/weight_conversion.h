#pragma once

#include <cstdint>

#include "src/kernels/weight_type.h"

// Conversion of f32 values into the storage of a weight type, done once at load when the user
// asks for a precision other than the file's (--dtype): rounding to nearest-even for f16 and
// bf16, and ggml's q8_0 quantization (scale = max |x| / 127 per block of 32, values rounded to
// nearest) for q8.

namespace attn {

// The nearest binary16 (ties to even; overflow to infinity; NaN stays NaN).
uint16_t float_to_f16(float value);

// The nearest bfloat16 (ties to even; NaN stays NaN).
uint16_t float_to_bf16(float value);

// ggml's q8_0 quantization of one block of x (kQ8BlockSize values): values[k] =
// round(x[k] * (1 / scale)), half away from zero, in [-127, 127], and returns scale = max |x| / 127
// (as an f32: the weights keep it as binary16, the kernels' activations as it is). A block with
// a NaN or an infinity returns scale NaN with values 0, so that every product through it is
// NaN; a block whose scale is below the smallest normal float gets values 0 (ggml's reciprocal
// of such a scale overflows; the block is 0 either way).
float quantize_q8_block(const float* x, int8_t* values);

// out = the n values x in `type`'s storage (storage_bytes(type, n) bytes); for kQ8_0, n is a
// multiple of kQ8BlockSize.
void convert_row(WeightType type, const float* x, void* out, long n);

}  // namespace attn
