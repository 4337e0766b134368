#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "src/kernels/ops.h"
#include "src/model/positions.h"

namespace attn {

// Where the norms sit around the two sublayers of a block: the one place the families' block
// topologies differ.
// An encoder-decoder's decoder has a third sublayer, cross-attention over the encoder's output,
// between the two, with its own norm placed the same way (T5 pre-norm, Marian post-norm).
enum class BlockTopology {
  kPreNorm,   // GPT-2, Llama, BLOOM, T5:  x += attn(norm1(x)); x += ffn(norm2(x))
  kPostNorm,  // BERT, Marian:             x = norm1(x + attn(x)); x = norm2(x + ffn(x))
  kParallel,  // GPT-NeoX, Phi:            x += attn(norm1(x)) + ffn(norm2(x)), Phi's norm2 = norm1
};

// What one layer's attention does that may differ from the next layer's: Gemma-2/3 alternate
// local (sliding-window) and global layers with different RoPE bases; Gemma-2 caps its scores;
// T5 does not scale them.
struct LayerSpec {
  // Keys each query sees: all of them (0), or a window of them. A decoder's query at position p
  // sees keys p - window + 1 .. p (Mistral, Gemma); an encoder's sees keys within window / 2 on
  // either side (ModernBERT's local_attention).
  int window = 0;
  // Which of PositionScheme::rotary rotates this layer's queries and keys; -1: none.
  int rotary = -1;
  // scores = score_scale q.k: head_dim^-0.5 by default, query_pre_attn_scalar^-0.5 (Gemma), 1 (T5).
  float score_scale = 1.0f;
  // Gemma-2's soft-capping of the scores, cap tanh(score / cap), before the mask; 0: none.
  float score_softcap = 0.0f;
};

// The architecture as data: everything that distinguishes one model family's forward pass from
// another's. Each family file (gpt2.cpp, llama.cpp, ...) fills this in from its config.json.
struct ArchSpec {
  BlockTopology topology = BlockTopology::kPreNorm;
  Activation activation = Activation::kGeluTanh;
  bool causal = true;  // decoder (each position sees only earlier ones) or bidirectional encoder
  int n_layer = 0;
  int d_model = 0;
  int n_head = 0;     // query heads
  int n_kv_head = 0;  // key/value heads: n_head, or fewer shared by groups (grouped-query)
  int head_dim = 0;   // usually d_model / n_head; Llama 3 style configs may set it apart
  int d_ff = 0;
  bool gated_ffn = false;  // activation(gate(x)) * up(x), as Llama's SwiGLU
  int vocab_size = 0;
  int max_positions = 0;
  int n_token_types = 0;  // 0 when the model has no token-type (segment) embedding
  // Width of the token, position and type embeddings when they are narrower than d_model and
  // projected up to it (ALBERT's embedding_size); 0 when they are d_model wide.
  int embedding_dim = 0;

  // Multiplies the token embedding before positions are added (Marian's scale_embedding:
  // sqrt(d_model); Gemma: sqrt(hidden_size)).
  float embedding_scale = 1.0f;
  // One per layer (n_layer). Empty means every layer attends as most families do: all keys,
  // rotated by PositionScheme::rotary[0] if there is one, scores scaled by head_dim^-0.5
  // (default_layer_spec).
  std::vector<LayerSpec> layers;

  int embedding_width() const { return embedding_dim > 0 ? embedding_dim : d_model; }

  // The usual layer: all keys, the first RoPE table when there is one, scores head_dim^-0.5 q.k.
  LayerSpec default_layer_spec(bool rotary) const {
    return {.rotary = rotary ? 0 : -1, .score_scale = 1.0f / std::sqrt(float(head_dim))};
  }

