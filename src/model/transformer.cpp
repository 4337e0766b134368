#include "src/model/transformer.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "src/base/error.h"
#include "src/kernels/thread_pool.h"

namespace attn {

void LearnedPositions::add_to_embeddings(float* x, std::span<const int> positions, int d) const {
  for (std::size_t r = 0; r < positions.size(); ++r) {
    add_in_place(x + long(r) * d, table_ + long(positions[r]) * d, d);
  }
}

void Batch::add_sequence(std::span<const int> ids, std::span<const int> types, int n_past) {
  const int row = rows();
  const int length = static_cast<int>(ids.size());
  token_ids.insert(token_ids.end(), ids.begin(), ids.end());
  if (types.empty()) {
    type_ids.insert(type_ids.end(), ids.size(), 0);
  } else {
    type_ids.insert(type_ids.end(), types.begin(), types.end());
  }
  for (int p = 0; p < length; ++p) positions.push_back(n_past + p);
  sequences.push_back({.row = row, .length = length, .n_past = n_past});
}

KVCache::KVCache(int n_layer, int capacity_, int d_model)
    : capacity(capacity_),
      keys(std::size_t(n_layer) * capacity_ * d_model),
      values(std::size_t(n_layer) * capacity_ * d_model) {}

RunState::RunState(const ArchSpec& spec, int max_rows_, int max_context_)
    : max_rows(max_rows_),
      max_context(max_context_),
      hidden(std::size_t(max_rows_) * spec.d_model),
      normed(std::size_t(max_rows_) * spec.d_model),
      query(std::size_t(max_rows_) * spec.d_model),
      context(std::size_t(max_rows_) * spec.d_model),
      sublayer(std::size_t(max_rows_) * spec.d_model),
      ffn(std::size_t(max_rows_) * spec.d_ff),
      scores_per_head(long(std::min(max_rows_, max_context_)) * max_context_),
      scores(std::size_t(spec.n_head) * scores_per_head) {}

Transformer::Transformer(ArchSpec spec, TransformerWeights weights,
                         std::unique_ptr<PositionEncoding> positions)
    : spec_(spec), weights_(std::move(weights)), positions_(std::move(positions)) {}

void Transformer::embed(const Batch& batch, float* hidden) const {
  const int d = spec_.d_model;
  for (int r = 0; r < batch.rows(); ++r) {
    const int id = batch.token_ids[r];
    if (id < 0 || id >= spec_.vocab_size) {
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary (size " +
                  std::to_string(spec_.vocab_size) + ")");
    }
    const int position = batch.positions[r];
    if (position < 0 || position >= spec_.max_positions) {
      throw Error("position " + std::to_string(position) + " is past the model's context of " +
                  std::to_string(spec_.max_positions) + " tokens");
    }
    std::copy_n(weights_.token_embedding + long(id) * d, d, hidden + long(r) * d);
    if (weights_.token_type_embedding) {
      const int type = batch.type_ids.empty() ? 0 : batch.type_ids[r];
      if (type < 0 || type >= spec_.n_token_types) {
        throw Error("token type " + std::to_string(type) + " is outside the model's " +
                    std::to_string(spec_.n_token_types) + " token types");
      }
      add_in_place(hidden + long(r) * d, weights_.token_type_embedding + long(type) * d, d);
    }
  }
  positions_->add_to_embeddings(hidden, batch.positions, d);
}

void Transformer::attention(int layer, const Batch& batch, KVCache& cache, RunState& state,
                            const ForwardObserver* observer) const {
  const LayerWeights& w = weights_.layers[layer];
  const int d = spec_.d_model;
  const int head_dim = d / spec_.n_head;
  const float scale = 1.0f / std::sqrt(float(head_dim));
  const float* input =
      spec_.norm_placement == NormPlacement::kPre ? state.normed.data() : state.hidden.data();
  float* layer_keys = cache.keys.data() + std::size_t(layer) * cache.capacity * d;
  float* layer_values = cache.values.data() + std::size_t(layer) * cache.capacity * d;

  linear_forward(state.query.data(), input, batch.rows(), w.query);
  linear_forward(layer_keys + long(batch.cache_offset) * d, input, batch.rows(), w.key);
  linear_forward(layer_values + long(batch.cache_offset) * d, input, batch.rows(), w.value);

  for (std::size_t s = 0; s < batch.sequences.size(); ++s) {
    const SequenceSlice& seq = batch.sequences[s];
    const int n_keys = seq.n_past + seq.length;
    const long first_key = long(seq.row) + batch.cache_offset - seq.n_past;
    // One task per head, each with its own scores (length, n_keys).
    auto head_scores = [&](int h) { return state.scores.data() + long(h) * state.scores_per_head; };
    thread_pool().run(spec_.n_head, [&](int h) {
      const float* query = state.query.data() + long(seq.row) * d + h * head_dim;
      const float* keys = layer_keys + first_key * d + h * head_dim;
      const float* values = layer_values + first_key * d + h * head_dim;
      float* scores = head_scores(h);

      // scores = scale * Q K^T, heads read in place from the (rows, d_model) layout.
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, seq.length, n_keys, head_dim, scale,
                  query, d, keys, d, 0.0f, scores, n_keys);
      for (int i = 0; i < seq.length; ++i) {
        float* row = scores + long(i) * n_keys;
        const int visible = spec_.causal ? seq.n_past + i + 1 : n_keys;
        softmax_row(row, visible);
        std::fill(row + visible, row + n_keys, 0.0f);
      }
      // context = scores V, written into this head's columns.
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, seq.length, head_dim, n_keys, 1.0f,
                  scores, n_keys, values, d, 0.0f,
                  state.context.data() + long(seq.row) * d + h * head_dim, d);
    });
    // Observers run on this thread, after the parallel part, so they need no locking.
    if (observer && observer->on_attention) {
      for (int h = 0; h < spec_.n_head; ++h) {
        if (observer->wants_attention(layer, h)) {
          observer->on_attention(layer, h, int(s), head_scores(h), seq.length, n_keys);
        }
      }
    }
  }
  linear_forward(state.sublayer.data(), state.context.data(), batch.rows(), w.attention_output);
}

