#pragma once

#include <cstddef>
#include <optional>
#include <span>

#include "src/kernels/weight_type.h"

// Numerical building blocks of the transformer: each works on row-major float buffers whose
// shapes are given in the comments. Matrix products over many rows go through attn's GEMM
// (src/kernels/gemm.h); one row through the kernels of src/kernels/weight_kernels.h.

namespace attn {

// A linear map y = x W^T + b over weights that stay where the loader found them (usually the
// memory-mapped file), in their own element type (src/kernels/weight_type.h). Hugging Face
// stores nn.Linear weights as [out, in] and GPT-2's Conv1D as [in, out]; `in_out_layout` says
// which. `row_stride` is the distance in elements between rows of the stored matrix, so that a
// column slice of a fused matrix (GPT-2's c_attn holds Q, K and V side by side) is used without
// a copy.
struct Linear {
  const void* weight = nullptr;  // [out, in] or, with in_out_layout, [in, out], of `type`
  const float* bias = nullptr;   // (out) or nullptr
  int in = 0;
  int out = 0;
  bool in_out_layout = false;
  int row_stride = 0;
  WeightType type = WeightType::kF32;
  // Whether products of several rows by these (bf16) weights may round the rows to bf16 too, for
  // vdpbf16ps (gemm.h): only where the user asked to compute in bf16 (--dtype bf16). A checkpoint
  // stored in bf16 is otherwise multiplied as Hugging Face does, bf16 weights by f32 activations.
  bool bf16_products = false;
  // The weights packed once, at load, as one set of micro-kernels reads them, or nullptr: f32
  // weights as gemm.h's f32 panels (pack_weight_panels), q8_0 and q4_0 weights as gemm_int8.h's
  // int8 panels (pack_int8_weight_panels). `packed_by` is the GemmKernels or Int8GemmKernels they
  // were packed for. Products of a packed Linear read only these, whatever their rows.
  const void* panels = nullptr;
  const void* packed_by = nullptr;

  // The address of the stored element `index` elements after the first (for a block type, the start
  // of a block).
  const void* element(long index) const {
    return static_cast<const std::byte*>(weight) + storage_bytes(type, index);
  }

  // Outputs [first, first + count) of this map, as a map of its own, without a copy.
  Linear output_slice(int first, int count) const {
    Linear slice = *this;
    slice.weight = element(in_out_layout ? first : long(first) * row_stride);
    if (bias) slice.bias = bias + first;
    slice.out = count;
    slice.panels = nullptr;  // a slice is packed on its own, if at all
    return slice;
  }
};

// LayerNorm: y = (x - mean) / sqrt(var + eps) * weight + bias (bias optional).
// RMSNorm (Llama, Qwen2): y = x / sqrt(mean(x^2) + eps) * weight.
// Identity: y = x, where a family has no norm that others have (ModernBERT's first attention,
// the sublayer outputs of all but Gemma), so that the forward pass needs no branch for it.
enum class NormKind { kLayerNorm, kRmsNorm, kIdentity };

struct Norm {
  const float* weight = nullptr;  // (d)
  const float* bias = nullptr;    // (d) or nullptr
  float eps = 1e-5f;
  NormKind kind = NormKind::kLayerNorm;
};

inline Norm identity_norm() {
  Norm norm;
  norm.kind = NormKind::kIdentity;
  return norm;
}

// kGeluTanh is Hugging Face's gelu_new / gelu_pytorch_tanh (and BLOOM's gelu); kGeluErf is the
// exact "gelu"; kSilu is x sigmoid(x) ("silu", "swish").
enum class Activation { kGeluTanh, kGeluErf, kSilu, kRelu };

// What the rows of a product are. kTokens: positions of one or more texts, multiplied together
// by the GEMM (a lone row by the one-row kernels). kSeparate: each row is the one new token of
// its own sequence (a decode step of several sequences, as beam search's beams): each is
// multiplied exactly as it would be alone, by the one-row kernels, so that a sequence's numbers
// do not depend on what shares its batch, and each weight is read from memory once for all rows
// (in chunks that stay in cache while every row passes over them).
enum class RowKind { kTokens, kSeparate };

// y (rows, out) = x (rows, in) . W + b, then activation(y) when one is given. Over many rows the
// activation is the GEMM's epilogue: each thread applies it to the block of columns it has just
// computed, while they are in its cache, instead of a pass over y afterwards.
void linear_forward(float* y, const float* x, int rows, const Linear& linear,
                    RowKind kind = RowKind::kTokens,
                    std::optional<Activation> activation = std::nullopt);

// One map's output: y (rows, linear->out), followed by `activation` if it has one.
struct LinearOutput {
  const Linear* linear;
  float* y;
  std::optional<Activation> activation = std::nullopt;
};

// Several maps of the same input x (rows, in), e.g. a layer's query, key and value: one row
// (a decode step), or separate rows, run as one parallel job for all of them, and slices of one
// fused matrix (GPT-2's c_attn) are read in one pass.
void linear_forward_shared_input(std::span<const LinearOutput> outputs, const float* x, int rows,
                                 RowKind kind = RowKind::kTokens);

// y (rows, d) = norm(x (rows, d)); y may equal x.
void norm_forward(float* y, const float* x, int rows, int d, const Norm& norm);

// x (n) = activation(x), in place, spread over the thread pool.
void activation_forward(float* x, long n, Activation activation);

// The same on the calling thread only (src/activation.cpp).
void activation_range(float* x, long n, Activation activation);

// Softmax of one row in place over its first n entries (n >= 1).
void softmax_row(float* x, int n);

// Both below take their exponentials from glibc's vectorized expf (libmvec): within 3 ulps of
// the correctly rounded value, 2.2e-7 relative (measured over [-87, 0] against exp in double).
//
// log(sum of exp(x[i])) over a row of logits (n >= 1): max + log(sum of exp(x[i] - max)), each
// exp in float (double's costs several times as much per vocabulary entry), the sum in double.
// A token's NLL is log_sum_exp - its logit.
double log_sum_exp(const float* x, int n);
// x[i] = exp(x[i] - shift) for finite x[i] (softmax_row's exponentials).
void exp_of_differences(float* x, int n, float shift);

// x (n) = cap tanh(x / cap): Gemma-2's soft-capping of attention scores and logits.
void soft_cap(float* x, long n, float cap);

// y (n) += x (n)
void add_in_place(float* y, const float* x, long n);

// y (n) *= x (n)
void multiply_in_place(float* y, const float* x, long n);

}  // namespace attn
