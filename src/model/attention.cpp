// Multi-head self-attention of one layer, with its KV cache and the position schemes that act
// inside it (rotary queries and keys, ALiBi score bias). Grouped-query attention: n_head query
// heads share n_kv_head key/value heads, query head h reading kv head h / (n_head / n_kv_head).
#include <cblas.h>

#include <algorithm>
#include <cmath>

#include "src/kernels/thread_pool.h"
#include "src/kernels/weight_kernels.h"
#include "src/model/transformer.h"

namespace attn {

void Transformer::attention(int layer, const float* input, const Batch& batch, KVCache& cache,
                            RunState& state, const ForwardObserver* observer) const {
  const AttentionWeights& w = weights_.layers[layer].attention;
  const int head_dim = spec_.head_dim;
  const int q_dim = spec_.q_dim();
  const int kv_dim = spec_.kv_dim();
  const int group = spec_.n_head / spec_.n_kv_head;
  const float scale = 1.0f / std::sqrt(float(head_dim));
  const int rows = batch.rows();
  float* layer_keys = cache.keys.data() + std::size_t(layer) * cache.capacity * kv_dim;
  float* layer_values = cache.values.data() + std::size_t(layer) * cache.capacity * kv_dim;
  float* new_keys = layer_keys + long(batch.cache_offset) * kv_dim;  // (rows, kv_dim)

  const LinearOutput projections[] = {
      {.linear = &w.query, .y = state.query.data()},
      {.linear = &w.key, .y = new_keys},
      {.linear = &w.value, .y = layer_values + long(batch.cache_offset) * kv_dim}};
  linear_forward_shared_input(projections, input, rows);
  const WeightKernels& f32_kernels = weight_kernels(WeightType::kF32);  // for one-query heads
  if (positions_.rotary) {
    const RotaryEmbedding& rotary = *positions_.rotary;
    rotary.rotate(state.query.data(), rows, q_dim, spec_.n_head, head_dim, state.rotary_cos.data(),
                  state.rotary_sin.data());
    rotary.rotate(new_keys, rows, kv_dim, spec_.n_kv_head, head_dim, state.rotary_cos.data(),
                  state.rotary_sin.data());
  }

  for (std::size_t s = 0; s < batch.sequences.size(); ++s) {
    const SequenceSlice& seq = batch.sequences[s];
    const int n_keys = seq.n_past + seq.length;
    const long first_key = long(seq.row) + batch.cache_offset - seq.n_past;
    // One task per head, each with its own scores (length, n_keys).
    auto head_scores = [&](int h) { return state.scores.data() + long(h) * state.scores_per_head; };
    thread_pool().run(spec_.n_head, [&](int h) {
      const int kv_head = h / group;
      const float* query = state.query.data() + long(seq.row) * q_dim + h * head_dim;
      const float* keys = layer_keys + first_key * kv_dim + kv_head * head_dim;
      const float* values = layer_values + first_key * kv_dim + kv_head * head_dim;
      float* scores = head_scores(h);

      // scores = scale * Q K^T, heads read in place from the (rows, q_dim) and cache layouts.
      // One query (a decode step) is a matrix-vector product, for which a BLAS call costs more
      // than the arithmetic: it goes through the f32 kernels instead.
      if (seq.length == 1) {
        f32_kernels.dot_rows(scores, keys, kv_dim, query, head_dim, n_keys);
        for (int j = 0; j < n_keys; ++j) scores[j] *= scale;
      } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, seq.length, n_keys, head_dim, scale,
                    query, q_dim, keys, kv_dim, 0.0f, scores, n_keys);
      }
      for (int i = 0; i < seq.length; ++i) {
        float* row = scores + long(i) * n_keys;
        if (!positions_.alibi_slopes.empty()) {
          // BLOOM adds slope * key position rather than -slope * distance: the two differ by a
          // constant per row, which the softmax removes.
          const float slope = positions_.alibi_slopes[h];
          for (int j = 0; j < n_keys; ++j) row[j] += slope * float(j);
        }
        const int visible = spec_.causal ? seq.n_past + i + 1 : n_keys;
        softmax_row(row, visible);
        std::fill(row + visible, row + n_keys, 0.0f);
      }
      // context = scores V, written into this head's columns.
      float* context = state.context.data() + long(seq.row) * q_dim + h * head_dim;
      if (seq.length == 1) {
        std::fill_n(context, head_dim, 0.0f);
        f32_kernels.accumulate_rows(context, values, kv_dim, scores, n_keys, head_dim);
      } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, seq.length, head_dim, n_keys, 1.0f,
                    scores, n_keys, values, kv_dim, 0.0f, context, q_dim);
      }
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
  linear_forward(state.sublayer.data(), state.context.data(), rows, w.output);
}

}  // namespace attn