void Transformer::forward(const Batch& batch, KVCache& cache, RunState& state,
                          const ForwardObserver* observer, int n_layers) const {
  const int rows = batch.rows();
  const int d = spec_.d_model;
  const long size = long(rows) * d;
  if (rows > state.max_rows) throw std::logic_error("batch larger than the run state");
  for (const SequenceSlice& seq : batch.sequences) {
    if (seq.n_past + seq.length > state.max_context ||
        seq.row + batch.cache_offset + seq.length > cache.capacity) {
      throw Error("sequence of " + std::to_string(seq.n_past + seq.length) +
                  " tokens does not fit the context of " + std::to_string(state.max_context));
    }
  }
  if (n_layers < 0) n_layers = spec_.n_layer;
  float* hidden = state.hidden.data();

  embed(batch, hidden);
  if (weights_.embedding_norm)
    layer_norm_forward(hidden, hidden, rows, d, *weights_.embedding_norm);
  if (observer && observer->on_hidden) observer->on_hidden(-1, hidden, rows);

  for (int layer = 0; layer < n_layers; ++layer) {
    const LayerWeights& w = weights_.layers[layer];
    const bool pre_norm = spec_.norm_placement == NormPlacement::kPre;
    // The feed-forward input: the normalized residual (pre-norm) or the residual itself.
    const float* ffn_input = pre_norm ? state.normed.data() : hidden;

    if (pre_norm) layer_norm_forward(state.normed.data(), hidden, rows, d, w.attention_norm);
    attention(layer, batch, cache, state, observer);
    add_in_place(hidden, state.sublayer.data(), size);
    if (!pre_norm) layer_norm_forward(hidden, hidden, rows, d, w.attention_norm);

    if (pre_norm) layer_norm_forward(state.normed.data(), hidden, rows, d, w.ffn_norm);
    linear_forward(state.ffn.data(), ffn_input, rows, w.ffn_up);
    activation_forward(state.ffn.data(), long(rows) * spec_.d_ff, spec_.activation);
    linear_forward(state.sublayer.data(), state.ffn.data(), rows, w.ffn_down);
    add_in_place(hidden, state.sublayer.data(), size);
    if (!pre_norm) layer_norm_forward(hidden, hidden, rows, d, w.ffn_norm);

    if (observer && observer->on_hidden) observer->on_hidden(layer, hidden, rows);
  }
  if (weights_.final_norm && n_layers == spec_.n_layer) {
    layer_norm_forward(hidden, hidden, rows, d, *weights_.final_norm);
    if (observer && observer->on_hidden) observer->on_hidden(spec_.n_layer, hidden, rows);
  }
}

void Transformer::compute_logits(RunState& state, std::span<const int> rows, float* logits) const {
  if (!weights_.head) throw std::logic_error("compute_logits on a model without an output head");
  const OutputHead& head = *weights_.head;
  const int d = spec_.d_model;
  const int n = static_cast<int>(rows.size());
  // Gather the requested rows: (n, d)
  float* gathered = state.normed.data();
  for (int i = 0; i < n; ++i) {
    std::copy_n(state.hidden.data() + long(rows[i]) * d, d, gathered + long(i) * d);
  }
  if (head.transform) {
    float* transformed = state.sublayer.data();
    linear_forward(transformed, gathered, n, *head.transform);
    activation_forward(transformed, long(n) * d, spec_.activation);
    layer_norm_forward(gathered, transformed, n, d, *head.transform_norm);
  }
  linear_forward(logits, gathered, n, head.decoder);
}

}  // namespace attn
