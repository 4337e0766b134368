#include "src/model/transformer.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "src/base/error.h"
#include "src/kernels/weight_kernels.h"

namespace attn {

void Batch::clear() {
  token_ids.clear();
  type_ids.clear();
  positions.clear();
  sequences.clear();
  cache_offset = 0;
  memory = nullptr;
}

RowKind Batch::row_kind() const {
  const bool one_row_each = std::all_of(sequences.begin(), sequences.end(),
                                        [](const SequenceSlice& seq) { return seq.length == 1; });
  return one_row_each ? RowKind::kSeparate : RowKind::kTokens;
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

KVCache::KVCache(const ArchSpec& spec, int capacity_, int n_layers, int max_rows)
    : capacity(capacity_), kv_dim(spec.kv_dim()), layers(n_layers) {
  if (max_rows <= 0) max_rows = capacity;
  for (int i = 0; i < n_layers; ++i) {
    Layer& layer = layers[i];
    const int window = spec.causal && i < int(spec.layers.size()) ? spec.layers[i].window : 0;
    const long bounded = long(window) - 1 + max_rows + std::max(1, window / 4);
    if (window > 0 && bounded < capacity) layer.window = window;
    layer.buffer_rows = layer.window > 0 ? int(bounded) : capacity;
    layer.keys.resize(std::size_t(layer.buffer_rows) * kv_dim);
    layer.values.resize(std::size_t(layer.buffer_rows) * kv_dim);
  }
}

void KVCache::make_room(int index, int begin, int end) {
  Layer& layer = layers[index];
  if (begin >= layer.first_row && end - layer.first_row <= layer.buffer_rows) return;
  // Only a windowed layer drops rows, and only those no query at `begin` or later can see.
  const int keep_from = std::max(0, begin - (layer.window - 1));
  if (layer.window == 0 || keep_from < layer.first_row || end - keep_from > layer.buffer_rows) {
    throw std::logic_error("a pass does not fit the KV cache");
  }
  const std::size_t from = std::size_t(keep_from - layer.first_row) * kv_dim;
  const std::size_t count = std::size_t(begin - keep_from) * kv_dim;
  std::copy_n(layer.keys.begin() + from, count, layer.keys.begin());
  std::copy_n(layer.values.begin() + from, count, layer.values.begin());
  layer.first_row = keep_from;
}

int KVCache::keep_rows(int rows) {
  for (const Layer& layer : layers) {
    if (layer.window > 0 && layer.first_row > std::max(0, rows - (layer.window - 1))) {
      for (Layer& each : layers) each.first_row = 0;
      return 0;
    }
  }
  return rows;
}

bool KVCache::copy_rows_to(KVCache& larger, int rows) const {
  // The first row each layer of `larger` keeps: all of them, or those its window still sees.
  const auto first_kept = [&](std::size_t i) {
    const int window = larger.layers[i].window;
    return window > 0 ? std::max(layers[i].first_row, rows - (window - 1)) : 0;
  };
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const int first = first_kept(i);
    if (first < layers[i].first_row || rows - first > larger.layers[i].buffer_rows) return false;
  }
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const Layer& from = layers[i];
    Layer& to = larger.layers[i];
    to.first_row = first_kept(i);
    const std::size_t offset = std::size_t(to.first_row - from.first_row) * kv_dim;
    const std::size_t count = std::size_t(std::max(0, rows - to.first_row)) * kv_dim;
    std::copy_n(from.keys.begin() + offset, count, to.keys.begin());
    std::copy_n(from.values.begin() + offset, count, to.values.begin());
  }
  return true;
}

