#pragma once

#include <cstdint>

#include "src/kernels/weight_type.h"

// Conversion of f32 values into the storage of a weight type, done once at load when the user
// asks for a precision other than the file's (--dtype): rounding to nearest-even for f16 and
// bf16, and ggml's q8_0 quantization (scale = max |x| / 127 per block of 32, values rounded to
// nearest) for q8, and its q4_0 quantization (below) for q4.

namespace attn {

// The nearest binary16 (ties to even; overflow to infinity; NaN stays NaN).
uint16_t float_to_f16(float value);

// The nearest bfloat16 (ties to even; NaN stays NaN).
uint16_t float_to_bf16(float value);

// ggml's q8_0 quantization of one block of x (kQuantBlockSize values): values[k] =
// round(x[k] * (1 / scale)), half away from zero, in [-127, 127], and returns scale = max |x| / 127
// (as an f32: the weights keep it as binary16, the kernels' activations as it is). A block with
// a NaN or an infinity returns scale NaN with values 0, so that every product through it is
// NaN; a block whose scale is below the smallest normal float gets values 0 (ggml's reciprocal
// of such a scale overflows; the block is 0 either way).
float quantize_q8_block(const float* x, int8_t* values);

// ggml's q4_0 quantization of one block of x (kQuantBlockSize values), bit for bit as
// llama-quantize writes it: m is the x[k] of largest magnitude (the first, on a tie), scale =
// m / -8, and q[k] = min(15, trunc(x[k] / scale + 8.5)) (BlockQ4_0), so that m itself is -8
// and the other end of the range reaches 7 or 8 (clamped to 15 - 8 = 7). Returns the scale as
// an f32 (the weights keep it as binary16; ggml divides by the f32 too). A block with a NaN or an
// infinity returns scale NaN with q 8 (value 0), and one whose scale is below the smallest
// normal float gets q 8, as in quantize_q8_block.
float quantize_q4_block(const float* x, uint8_t* nibbles);

// out = the n values x in `type`'s storage (storage_bytes(type, n) bytes); for the block types,
// n is a multiple of kQuantBlockSize.
void convert_row(WeightType type, const float* x, void* out, long n);

}  // namespace attn
