#pragma once

// How positions enter attention. Four schemes, each optional, all owned by the attention layer:
// a table added to the embeddings (learned: GPT-2, BERT; fixed sinusoids: Marian), a rotation of
// queries and keys by a position-dependent angle (RoPE: Llama, Qwen2, GPT-NeoX, Phi), a per-head
// linear penalty added to the scores (ALiBi: BLOOM), and a learned per-head score for buckets
// of relative offsets (T5).

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace attn {

// Rotary position embedding as Hugging Face computes it (the rotate-half layout): the first
// `dim` values of each head are split into halves (x1, x2) and rotated pair by pair,
// (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin), by angle position * inv_freq[i]; the remaining
// head_dim - dim values pass through unchanged (partial rotary: NeoX rotary_pct, Phi
// partial_rotary_factor).
struct RotaryEmbedding {
  enum class Scaling { kNone, kLinear, kDynamic, kLlama3, kLongRope };

  int dim = 0;  // rotated values per head: even, <= head_dim
  float theta = 10000.0f;
  Scaling scaling = Scaling::kNone;
  float factor = 1.0f;             // linear, dynamic, llama3
  int original_max_positions = 0;  // dynamic: where scaling starts; llama3: old context
  float low_freq_factor = 1.0f;    // llama3
  float high_freq_factor = 4.0f;   // llama3
  // longrope (Phi-3): frequencies divided by short_factor, or by long_factor in a pass whose
  // longest position is past original_max_positions; cos and sin multiplied by
  // attention_factor.
  std::vector<float> short_factor, long_factor;  // (dim / 2)
  float attention_factor = 1.0f;
  std::vector<float> inv_freq;       // (dim / 2), computed once by `init`
  std::vector<float> long_inv_freq;  // (dim / 2) longrope's long frequencies, else empty

  // Computes inv_freq from the fields above (once, at load).
  void init();

  // cos and sin (rows, dim / 2) of the angles for each position. With dynamic scaling the
  // frequencies depend on the longest position of the pass (as Hugging Face does per call):
  // unchanged up to original_max_positions, stretched past it.
  void angles(std::span<const int> positions, float* cos, float* sin) const;

  // Rotates the first `dim` values of each of n_heads heads (stride head_dim) of every row of
  // x (rows, row_stride), with the angles from `angles`.
  void rotate(float* x, int rows, long row_stride, int n_heads, int head_dim, const float* cos,
              const float* sin) const;
};

// The inverse frequencies theta^(-2i/dim), i < dim / 2, as float32 (as torch computes them).
std::vector<float> rotary_inverse_frequencies(int dim, double theta);

// ALiBi slopes for n_heads heads, exactly as BLOOM's build_alibi_tensor: a geometric series
// 2^(-8/n), 2^(-16/n), ... for the largest power of two n <= n_heads, then the odd powers of
// the series for 2n for the remaining heads. Head h adds slope[h] * key_position to its scores.
std::vector<float> alibi_slopes(int n_heads);

// Marian's fixed sinusoidal table (n_positions, dim), as MarianSinusoidalPositionalEmbedding
// builds it: angle(p, i) = p / 10000^(2i / dim) for i < dim / 2, computed in double; the first
// half of each row holds sin of the angles, the second half their cos (not interleaved as in
// the original paper). dim must be even.
std::vector<float> sinusoidal_position_table(int n_positions, int dim);

// T5's relative position bias: a learned score per head for each bucket of key - query offsets,
// added to the attention scores. Small offsets get a bucket each, larger ones logarithmically
// wider buckets up to max_distance, beyond which all share the last. Bidirectional buckets (the
// encoder) keep the sign apart, with half the buckets each; unidirectional ones (the decoder)
// map keys after the query to bucket 0. T5 computes it in the first layer and shares it.
struct RelativePositionBias {
  const float* table = nullptr;  // (num_buckets, n_head)
  int num_buckets = 32;
  int max_distance = 128;
  bool bidirectional = true;

  // The bucket of key position - query position, as Hugging Face's _relative_position_bucket
  // (its logarithm in float32).
  int bucket(int offset) const;
};

struct PositionScheme {
  // (table_offset + max_positions, embedding width), added to the embeddings: position p reads
  // row table_offset + p.
  const float* learned_table = nullptr;
  // RoBERTa and XLM-R count positions from padding_idx + 1, and give a padding token row
  // padding_idx without counting it (Hugging Face's create_position_ids_from_input_ids).
  int table_offset = 0;
  std::optional<int> padding_token;
  // RoPE tables that rotate queries and keys, each computed once; a layer names its own
  // (LayerSpec::rotary). Most models have one; Gemma-3 and ModernBERT a local and a global.
  std::vector<RotaryEmbedding> rotary;
  std::vector<float> alibi_slopes;  // (n_head) added score bias, or empty
  std::optional<RelativePositionBias> relative_bias = std::nullopt;
  bool sinusoidal = false;  // learned_table holds Marian's fixed sinusoids, not learned rows
};

}  // namespace attn