RunState::RunState(const ArchSpec& spec, int max_rows_, int max_context_, int key_block_)
    : max_rows(max_rows_),
      max_context(max_context_),
      key_block(key_block_),
      hidden(std::size_t(max_rows_) * spec.d_model),
      embedding(spec.embedding_dim > 0 ? std::size_t(max_rows_) * spec.embedding_dim : 0),
      normed(std::size_t(max_rows_) * spec.d_model),
      query(std::size_t(max_rows_) * spec.q_dim()),
      new_keys(std::size_t(max_rows_) * spec.kv_dim()),
      new_values(std::size_t(max_rows_) * spec.kv_dim()),
      context(std::size_t(max_rows_) * spec.q_dim()),
      sublayer(std::size_t(max_rows_) * spec.d_model),
      ffn_output(spec.topology == BlockTopology::kParallel ? std::size_t(max_rows_) * spec.d_model
                                                           : 0),
      ffn(std::size_t(max_rows_) * spec.d_ff),
      ffn_gate(spec.gated_ffn ? std::size_t(max_rows_) * spec.d_ff : 0),
      scores_per_head(std::max(long(std::min({max_rows_, max_context_, kQueryTile})) *
                                   std::min(max_context_, key_block_),
                               long(max_context_))),
      scores(std::size_t(spec.n_head) * scores_per_head) {}

Transformer::Transformer(ArchSpec spec, TransformerWeights weights, PositionScheme positions)
    : spec_(spec), weights_(std::move(weights)), positions_(std::move(positions)) {
  if (spec_.layers.empty()) {
    spec_.layers.assign(spec_.n_layer, spec_.default_layer_spec(!positions_.rotary.empty()));
  }
  if (int(spec_.layers.size()) != spec_.n_layer) {
    throw std::logic_error("the architecture spec has not one layer spec per layer");
  }
  for (const LayerSpec& layer : spec_.layers) {
    if (layer.rotary >= int(positions_.rotary.size()) || layer.window < 0) {
      throw std::logic_error("a layer spec has a negative window or no such RoPE table");
    }
  }
  // The run state sizes its buffers from the spec; the weights must agree with it.
  for (const LayerWeights& layer : weights_.layers) {
    const bool parallel = spec_.topology == BlockTopology::kParallel;
    if (layer.ffn.gate.has_value() != spec_.gated_ffn || (!layer.ffn_norm && !parallel)) {
      throw std::logic_error("layer weights disagree with the architecture spec");
    }
  }
  const int e = spec_.embedding_width();
  const bool projected = weights_.embedding_projection.has_value();
  if (projected != (spec_.embedding_dim > 0) ||
      (projected && weights_.embedding_projection->in != e) ||
      (weights_.head && weights_.head->transform &&
       weights_.head->transform->dense.out != spec_.d_model &&
       weights_.head->transform->dense.out != e)) {
    throw std::logic_error("embedding weights disagree with the architecture spec");
  }
}

void Transformer::embed(const Batch& batch, float* embedded) const {
  const int e = spec_.embedding_width();
  const Linear& table = weights_.token_embedding;  // (vocab, e) in its stored type
  const WeightKernels& table_kernels = weight_kernels(table.type);
  for (const SequenceSlice& seq : batch.sequences) {
    int padding_seen = 0;  // padding tokens in this sequence so far (RoBERTa positions)
    for (int r = seq.row; r < seq.row + seq.length; ++r) {
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
      float* row = embedded + long(r) * e;
      table_kernels.to_floats(row, table.element(long(id) * table.row_stride), e);
      for (int i = 0; i < e; ++i) row[i] *= spec_.embedding_scale;  // exact when 1
      if (weights_.token_type_embedding) {
        const int type = batch.type_ids.empty() ? 0 : batch.type_ids[r];
        if (type < 0 || type >= spec_.n_token_types) {
          throw Error("token type " + std::to_string(type) + " is outside the model's " +
                      std::to_string(spec_.n_token_types) + " token types");
        }
        add_in_place(row, weights_.token_type_embedding + long(type) * e, e);
      }
      if (positions_.learned_table) {
        const bool padding = positions_.padding_token == id;
        const int table_row = padding ? positions_.table_offset - 1
                                      : positions_.table_offset + position - padding_seen;
        padding_seen += padding;
        add_in_place(row, positions_.learned_table + long(table_row) * e, e);
      }
    }
  }
}

void Transformer::feed_forward(int layer, const float* input, int rows, RowKind kind,
                               RunState& state, float* output) const {
  const FeedForwardWeights& w = weights_.layers[layer].ffn;
  const long n = long(rows) * spec_.d_ff;
  if (spec_.gated_ffn) {
    const LinearOutput projections[] = {
        {.linear = &*w.gate, .y = state.ffn_gate.data(), .activation = spec_.activation},
        {.linear = &w.up, .y = state.ffn.data()}};
    linear_forward_shared_input(projections, input, rows, kind);
    multiply_in_place(state.ffn.data(), state.ffn_gate.data(), n);
  } else {
    linear_forward(state.ffn.data(), input, rows, w.up, kind, spec_.activation);
  }
  linear_forward(output, state.ffn.data(), rows, w.down, kind);
}

