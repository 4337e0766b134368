#include "src/tasks/logit_lens.h"

#include <algorithm>
#include <cmath>

#include "src/base/error.h"
#include "src/kernels/ops.h"

namespace attn {
namespace {

// The lens's logits are computed for this many positions at a time: (rows, vocab) floats.
constexpr int kLensRows = 16;

// The top_k entries of one row of logits (vocab), highest first, equal logits by lower id, with
// log-probabilities against `log_sum` (logsumexp of the row).
void top_entries(const float* logits, int vocab, int top_k, double log_sum, LensEntry* out,
                 std::vector<int>& order) {
  order.resize(vocab);
  for (int i = 0; i < vocab; ++i) order[i] = i;
  const auto before = [&](int a, int b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  std::partial_sort(order.begin(), order.begin() + top_k, order.end(), before);
  for (int k = 0; k < top_k; ++k) {
    const int id = order[k];
    out[k] = {.id = id, .logprob = double(logits[id]) - log_sum, .logit = logits[id]};
  }
}

}  // namespace

void check_lens_model(const Model& model, const std::string& command) {
  if (!model.transformer->has_head()) {
    throw UsageError(command + ": the model in " + model.name() +
                     " has no language-model head (a bare encoder or a classifier), so its "
                     "layers cannot be read as token predictions");
  }
}

LogitLens logit_lens(const Model& model, const Encoding& encoding, int top_k,
                     std::optional<int> target_id, const CrossAttentionMemory* memory) {
  const Transformer& transformer = *model.transformer;
  const ArchSpec& spec = model.spec();
  const int n = int(encoding.ids.size());
  const int d = spec.d_model;
  const int depths = spec.n_layer + 1;
  const int vocab = spec.vocab_size;
  top_k = std::min(top_k, vocab);

  // The residual stream at every depth: (depths, n, d).
  std::vector<float> residual(std::size_t(depths) * n * d);
  ForwardObserver observer;
  observer.on_hidden = [&](int layer, const float* hidden, int rows) {
    if (layer < spec.n_layer) {
      std::copy_n(hidden, std::size_t(rows) * d, residual.begin() + std::size_t(layer + 1) * n * d);
    }
  };
  KVCache cache(spec, n, spec.n_layer);
  RunState state(spec, n, std::max(n, memory ? memory->length : 0));
  Batch batch;
  batch.add_sequence(encoding.ids, encoding.type_ids);
  batch.memory = memory;
  transformer.forward(batch, cache, state, &observer);

  LogitLens lens{.depths = depths,
                 .n_tokens = n,
                 .top_k = top_k,
                 .top = std::vector<LensEntry>(std::size_t(depths) * n * top_k),
                 .target_id = 0,
                 .target_rank = {},
                 .target_logprob = {}};
  const std::optional<int> mask = model.tokenizer->mask_id();
  const auto first_mask = std::find(encoding.ids.begin(), encoding.ids.end(), mask.value_or(-1));
  lens.target_position = spec.causal || first_mask == encoding.ids.end()
                             ? n - 1
                             : int(first_mask - encoding.ids.begin());
  // The target position's logits and logsumexp at every depth.
  std::vector<float> target_logits(std::size_t(depths) * vocab);
  std::vector<double> target_log_sum(depths);
  std::vector<float> logits(std::size_t(std::min(n, kLensRows)) * vocab);
  std::vector<int> rows, order;
  for (int depth = 0; depth < depths; ++depth) {
    // compute_logits reads state.hidden: the stream at this depth, through the final norm.
    std::copy_n(residual.begin() + std::size_t(depth) * n * d, std::size_t(n) * d,
                state.hidden.begin());
    transformer.apply_final_norm(state.hidden.data(), n);
    for (int first = 0; first < n; first += kLensRows) {
      rows.clear();
      for (int t = first; t < std::min(n, first + kLensRows); ++t) rows.push_back(t);
      transformer.compute_logits(state, rows, logits.data());
      for (std::size_t r = 0; r < rows.size(); ++r) {
        const float* row = logits.data() + r * vocab;
        const double log_sum = log_sum_exp(row, vocab);
        const int t = rows[r];
        top_entries(row, vocab, top_k, log_sum,
                    lens.top.data() + (std::size_t(depth) * n + t) * top_k, order);
        if (t == lens.target_position) {
          std::copy_n(row, vocab, target_logits.begin() + std::size_t(depth) * vocab);
          target_log_sum[depth] = log_sum;
        }
      }
    }
  }

  lens.target_id = target_id ? *target_id : lens.entries(depths - 1, lens.target_position)[0].id;
  for (int depth = 0; depth < depths; ++depth) {
    const float* row = target_logits.data() + std::size_t(depth) * vocab;
    const float logit = row[lens.target_id];
    lens.target_rank.push_back(1 +
                               std::count_if(row, row + vocab, [&](float x) { return x > logit; }));
    lens.target_logprob.push_back(double(logit) - target_log_sum[depth]);
  }
  return lens;
}

}  // namespace attn
