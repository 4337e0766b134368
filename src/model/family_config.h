#pragma once

// Reading config.json for the family files: the limits every size is checked against, and the
// settings several families share (activation names, attention heads, RoPE and its scaling).

#include <cstdint>
#include <initializer_list>
#include <utility>

#include "src/io/json_util.h"
#include "src/model/transformer.h"

namespace attn {

// Limits on the sizes config.json gives, far above every real checkpoint (the widest have
// d_model 25600 and d_ff 4 times that, vocabularies of 262k, contexts of 10M) and low enough
// that every size computed from them fits the ints of ArchSpec: 3 x d_model and 4 x d_model
// (GPT-2's default d_ff) included.
constexpr int kMaxModelWidth = 1 << 20;  // d_model
constexpr int kMaxFfWidth = 1 << 22;     // d_ff
constexpr int kMaxVocabSize = 1 << 24;
constexpr int kMaxPositions = 1 << 24;
constexpr int kMaxLayers = 1 << 12;
constexpr int kMaxTokenTypes = 1 << 12;
constexpr int kMaxHeads = 1 << 14;
// Products of sizes (elements of the token embedding, of the KV cache for the full context) are
// computed in 64 bits and must stay within this: 2^40 floats is 4 TB.
constexpr int64_t kMaxElements = int64_t{1} << 40;
// LayerNorm epsilon: BERT uses 1e-12, GPT-2 1e-5, T5 and Llama 1e-6. Anything outside this range
// is a broken file (1e300 would make every norm output 0; 1e-300 is 0 in float).
constexpr double kMinNormEpsilon = 1e-30;
constexpr double kMaxNormEpsilon = 0.1;

// A size that is the product of config.json fields, each given with its name, must stay within
// kMaxElements: "config.json: n_layer x n_positions x n_embd = ... (the KV cache for the full
// context) is more than attn's limit of ... elements". Computed in 64 bits, before anything is
// allocated from it.
void check_size_product(const JsonFile& config,
                        std::initializer_list<std::pair<const char*, int>> factors,
                        const char* what);

// The checks every family makes once spec is filled in: the embedding and the full-context KV
// cache within kMaxElements (named by the family's own keys).
void check_model_sizes(const JsonFile& config, const ArchSpec& spec, const char* vocab_key,
                       const char* width_key, const char* layers_key, const char* positions_key);

// The sizes under the names most Hugging Face configs use: num_hidden_layers, hidden_size,
// num_attention_heads (with num_key_value_heads and head_dim, as read_attention_heads),
// intermediate_size, vocab_size and max_position_embeddings (`default_positions` when absent,
// required when that is 0), checked as check_model_sizes does.
void read_common_sizes(const JsonFile& config, ArchSpec& spec, int default_positions);

// An activation by its Hugging Face name (config field `key`, `default_name` when absent):
// gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, silu, swish, relu.
Activation read_activation(const JsonFile& config, const char* key, const char* default_name);

// The encoders' position_embedding_type: "absolute" (or absent) is the only one attn implements.
void require_absolute_positions(const JsonFile& config);

// A norm epsilon within [kMinNormEpsilon, kMaxNormEpsilon].
float read_norm_eps(const JsonFile& config, const char* key, float default_value);

// spec.n_head from `heads_key`, spec.n_kv_head from `kv_heads_key` (n_head when absent or
// null), spec.head_dim from "head_dim" when given, else d_model / n_head (which must divide).
void read_attention_heads(const JsonFile& config, ArchSpec& spec, const char* heads_key,
                          const char* kv_heads_key);

// RoPE over `fraction` of each head (read from fraction_key, e.g. rotary_pct or
// partial_rotary_factor; 1 when the family has none), with base `theta` and config.json's
// rope_scaling (null, or type linear, dynamic or llama3). The rotated dimension must be even.
RotaryEmbedding read_rotary(const JsonFile& config, const ArchSpec& spec, const char* fraction_key,
                            float default_fraction, float theta);

}  // namespace attn