void Transformer::forward(const Batch& batch, KVCache& cache, RunState& state,
                          const ForwardObserver* observer, int n_layers) const {
  run(batch, SequenceCaches{.shared = &cache, .own = {}}, state, observer, -1, n_layers);
}

void Transformer::forward_from(int first_layer, const Batch& batch, KVCache& cache, RunState& state,
                               const ForwardObserver* observer,
                               std::span<const int> read_rows) const {
  if (first_layer < 0 || first_layer > spec_.n_layer) throw std::logic_error("no such layer");
  run(batch, SequenceCaches{.shared = &cache, .own = {}}, state, observer, first_layer, -1,
      read_rows);
}

void Transformer::forward(const Batch& batch, std::span<KVCache* const> caches,
                          RunState& state) const {
  if (caches.size() != batch.sequences.size()) {
    throw std::logic_error("not one KV cache per sequence");
  }
  run(batch, SequenceCaches{.shared = nullptr, .own = caches}, state, nullptr, -1, -1);
}

void Transformer::run(const Batch& batch, const SequenceCaches& caches, RunState& state,
                      const ForwardObserver* observer, int first_layer, int n_layers,
                      std::span<const int> read_rows) const {
  int rows = batch.rows();
  const int d = spec_.d_model;
  long size = long(rows) * d;
  for (std::size_t i = 0; i < read_rows.size(); ++i) {
    if (read_rows[i] < 0 || read_rows[i] >= rows || (i > 0 && read_rows[i] <= read_rows[i - 1])) {
      throw std::logic_error("read rows not ascending rows of the batch");
    }
  }
  if (rows > state.max_rows) throw std::logic_error("batch larger than the run state");
  if (batch.memory && batch.memory->length > state.max_context) {
    throw std::logic_error("cross-attention memory longer than the run state's context");
  }
  for (std::size_t s = 0; s < batch.sequences.size(); ++s) {
    const SequenceSlice& seq = batch.sequences[s];
    if (seq.n_past + seq.length > state.max_context ||
        caches.first_token_row(batch, s) + seq.n_past + seq.length > caches.of(s).capacity) {
      throw Error("sequence of " + std::to_string(seq.n_past + seq.length) +
                  " tokens does not fit the context of " + std::to_string(state.max_context));
    }
  }
  if (n_layers < 0) n_layers = spec_.n_layer;
  float* hidden = state.hidden.data();
  float* normed = state.normed.data();
  // Each RoPE table's angles for this pass's positions, in its block of rotary_cos/sin.
  const std::size_t rotary_block = std::size_t(state.max_rows) * spec_.head_dim / 2;
  if (state.rotary_cos.size() < positions_.rotary.size() * rotary_block) {
    state.rotary_cos.resize(positions_.rotary.size() * rotary_block);
    state.rotary_sin.resize(positions_.rotary.size() * rotary_block);
  }
  for (std::size_t t = 0; t < positions_.rotary.size(); ++t) {
    positions_.rotary[t].angles(batch.positions, state.rotary_cos.data() + t * rotary_block,
                                state.rotary_sin.data() + t * rotary_block);
  }
  if (positions_.relative_bias && state.offset_buckets.empty()) {
    for (int offset = 1 - state.max_context; offset < state.max_context; ++offset) {
      state.offset_buckets.push_back(positions_.relative_bias->bucket(offset));
    }
  }

  if (first_layer < 0) {
    // (rows, e): the embeddings, projected to d_model when they are narrower (ALBERT).
    float* embedded = weights_.embedding_projection ? state.embedding.data() : hidden;
    embed(batch, embedded);
    norm_forward(embedded, embedded, rows, spec_.embedding_width(), weights_.embedding_norm);
    if (weights_.embedding_projection) {
      linear_forward(hidden, embedded, rows, *weights_.embedding_projection, batch.row_kind());
    }
    if (observer && observer->on_hidden) observer->on_hidden(-1, hidden, rows);
  }

  float* sublayer = state.sublayer.data();
  // After the last block's attention, only the rows the caller reads go on: moved to the front
  // of every buffer the rest of the block reads. A row's sums in a product are the same whatever
  // rows share it, so they come out as in a whole pass (to float rounding where one row is left:
  // a matrix not packed then goes through the one-row kernels).
  const auto keep_read_rows = [&](int layer) {
    if (read_rows.empty() || layer + 1 != spec_.n_layer) return;
    if (weights_.layers[layer].cross) throw std::logic_error("read rows with cross-attention");
    for (float* buffer : {hidden, normed, sublayer}) {
      for (std::size_t i = 0; i < read_rows.size(); ++i) {
        if (read_rows[i] != int(i)) {  // ascending: a row only moves up, onto a row not read
          std::copy_n(buffer + long(read_rows[i]) * d, d, buffer + long(i) * d);
        }
      }
    }
    rows = int(read_rows.size());
    size = long(rows) * d;
  };
  const RowKind kind = batch.row_kind();

  for (int layer = std::max(first_layer, 0); layer < n_layers; ++layer) {
    const LayerWeights& w = weights_.layers[layer];
    if (w.cross && !batch.memory) {
      throw std::logic_error("a decoder with cross-attention run without the encoder output");
    }
    switch (spec_.topology) {
      case BlockTopology::kPreNorm:
        norm_forward(normed, hidden, rows, d, w.attention_norm);
        attention(layer, normed, batch, caches, state, observer);
        keep_read_rows(layer);
        norm_forward(sublayer, sublayer, rows, d, w.attention_output_norm);
        add_in_place(hidden, sublayer, size);
        if (w.cross) {
          norm_forward(normed, hidden, rows, d, w.cross->norm);
          cross_attention(layer, normed, batch, state, observer);
          add_in_place(hidden, sublayer, size);
        }
        norm_forward(normed, hidden, rows, d, *w.ffn_norm);
        feed_forward(layer, normed, rows, kind, state, sublayer);
        norm_forward(sublayer, sublayer, rows, d, w.ffn_output_norm);
        add_in_place(hidden, sublayer, size);
        break;
      case BlockTopology::kPostNorm:
        attention(layer, hidden, batch, caches, state, observer);
        keep_read_rows(layer);
        add_in_place(hidden, sublayer, size);
        norm_forward(hidden, hidden, rows, d, w.attention_norm);
        if (w.cross) {
          cross_attention(layer, hidden, batch, state, observer);
          add_in_place(hidden, sublayer, size);
          norm_forward(hidden, hidden, rows, d, w.cross->norm);
        }
        feed_forward(layer, hidden, rows, kind, state, sublayer);
        add_in_place(hidden, sublayer, size);
        norm_forward(hidden, hidden, rows, d, *w.ffn_norm);
        break;
      case BlockTopology::kParallel:
        // Both sublayers read the block input; the residual is added once, after both.
        norm_forward(normed, hidden, rows, d, w.attention_norm);
        attention(layer, normed, batch, caches, state, observer);
        keep_read_rows(layer);
        if (w.ffn_norm) norm_forward(normed, hidden, rows, d, *w.ffn_norm);
        feed_forward(layer, normed, rows, kind, state, state.ffn_output.data());
        add_in_place(sublayer, state.ffn_output.data(), size);
        add_in_place(hidden, sublayer, size);
        break;
    }
    if (observer && observer->on_hidden) observer->on_hidden(layer, hidden, rows);
  }
  if (weights_.final_norm && n_layers == spec_.n_layer) {
    apply_final_norm(hidden, rows);
    if (observer && observer->on_hidden) observer->on_hidden(spec_.n_layer, hidden, rows);
  }
}