  int q_dim() const { return n_head * head_dim; }
  int kv_dim() const { return n_kv_head * head_dim; }
};

struct AttentionWeights {
  Linear query;   // d_model -> q_dim
  Linear key;     // d_model -> kv_dim
  Linear value;   // d_model -> kv_dim
  Linear output;  // q_dim -> d_model
  // Qwen3, Gemma-3: an RMSNorm over each head's query and key (head_dim), before RoPE.
  Norm query_norm = identity_norm();
  Norm key_norm = identity_norm();
};

// Plain (up, activation, down) or gated (activation(gate) * up, then down: Llama's SwiGLU).
struct FeedForwardWeights {
  std::optional<Linear> gate;  // d_model -> d_ff
  Linear up;                   // d_model -> d_ff
  Linear down;                 // d_ff -> d_model
};

// A decoder layer's attention over the encoder output: queries from the decoder, keys and values
// from the encoder (computed once per input: CrossAttentionMemory).
struct CrossAttentionWeights {
  Norm norm;  // pre-norm: the sublayer input; post-norm: after the add
  AttentionWeights attention;
};

struct LayerWeights {
  Norm attention_norm;  // pre-norm and parallel: the block input; post-norm: after the add
  AttentionWeights attention;
  std::optional<Norm> ffn_norm;  // absent only in a parallel block sharing attention_norm (Phi)
  FeedForwardWeights ffn;
  // Gemma's sandwich: pre-norm blocks that also norm each sublayer's output before the add.
  Norm attention_output_norm = identity_norm();
  Norm ffn_output_norm = identity_norm();
  std::optional<CrossAttentionWeights> cross = std::nullopt;  // encoder-decoders' decoder only
};

// A masked-LM head's first step: dense layer, activation, LayerNorm.
struct HeadTransform {
  Linear dense;  // d_model -> width: d_model, or ALBERT's embedding_dim
  Activation activation;
  Norm norm;  // over width
};

// Hidden state -> vocabulary logits. Masked-LM heads first apply a transform; decoders go
// straight to the decoder matrix.
struct OutputHead {
  std::optional<HeadTransform> transform;
  Linear decoder;  // (vocab, width) as [out, in]; often the token embedding itself (tied)
  // Multiplies the head's input: T5 scales by d_model^-0.5 before its tied output matrix.
  float input_scale = 1.0f;
  // Gemma-2's final_logit_softcapping: logits become cap tanh(logit / cap); 0: none.
  float logit_softcap = 0.0f;
};

// A classification head: …ForSequenceClassification reads the first token's vector (BERT's
// [CLS], RoBERTa's <s>), …ForTokenClassification every token's. Labels are config.json's
// id2label (Model::labels).
struct ClassifierHead {
  enum class Pooling { kFirstToken, kEveryToken };
  enum class DenseActivation { kTanh, kRelu };
  Pooling pooling = Pooling::kFirstToken;
  // d_model -> d_model before the classifier: BERT's and ALBERT's pooler and RoBERTa's
  // classifier.dense (tanh), DistilBERT's pre_classifier (ReLU).
  std::optional<Linear> dense;
  DenseActivation dense_activation = DenseActivation::kTanh;
  Linear classifier;  // d_model -> labels
};

// Embeddings are embedding_width() wide (e below): d_model, or less when projected (ALBERT).
struct TransformerWeights {
  // (vocab, e) in its stored type; as a Linear e -> vocab, the map a tied output head uses.
  Linear token_embedding;
  const float* token_type_embedding = nullptr;  // (n_token_types, e) or nullptr
  Norm embedding_norm = identity_norm();        // BERT, BLOOM: a norm right after the embeddings
  std::optional<Linear> embedding_projection;   // ALBERT: e -> d_model, after the norm
  // One entry per layer run. ALBERT shares one set of weights among all its layers: the entries
  // then point at the same tensors (nothing is copied).
  std::vector<LayerWeights> layers;
  std::optional<Norm> final_norm;            // pre-norm and parallel models: after the last block
  std::optional<OutputHead> head;            // absent for a bare encoder (e.g. BertModel)
  std::optional<ClassifierHead> classifier;  // …ForSequenceClassification, …ForTokenClassification
};

// One sequence inside a packed batch: its tokens are rows [row, row + length) of the
// activations, and it attends over its n_past earlier keys (the KV cache of a decoder, stored
// just before its own) and its own.
struct SequenceSlice {
  int row = 0;
  int length = 0;
  int n_past = 0;
};

// The encoder's output as every decoder layer's cross-attention sees it: keys and values
// projected once per input by each layer's cross-attention weights.
struct CrossAttentionMemory {
  int length = 0;  // source tokens
  int kv_dim = 0;
  std::vector<float> keys;    // (n_layer, length, kv_dim)
  std::vector<float> values;  // (n_layer, length, kv_dim)
};

// Tokens of one or more sequences packed row after row: the linear layers see one tall matrix,
// so short sequences are batched without padding; attention stays within each sequence.
struct Batch {
  std::vector<int> token_ids;  // (rows)
  std::vector<int> type_ids;   // (rows), or empty for all zeros
  std::vector<int> positions;  // (rows); each sequence counts from 0 at its first key
  std::vector<SequenceSlice> sequences;
  // Row r writes its key and value into cache row r + cache_offset: a decoder step at position
  // p uses cache_offset p; a packed encoder batch uses 0.
  int cache_offset = 0;
  // An encoder-decoder's decoder: the encoder output every sequence's cross-attention reads.
  const CrossAttentionMemory* memory = nullptr;
  int rows() const { return static_cast<int>(token_ids.size()); }
  // kSeparate when every sequence is one row (a decode step of several sequences), else kTokens.
  RowKind row_kind() const;

