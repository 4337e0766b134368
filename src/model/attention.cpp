// Multi-head attention of one layer: self-attention with its KV cache and the position schemes
// that act inside it (rotary queries and keys, ALiBi and relative-position score biases), and an
// encoder-decoder's cross-attention over the encoder output. Grouped-query attention: n_head
// query heads share n_kv_head key/value heads, query head h reading kv head h / (n_head /
// n_kv_head).

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "src/kernels/gemm.h"
#include "src/kernels/thread_pool.h"
#include "src/kernels/weight_kernels.h"
#include "src/model/transformer.h"

namespace attn {

void Transformer::attention(int layer, const float* input, const Batch& batch,
                            const SequenceCaches& caches, RunState& state,
                            const ForwardObserver* observer) const {
  const AttentionWeights& w = weights_.layers[layer].attention;
  const int q_dim = spec_.q_dim();
  const int kv_dim = spec_.kv_dim();
  const int rows = batch.rows();
  float* new_keys = state.new_keys.data();  // (rows, kv_dim)
  const LinearOutput projections[] = {{.linear = &w.query, .y = state.query.data()},
                                      {.linear = &w.key, .y = new_keys},
                                      {.linear = &w.value, .y = state.new_values.data()}};
  linear_forward_shared_input(projections, input, rows, batch.row_kind());
  // Each head's query and key are rows of head_dim: (rows x heads, head_dim).
  norm_forward(state.query.data(), state.query.data(), rows * spec_.n_head, spec_.head_dim,
               w.query_norm);
  norm_forward(new_keys, new_keys, rows * spec_.n_kv_head, spec_.head_dim, w.key_norm);
  if (const int table = spec_.layers[layer].rotary; table >= 0) {
    const std::size_t block = std::size_t(state.max_rows) * spec_.head_dim / 2;
    const float* cos = state.rotary_cos.data() + table * block;
    const float* sin = state.rotary_sin.data() + table * block;
    const RotaryEmbedding& rotary = positions_.rotary[table];
    rotary.rotate(state.query.data(), rows, q_dim, spec_.n_head, spec_.head_dim, cos, sin);
    rotary.rotate(new_keys, rows, kv_dim, spec_.n_kv_head, spec_.head_dim, cos, sin);
  }
  // Into the cache: a shared one makes room for the whole batch at once (a windowed layer may
  // move its rows), each own one for its sequence.
  if (caches.shared) {
    caches.shared->make_room(layer, batch.cache_offset, batch.cache_offset + rows);
  }
  std::vector<SequenceKeys>& keys = state.sequence_keys;
  keys.resize(batch.sequences.size());
  for (std::size_t s = 0; s < batch.sequences.size(); ++s) {
    const SequenceSlice& seq = batch.sequences[s];
    KVCache& cache = caches.of(s);
    const int first_token_row = caches.first_token_row(batch, s);
    const int first_new_row = first_token_row + seq.n_past;
    if (!caches.shared) cache.make_room(layer, first_new_row, first_new_row + seq.length);
    KVCache::Layer& layer_cache = cache.layers[layer];
    const long buffer_row = first_new_row - layer_cache.first_row;
    std::copy_n(new_keys + long(seq.row) * kv_dim, long(seq.length) * kv_dim,
                layer_cache.keys.begin() + buffer_row * kv_dim);
    std::copy_n(state.new_values.begin() + long(seq.row) * kv_dim, long(seq.length) * kv_dim,
                layer_cache.values.begin() + buffer_row * kv_dim);
    keys[s] = SequenceKeys{.keys = layer_cache.keys.data(),
                           .values = layer_cache.values.data(),
                           .first_row = layer_cache.first_row,
                           .first_token_row = first_token_row};
  }
  attend(layer, keys, false, batch, w.output, state, observer);
}

void Transformer::cross_attention(int layer, const float* input, const Batch& batch,
                                  RunState& state, const ForwardObserver* observer) const {
  const AttentionWeights& w = weights_.layers[layer].cross->attention;
  const CrossAttentionMemory& memory = *batch.memory;
  const std::size_t layer_offset = std::size_t(layer) * memory.length * memory.kv_dim;
  linear_forward(state.query.data(), input, batch.rows(), w.query, batch.row_kind());
  state.sequence_keys.assign(batch.sequences.size(),
                             SequenceKeys{.keys = memory.keys.data() + layer_offset,
                                          .values = memory.values.data() + layer_offset,
                                          .first_row = 0,
                                          .first_token_row = 0});
  attend(layer, state.sequence_keys, true, batch, w.output, state, observer);
}

void Transformer::attend(int layer, std::span<const SequenceKeys> sequence_keys, bool cross,
                         const Batch& batch, const Linear& output, RunState& state,
                         const ForwardObserver* observer) const {
  const int head_dim = spec_.head_dim;
  const int q_dim = spec_.q_dim();
  const int kv_dim = spec_.kv_dim();
  const int group = spec_.n_head / spec_.n_kv_head;
  const LayerSpec& layer_spec = spec_.layers[layer];
  const float scale = layer_spec.score_scale;
  const WeightKernels& f32_kernels = weight_kernels(WeightType::kF32);  // for one-query heads
  const GemmKernels& gemm = gemm_kernels();                             // for many
  // Position biases and the causal mask act on self-attention only: cross-attention sees every
  // source token.
  const bool causal = spec_.causal && !cross;
  const int window = cross ? 0 : layer_spec.window;
  const bool alibi = !positions_.alibi_slopes.empty() && !cross;
  const RelativePositionBias* relative =
      positions_.relative_bias && !cross ? &*positions_.relative_bias : nullptr;

  for (std::size_t s = 0; s < batch.sequences.size(); ++s) {
    const SequenceSlice& seq = batch.sequences[s];
    const float* layer_keys = sequence_keys[s].keys;
    const float* layer_values = sequence_keys[s].values;
    const int first_row = sequence_keys[s].first_row;
    // The sequence's keys are cache rows from its first token's, minus the `dropped` ones a
    // windowed layer no longer holds (none of this pass's queries sees them): key j is the
    // token at position dropped + j.
    const int first_token_row = sequence_keys[s].first_token_row;
    const int dropped = std::max(0, first_row - first_token_row);
    if (dropped > 0 && (window == 0 || dropped > seq.n_past - window + 1)) {
      throw std::logic_error("a query's keys have left the KV cache");
    }
    const int n_keys = cross ? batch.memory->length : seq.n_past + seq.length - dropped;
    const long first_key = first_token_row + dropped - first_row;
    // The queries go in tiles (kQueryTile), each head's scores (tile rows, keys) in
    // state.scores; a captured sequence goes whole, in state.captured_scores.
    const auto* report = !observer ? nullptr
                         : cross   ? &observer->on_cross_attention
                                   : &observer->on_attention;
    bool captured = false;
    for (int h = 0; report && *report && h < spec_.n_head; ++h) {
      captured = captured || observer->wants_attention(layer, h);
    }
    const int tile_rows = captured ? seq.length : std::min(seq.length, kQueryTile);
    const long scores_per_head = captured ? long(seq.length) * n_keys : state.scores_per_head;
    if (captured) state.captured_scores.resize(std::size_t(spec_.n_head) * scores_per_head);
    float* const all_scores = captured ? state.captured_scores.data() : state.scores.data();
    // Keys [first, end) of the sequence's n keys that a query at `position` sees: the causal
    // mask ends them at the query's own key; a window starts them window - 1 keys before it (a
    // decoder) or keeps them within window / 2 on either side (an encoder).
    auto visible_keys = [&](int position, int n) {
      const int own_key = position - dropped;
      int first = 0, end = causal ? own_key + 1 : n;
      if (window > 0) {
        first = std::max(0, causal ? own_key - window + 1 : own_key - window / 2);
        if (!causal) end = std::min(n, own_key + window / 2 + 1);
      }
      return std::pair{first, end};
    };
    // row (count scores, of keys [begin, begin + count)) += head h's position biases for a query
    // at `position`.
    auto add_position_biases = [&](float* row, int h, int position, int begin, int count) {
      if (alibi) {
        // BLOOM adds slope * key position rather than -slope * distance: the two differ by a
        // constant per row, which the softmax removes.
        const float slope = positions_.alibi_slopes[h];
        for (int j = 0; j < count; ++j) row[j] += slope * float(dropped + begin + j);
      }
      if (relative) {
        // Key j of a query at `position`: offset dropped + j - position.
        const int* buckets =
            state.offset_buckets.data() + (state.max_context - 1) - position + dropped + begin;
        for (int j = 0; j < count; ++j) row[j] += relative->table[buckets[j] * spec_.n_head + h];
      }
    };
    // scores (rows, n) = scale * queries (rows, head_dim; q_dim apart) . keys (n, head_dim;
    // kv_dim apart)^T, by the GEMM, the keys read in place as an [out, in] matrix.
    auto multiply_by_keys = [&](float* scores, const float* query, int rows, const float* keys,
                                int n) {
      const Linear key_map{.weight = keys,
                           .bias = nullptr,
                           .in = head_dim,
                           .out = n,
                           .in_out_layout = false,
                           .row_stride = kv_dim,
                           .type = WeightType::kF32};
      std::fill_n(scores, long(rows) * n, 0.0f);
      gemm_columns(gemm, scores, n, query, q_dim, rows, key_map, 0, n);
      for (long j = 0; j < long(rows) * n; ++j) scores[j] *= scale;
    };
    // context (rows, head_dim; q_dim apart) += scores (rows, n) . values (n, head_dim; kv_dim
    // apart), by the GEMM, the values read in place as an [in, out] matrix.
    auto add_values = [&](float* context, const float* scores, int rows, const float* values,
                          int n) {
      const Linear value_map{.weight = values,
                             .bias = nullptr,
                             .in = n,
                             .out = head_dim,
                             .in_out_layout = true,
                             .row_stride = kv_dim,
                             .type = WeightType::kF32};
      gemm_columns(gemm, context, q_dim, scores, n, rows, value_map, 0, head_dim);
    };
    // Head h's context for a tile of `rows` queries (the first at `position`) over n keys, more
    // than state.key_block (kKeyBlock): the keys go in blocks of that many with the softmax
    // computed online (as FlashAttention does), so the scores held are (rows, key_block) however
    // long the sequence. Each row keeps the running max of its scores and the sum of their
    // exponentials from it; when the max grows, what the row has summed so far (that sum and its
    // context) is scaled by exp(old max - new max); the context is divided by the sum at the end.
    // The result differs from the one-tile softmax's by float rounding only.
    auto attend_in_key_blocks = [&](int h, int position, int rows, int n, const float* query,
                                    const float* keys, const float* values, float* scores,
                                    float* context) {
      float running_max[kQueryTile], running_sum[kQueryTile];
      std::fill_n(running_max, rows, -std::numeric_limits<float>::infinity());
      std::fill_n(running_sum, rows, 0.0f);
      for (int i = 0; i < rows; ++i) std::fill_n(context + long(i) * q_dim, head_dim, 0.0f);
      // The keys any query of the tile sees (each bound grows with the position).
      const int tile_first = visible_keys(position, n).first;
      const int tile_end = visible_keys(position + rows - 1, n).second;
      for (int begin = 0; begin < n; begin += state.key_block) {
        const int count = std::min(state.key_block, n - begin);
        if (begin + count <= tile_first || begin >= tile_end) continue;
        multiply_by_keys(scores, query, rows, keys + long(begin) * kv_dim, count);
        for (int i = 0; i < rows; ++i) {
          float* row = scores + long(i) * count;
          const auto [visible_first, visible_end] = visible_keys(position + i, n);
          const int first = std::clamp(visible_first - begin, 0, count);
          const int end = std::clamp(visible_end - begin, first, count);
          std::fill(row, row + first, 0.0f);
          std::fill(row + end, row + count, 0.0f);
          if (first == end) continue;
          add_position_biases(row + first, h, position + i, begin + first, end - first);
          if (layer_spec.score_softcap > 0) {
            soft_cap(row + first, end - first, layer_spec.score_softcap);
          }
          float block_max = row[first];
          for (int j = first + 1; j < end; ++j) block_max = std::max(block_max, row[j]);
          const float new_max = std::max(running_max[i], block_max);
          exp_of_differences(row + first, end - first, new_max);
          float block_sum = 0;
          for (int j = first; j < end; ++j) block_sum += row[j];
          if (new_max > running_max[i]) {
            const float shrink = std::exp(running_max[i] - new_max);  // 0 at the first block
            running_sum[i] *= shrink;
            float* context_row = context + long(i) * q_dim;
            for (int k = 0; k < head_dim; ++k) context_row[k] *= shrink;
            running_max[i] = new_max;
          }
          running_sum[i] += block_sum;
        }
        add_values(context, scores, rows, values + long(begin) * kv_dim, count);
      }
      for (int i = 0; i < rows; ++i) {
        const float inv_sum = 1.0f / running_sum[i];
        float* context_row = context + long(i) * q_dim;
        for (int k = 0; k < head_dim; ++k) context_row[k] *= inv_sum;
      }
    };
    thread_pool().run(spec_.n_head, [&](int h) {
      const int kv_head = h / group;
      const float* keys = layer_keys + first_key * kv_dim + kv_head * head_dim;
      const float* values = layer_values + first_key * kv_dim + kv_head * head_dim;
      float* scores = all_scores + long(h) * scores_per_head;  // each tile's (rows, tile_keys)
      for (int tile = 0; tile < seq.length; tile += tile_rows) {
        const int rows = std::min(tile_rows, seq.length - tile);
        // Key j is visible to no query of a causal tile past its last query's own key.
        const int tile_keys =
            causal && !captured ? std::min(n_keys, seq.n_past + tile + rows - dropped) : n_keys;
        const float* query = state.query.data() + long(seq.row + tile) * q_dim + h * head_dim;
        float* context = state.context.data() + long(seq.row + tile) * q_dim + h * head_dim;
        if (rows > 1 && !captured && tile_keys > state.key_block) {
          attend_in_key_blocks(h, seq.n_past + tile, rows, tile_keys, query, keys, values, scores,
                               context);
          continue;
        }

        // scores = scale * Q K^T, heads read in place from the (rows, q_dim) and cache layouts.
        // One query (a decode step) is a matrix-vector product, for which the GEMM's packing
        // costs more than the arithmetic: it goes through the f32 kernels instead.
        // A decode step of a windowed layer reads only its last `window` keys: the `skip` before
        // them are masked, and cost nothing.
        const int skip = causal && window > 0 && rows == 1 ? std::max(0, tile_keys - window) : 0;
        if (rows == 1) {
          std::fill_n(scores, skip, 0.0f);
          f32_kernels.dot_rows(scores + skip, keys + long(skip) * kv_dim, kv_dim, query, head_dim,
                               tile_keys - skip);
          for (int j = skip; j < tile_keys; ++j) scores[j] *= scale;
        } else {
          multiply_by_keys(scores, query, rows, keys, tile_keys);
        }
        for (int i = 0; i < rows; ++i) {
          float* row = scores + long(i) * tile_keys;
          const int position = seq.n_past + tile + i;  // the query's
          add_position_biases(row, h, position, 0, tile_keys);
          const auto [first, end] = visible_keys(position, tile_keys);
          if (layer_spec.score_softcap > 0) {
            soft_cap(row + first, end - first, layer_spec.score_softcap);  // visible keys only
          }
          std::fill(row, row + first, 0.0f);
          softmax_row(row + first, end - first);
          std::fill(row + end, row + tile_keys, 0.0f);
        }
        // context = scores V, written into this head's columns.
        if (rows == 1) {
          std::fill_n(context, head_dim, 0.0f);
          f32_kernels.accumulate_rows(context, values + long(skip) * kv_dim, kv_dim, scores + skip,
                                      tile_keys - skip, head_dim);
        } else {
          for (int i = 0; i < rows; ++i) std::fill_n(context + long(i) * q_dim, head_dim, 0.0f);
          add_values(context, scores, rows, values, tile_keys);
        }
      }
    });
    // Observers run on this thread, after the parallel part, so they need no locking. They see
    // every key from the sequence's first, the dropped ones with probability 0.
    if (!captured) continue;
    std::vector<float> all_keys;  // (length, dropped + n_keys) when keys were dropped
    for (int h = 0; h < spec_.n_head; ++h) {
      if (!observer->wants_attention(layer, h)) continue;
      const float* probabilities = all_scores + long(h) * scores_per_head;  // (length, n_keys)
      if (dropped == 0) {
        (*report)(layer, h, int(s), probabilities, seq.length, n_keys);
        continue;
      }
      all_keys.assign(std::size_t(seq.length) * (dropped + n_keys), 0.0f);
      for (int i = 0; i < seq.length; ++i) {
        std::copy_n(probabilities + long(i) * n_keys, n_keys,
                    all_keys.begin() + long(i) * (dropped + n_keys) + dropped);
      }
      (*report)(layer, h, int(s), all_keys.data(), seq.length, dropped + n_keys);
    }
  }
  const auto* head_outputs = !observer ? nullptr
                             : cross   ? &observer->on_cross_head_outputs
                                       : &observer->on_head_outputs;
  if (head_outputs && *head_outputs) (*head_outputs)(layer, state.context.data(), batch.rows());
  linear_forward(state.sublayer.data(), state.context.data(), batch.rows(), output,
                 batch.row_kind());
}

}  // namespace attn
