#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "src/kernels/ops.h"

namespace attn {

enum class NormPlacement {
  kPre,   // GPT-2: x = x + f(norm(x))
  kPost,  // BERT:  x = norm(x + f(x))
};

// The architecture as data: everything that distinguishes one model family's forward pass from
// another's. Each architecture file (arch_*.cpp) fills this in from its config.json.
struct ArchSpec {
  NormPlacement norm_placement = NormPlacement::kPre;
  Activation activation = Activation::kGeluTanh;
  bool causal = true;  // decoder (each position sees only earlier ones) or bidirectional encoder
  int n_layer = 0;
  int d_model = 0;
  int n_head = 0;
  int d_ff = 0;
  int vocab_size = 0;
  int max_positions = 0;
  int n_token_types = 0;  // 0 when the model has no token-type (segment) embedding
};

// How positions enter the model. One implementation per scheme; the learned table of GPT-2 and
// BERT is the only one in use so far (RoPE and ALiBi will act on queries/keys and scores).
class PositionEncoding {
 public:
  virtual ~PositionEncoding() = default;
  // x (rows, d) += encoding of positions (rows)
  virtual void add_to_embeddings(float* x, std::span<const int> positions, int d) const = 0;
};

class LearnedPositions : public PositionEncoding {
 public:
  explicit LearnedPositions(const float* table) : table_(table) {}
  void add_to_embeddings(float* x, std::span<const int> positions, int d) const override;

 private:
  const float* table_;  // (max_positions, d)
};

struct LayerWeights {
  Norm attention_norm;  // pre-norm: applied to the block input; post-norm: after the residual add
  Linear query, key, value, attention_output;
  Norm ffn_norm;
  Linear ffn_up, ffn_down;
};

// Hidden state -> vocabulary logits. BERT's masked-LM head first applies a dense layer, the
// activation and a LayerNorm ("transform"); GPT-2 goes straight to the decoder.
struct OutputHead {
  std::optional<Linear> transform;
  std::optional<Norm> transform_norm;
  Linear decoder;  // (vocab, d) as [out, in]; usually the token embedding itself (tied)
};

struct TransformerWeights {
  const float* token_embedding = nullptr;       // (vocab, d)
  const float* token_type_embedding = nullptr;  // (n_token_types, d) or nullptr
  std::optional<Norm> embedding_norm;           // BERT: LayerNorm right after the embeddings
  std::vector<LayerWeights> layers;
  std::optional<Norm> final_norm;  // GPT-2: ln_f after the last block
  std::optional<OutputHead> head;  // absent for a bare encoder (e.g. BertModel)
};

// One sequence inside a packed batch: its tokens are rows [row, row + length) of the
// activations, and it attends over its n_past earlier keys (the KV cache of a decoder, stored
// just before its own) and its own.
struct SequenceSlice {
  int row = 0;
  int length = 0;
  int n_past = 0;
};

// Tokens of one or more sequences packed row after row: the linear layers see one tall matrix,
// so short sequences are batched without padding; attention stays within each sequence.
struct Batch {
  std::vector<int> token_ids;  // (rows)
  std::vector<int> type_ids;   // (rows), or empty for all zeros
  std::vector<int> positions;  // (rows)
  std::vector<SequenceSlice> sequences;
  // Row r writes its key and value into cache row r + cache_offset: a decoder step at position
  // p uses cache_offset p; a packed encoder batch uses 0.
  int cache_offset = 0;
  int rows() const { return static_cast<int>(token_ids.size()); }

  // Appends one sequence at positions n_past, n_past + 1, ...; type_ids empty means all 0.
  void add_sequence(std::span<const int> ids, std::span<const int> types = {}, int n_past = 0);
};

// Keys and values of every layer for up to `capacity` positions.
struct KVCache {
  KVCache(int n_layer, int capacity, int d_model);
  int capacity;
  std::vector<float> keys;    // (n_layer, capacity, d_model)
  std::vector<float> values;  // (n_layer, capacity, d_model)
};

// Scratch activations for up to `max_rows` packed rows attending over up to `max_context` keys.
struct RunState {
  RunState(const ArchSpec& spec, int max_rows, int max_context);
  int max_rows;
  int max_context;
  std::vector<float> hidden;    // (max_rows, d_model) residual stream
  std::vector<float> normed;    // (max_rows, d_model) input of a sublayer
  std::vector<float> query;     // (max_rows, d_model)
  std::vector<float> context;   // (max_rows, d_model) attention output, heads side by side
  std::vector<float> sublayer;  // (max_rows, d_model) sublayer output before the residual add
  std::vector<float> ffn;       // (max_rows, d_ff)
  // Attention of one sequence, each head's (queries, keys) in its own slice: a sequence has
  // at most min(max_rows, max_context) queries.
  long scores_per_head;
  std::vector<float> scores;  // (n_head, scores_per_head)
};

// Optional hooks into a forward pass, for tests and for the attention dump. With no observer
// the forward pass does no extra work.
struct ForwardObserver {
  // Whether to report the attention of this layer and head.
  std::function<bool(int layer, int head)> wants_attention;
  // Post-softmax attention of one head over one sequence: probabilities (n_queries, n_keys),
  // row i for the query at position n_past + i; causal rows are 0 past their own position.
  std::function<void(int layer, int head, int sequence, const float* probabilities, int n_queries,
                     int n_keys)>
      on_attention;
  // The residual stream (rows, d_model): layer -1 after the embeddings, 0..n_layer-1 after
  // each block, n_layer after the final norm (when the architecture has one).
  std::function<void(int layer, const float* hidden, int rows)> on_hidden;
};

class Transformer {
 public:
  Transformer(ArchSpec spec, TransformerWeights weights,
              std::unique_ptr<PositionEncoding> positions);

  const ArchSpec& spec() const { return spec_; }
  bool has_head() const { return weights_.head.has_value(); }

  // Runs the batch through the embeddings and the first `n_layers` blocks (all by default),
  // writing its keys and values into `cache` and leaving the final hidden states in
  // state.hidden. Token ids, type ids and positions must be in range (checked).
  void forward(const Batch& batch, KVCache& cache, RunState& state,
               const ForwardObserver* observer = nullptr, int n_layers = -1) const;

  // logits (rows.size(), vocab) for the given rows of state.hidden.
  void compute_logits(RunState& state, std::span<const int> rows, float* logits) const;

 private:
  void embed(const Batch& batch, float* hidden) const;
  void attention(int layer, const Batch& batch, KVCache& cache, RunState& state,
                 const ForwardObserver* observer) const;

  ArchSpec spec_;
  TransformerWeights weights_;
  std::unique_ptr<PositionEncoding> positions_;
};

}  // namespace attn