  // Empties the batch, keeping its buffers for the next one.
  void clear();

  // Appends one sequence at positions n_past, n_past + 1, ...; type_ids empty means all 0.
  void add_sequence(std::span<const int> ids, std::span<const int> types = {}, int n_past = 0);
};

// Keys and values of the first n_layers layers. Keys are stored after the rotary embedding, so
// that a cached key is never rotated again. A batch's row r is the cache's row r + cache_offset
// (Batch); cache rows count from the cache's first token, up to `capacity`.
//
// A layer holds every cache row, except a windowed decoder layer (LayerSpec::window W): its
// queries never look back more than W - 1 rows, so it holds only a buffer of
// W - 1 + max_rows + W / 4 rows, and when a pass does not fit, the W - 1 rows before the pass
// move to the buffer's front. Reads stay contiguous, memory is bounded by the window whatever
// the length generated, and the move costs about 4 rows per decode step.
struct KVCache {
  // max_rows: the most rows a pass will write (default: capacity).
  KVCache(const ArchSpec& spec, int capacity, int n_layers, int max_rows = 0);

  struct Layer {
    int window = 0;     // the layer's window when its buffer is bounded by it, else 0
    int first_row = 0;  // the cache row in buffer row 0; rows before it have left the window
    int buffer_rows = 0;
    std::vector<float> keys;    // (buffer_rows, kv_dim)
    std::vector<float> values;  // (buffer_rows, kv_dim)
  };

  // Makes cache rows [begin, end) writable in `layer`, keeping every earlier row a query in
  // them can see.
  void make_room(int layer, int begin, int end);

  // Keeps the first `rows` cache rows for queries from row `rows` on, and returns `rows`; or,
  // when a windowed layer has already dropped rows such a query sees, forgets every row and
  // returns 0.
  int keep_rows(int rows);
  // Copies the first `rows` rows that later queries can see into `larger`, another cache of the
  // same model at least as large, then holding them as this one does. False (nothing kept) when
  // `larger` would need rows a windowed layer here has dropped (never when it is as large).
  bool copy_rows_to(KVCache& larger, int rows) const;