void Transformer::apply_final_norm(float* hidden, int rows) const {
  if (weights_.final_norm) norm_forward(hidden, hidden, rows, spec_.d_model, *weights_.final_norm);
}

std::array<int64_t, kWeightTypeCount> Transformer::matrix_bytes_per_token() const {
  std::array<int64_t, kWeightTypeCount> bytes{};
  auto count = [&](const Linear& linear) {
    bytes[int(linear.type)] += storage_bytes(linear.type, long(linear.in) * linear.out);
  };
  if (weights_.embedding_projection) count(*weights_.embedding_projection);
  for (const LayerWeights& layer : weights_.layers) {
    for (const Linear* linear :
         {&layer.attention.query, &layer.attention.key, &layer.attention.value,
          &layer.attention.output, &layer.ffn.up, &layer.ffn.down}) {
      count(*linear);
    }
    if (layer.ffn.gate) count(*layer.ffn.gate);
    // The cross-attention's keys and values are computed once per input, not per token.
    if (layer.cross) {
      count(layer.cross->attention.query);
      count(layer.cross->attention.output);
    }
  }
  if (weights_.head) {
    if (weights_.head->transform) count(weights_.head->transform->dense);
    count(weights_.head->decoder);
  }
  return bytes;
}

CrossAttentionMemory Transformer::cross_attention_memory(const float* encoder_output,
                                                         int length) const {
  const int kv_dim = spec_.kv_dim();
  CrossAttentionMemory memory{
      .length = length,
      .kv_dim = kv_dim,
      .keys = std::vector<float>(std::size_t(spec_.n_layer) * length * kv_dim),
      .values = std::vector<float>(std::size_t(spec_.n_layer) * length * kv_dim)};
  for (int layer = 0; layer < spec_.n_layer; ++layer) {
    const AttentionWeights& w = weights_.layers[layer].cross->attention;
    const std::size_t offset = std::size_t(layer) * length * kv_dim;
    const LinearOutput projections[] = {{.linear = &w.key, .y = memory.keys.data() + offset},
                                        {.linear = &w.value, .y = memory.values.data() + offset}};
    linear_forward_shared_input(projections, encoder_output, length);
  }
  return memory;
}