  int capacity;
  int kv_dim;
  std::vector<Layer> layers;  // (n_layers)
};

// A prompt's queries attend in tiles of this many rows, each with its own scores (tile, keys):
// the whole (queries x keys) matrix, which grows as the square of the context, is never held
// (except when an observer captures it), and a causal tile stops at its last query's own key.
constexpr int kQueryTile = 64;
// Over more keys than this, a tile of queries takes its keys in blocks of this many, with the
// softmax online, so its scores are (tile, kKeyBlock) at most: 128 KiB, which stays in a core's
// L2. Up to kKeyBlock keys (every encoder of up to 512 positions) there is one block, and the
// softmax is the plain one.
constexpr int kKeyBlock = 512;

// Where a sequence's keys and values are, for the attention: a KV cache layer's buffer, whose row 0
// is cache row first_row, or the cross-attention memory (first_row 0).
struct SequenceKeys {
  const float* keys = nullptr;    // (rows, kv_dim)
  const float* values = nullptr;  // (rows, kv_dim)
  int first_row = 0;
  int first_token_row = 0;  // the row of the sequence's first token (self-attention)
};

// Scratch activations for up to `max_rows` packed rows attending over up to `max_context` keys.
struct RunState {
  RunState(const ArchSpec& spec, int max_rows, int max_context, int key_block = kKeyBlock);
  int max_rows;
  int max_context;
  // Keys per block of a tile of queries over more keys than this (kKeyBlock; tests take fewer,
  // to run the blocks' online softmax on short inputs).
  int key_block;
  std::vector<float> hidden;  // (max_rows, d_model) residual stream
  // (max_rows, embedding_dim) projected embeddings only (ALBERT): the embeddings before their
  // projection, and the masked-LM head's transform output, which has that width too.
  std::vector<float> embedding;
  std::vector<float> normed;      // (max_rows, d_model) input of a sublayer
  std::vector<float> query;       // (max_rows, q_dim)
  std::vector<float> new_keys;    // (max_rows, kv_dim) this pass's keys, before the cache
  std::vector<float> new_values;  // (max_rows, kv_dim) this pass's values, before the cache
  std::vector<float> context;     // (max_rows, q_dim) attention output, heads side by side
  std::vector<float> sublayer;    // (max_rows, d_model) a sublayer's output before the add
  std::vector<float> ffn_output;  // (max_rows, d_model) parallel blocks only: the feed-forward's
  std::vector<float> ffn;         // (max_rows, d_ff)
  std::vector<float> ffn_gate;    // (max_rows, d_ff) gated feed-forwards only
  // Angles of this pass's positions for each RoPE table (PositionScheme::rotary), each table's
  // block max_rows * head_dim / 2 long: (rows, its rotary dim / 2) used.
  std::vector<float> rotary_cos;  // (n_tables, max_rows, head_dim / 2)
  std::vector<float> rotary_sin;  // (n_tables, max_rows, head_dim / 2)
  // Attention of one tile of queries (kQueryTile), each head's (queries, keys) in its own
  // slice: a tile has at most min(max_rows, max_context, kQueryTile) queries and, when it has
  // more than one, min(max_context, key_block) keys at a time; a lone query has all max_context.
  long scores_per_head;
  std::vector<float> scores;  // (n_head, scores_per_head)
  // Attention of one whole sequence, when an observer captures it: (n_head, queries, keys).
  std::vector<float> captured_scores;
  // Where each sequence's keys and values are for the layer at hand: (sequences), kept between
  // layers so that a decode step allocates nothing.
  std::vector<SequenceKeys> sequence_keys;
  // Relative position bias (T5): the bucket of each key - query offset in -(max_context - 1)
  // .. max_context - 1, at index offset + max_context - 1; filled at the first pass.
  std::vector<int> offset_buckets;  // (2 max_context - 1) or empty
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
  // Self-attention's head outputs before its output projection, (rows, n_head * head_dim), head
  // h in columns [h * head_dim, (h + 1) * head_dim): to read them (a head's mean output) or to
  // change them (head ablation: one head's slice zeroed, or replaced by its mean).
  std::function<void(int layer, float* head_outputs, int rows)> on_head_outputs;
  // An encoder-decoder's cross-attention, as on_attention (wants_attention chooses the heads
  // too): rows are decoder queries, n_keys the source tokens.
  std::function<void(int layer, int head, int sequence, const float* probabilities, int n_queries,
                     int n_keys)>
      on_cross_attention;
  // The cross-attention's head outputs, as on_head_outputs.
  std::function<void(int layer, float* head_outputs, int rows)> on_cross_head_outputs;
};

class Transformer {
 public:
  Transformer(ArchSpec spec, TransformerWeights weights, PositionScheme positions);

  const ArchSpec& spec() const { return spec_; }
  // The classifier head, or null when the model has none.
  const ClassifierHead* classifier() const {
    return weights_.classifier ? &*weights_.classifier : nullptr;
  }
  bool has_head() const { return weights_.head.has_value(); }
  const PositionScheme& positions() const { return positions_; }