void Transformer::compute_logits(RunState& state, std::span<const int> rows, float* logits,
                                 RowKind kind) const {
  if (!weights_.head) throw std::logic_error("compute_logits on a model without an output head");
  const OutputHead& head = *weights_.head;
  const int d = spec_.d_model;
  const int n = static_cast<int>(rows.size());
  // Gather the requested rows: (n, d)
  float* gathered = state.normed.data();
  for (int i = 0; i < n; ++i) {
    std::copy_n(state.hidden.data() + long(rows[i]) * d, d, gathered + long(i) * d);
  }
  for (long i = 0; i < long(n) * d; ++i) gathered[i] *= head.input_scale;  // exact when 1
  const float* head_input = gathered;
  if (head.transform) {
    // (n, width): width is d_model, or the embedding width of a projected model (ALBERT).
    const HeadTransform& transform = *head.transform;
    const int width = transform.dense.out;
    float* transformed = width == d ? state.sublayer.data() : state.embedding.data();
    linear_forward(transformed, gathered, n, transform.dense, kind, transform.activation);
    norm_forward(transformed, transformed, n, width, transform.norm);
    head_input = transformed;
  }
  linear_forward(logits, head_input, n, head.decoder, kind);
  if (head.logit_softcap > 0) {
    soft_cap(logits, long(n) * head.decoder.out, head.logit_softcap);
  }
}

void Transformer::compute_class_logits(RunState& state, std::span<const int> rows,
                                       float* logits) const {
  if (!weights_.classifier) throw std::logic_error("compute_class_logits without a classifier");
  const ClassifierHead& head = *weights_.classifier;
  const int d = spec_.d_model;
  const int n = static_cast<int>(rows.size());
  float* gathered = state.normed.data();  // (n, d)
  for (int i = 0; i < n; ++i) {
    std::copy_n(state.hidden.data() + long(rows[i]) * d, d, gathered + long(i) * d);
  }
  const float* head_input = gathered;
  if (head.dense) {
    float* pooled = state.sublayer.data();  // (n, d)
    linear_forward(pooled, gathered, n, *head.dense);
    for (long i = 0; i < long(n) * d; ++i) {
      pooled[i] = head.dense_activation == ClassifierHead::DenseActivation::kTanh
                      ? std::tanh(pooled[i])
                      : std::max(pooled[i], 0.0f);
    }
    head_input = pooled;
  }
  linear_forward(logits, head_input, n, head.classifier);
}

}  // namespace attn