  // Runs the batch through the embeddings and the first `n_layers` blocks (all by default),
  // writing its keys and values into `cache` and leaving the final hidden states in
  // state.hidden. Token ids, type ids and positions must be in range (checked).
  void forward(const Batch& batch, KVCache& cache, RunState& state,
               const ForwardObserver* observer = nullptr, int n_layers = -1) const;
  // The same from block `first_layer` on: state.hidden already holds the residual stream that
  // enters it (rows, d_model), as on_hidden reported it after block first_layer - 1, and the
  // embeddings and the blocks below are not run (head ablation reruns only the blocks above).
  // With `read_rows` (ascending), the caller reads only those rows of the output: the last block
  // computes every row's keys and values, then carries only those rows on past its attention,
  // and state.hidden holds them in its first read_rows.size() rows, in that order (a masked
  // language model scores a few masks of many rows). Not for blocks with cross-attention.
  void forward_from(int first_layer, const Batch& batch, KVCache& cache, RunState& state,
                    const ForwardObserver* observer = nullptr,
                    std::span<const int> read_rows = {}) const;
  // The same over sequences that each keep their own cache (beam search: every beam in one
  // pass): sequence s writes its keys and values into *caches[s], at its positions n_past on,
  // and attends over that cache alone. batch.cache_offset is not used.
  void forward(const Batch& batch, std::span<KVCache* const> caches, RunState& state) const;

  // Bytes of each weight type (indexed by WeightType) that one token's pass reads from weight
  // matrices: every linear layer (ALBERT's shared layers once per use) and the output head.
  std::array<int64_t, kWeightTypeCount> matrix_bytes_per_token() const;

  // The keys and values every layer's cross-attention reads from `encoder_output`
  // (length, d_model), the final hidden states of the encoder.
  CrossAttentionMemory cross_attention_memory(const float* encoder_output, int length) const;

  // logits (rows.size(), vocab) for the given rows of state.hidden; kSeparate when each row is
  // its own sequence's (RowKind).
  void compute_logits(RunState& state, std::span<const int> rows, float* logits,
                      RowKind kind = RowKind::kTokens) const;
  // The final norm of a pre-norm or parallel model over hidden (rows, d_model), in place, as the
  // forward pass applies it after the last block; nothing for a model without one. The logit
  // lens applies it to every block's output.
  void apply_final_norm(float* hidden, int rows) const;
  // The classifier head's logits (rows, labels) of the given rows of the last forward pass: a
  // sequence classifier's first rows, a token classifier's every row.
  void compute_class_logits(RunState& state, std::span<const int> rows, float* logits) const;

 private:
  // Where each sequence of a batch keeps its keys and values: every sequence in one cache,
  // from cache row row + cache_offset - n_past on (`shared`), or each in its own, from row 0.
  struct SequenceCaches {
    KVCache* shared = nullptr;
    std::span<KVCache* const> own;  // (sequences) when not shared

    KVCache& of(std::size_t sequence) const { return shared ? *shared : *own[sequence]; }
    // The cache row of sequence s's first token (position 0).
    int first_token_row(const Batch& batch, std::size_t sequence) const {
      const SequenceSlice& seq = batch.sequences[sequence];
      return shared ? seq.row + batch.cache_offset - seq.n_past : 0;
    }
  };

  // The embeddings and blocks [0, n_layers) when first_layer is -1; else blocks
  // [first_layer, n_layers) over the stream state.hidden holds; read_rows as forward_from's.
  void run(const Batch& batch, const SequenceCaches& caches, RunState& state,
           const ForwardObserver* observer, int first_layer, int n_layers,
           std::span<const int> read_rows = {}) const;
  void embed(const Batch& batch, float* hidden) const;
  // state.sublayer = attention of layer `layer` over `input` (rows, d_model).
  void attention(int layer, const float* input, const Batch& batch, const SequenceCaches& caches,
                 RunState& state, const ForwardObserver* observer) const;
  // state.sublayer = cross-attention of layer `layer` from `input` (rows, d_model) over
  // batch.memory.
  void cross_attention(int layer, const float* input, const Batch& batch, RunState& state,
                       const ForwardObserver* observer) const;
  // The heads of state.query (rows, q_dim) over each sequence's keys and values (keys[s], kv_dim
  // wide) into state.context (rows, q_dim), then through `output` into state.sublayer.
  // Self-attention keys are masked and biased by position; cross-attention keys are all memory
  // rows.
  void attend(int layer, std::span<const SequenceKeys> keys, bool cross, const Batch& batch,
              const Linear& output, RunState& state, const ForwardObserver* observer) const;
  // output (rows, d_model) = feed-forward of layer `layer` over `input` (rows, d_model).
  void feed_forward(int layer, const float* input, int rows, RowKind kind, RunState& state,
                    float* output) const;

  ArchSpec spec_;
  TransformerWeights weights_;
  PositionScheme positions_;
};

}  // namespace attn
