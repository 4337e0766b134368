#include "src/tasks/head_ablation.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "src/kernels/ops.h"
#include "src/kernels/thread_pool.h"

namespace attn {
namespace {

// Logits of this many scored rows at a time: (kLogitRows, vocab). Each call packs the whole
// output matrix anew; 256 rows make that a small part, as in perplexity.cpp.
constexpr int kLogitRows = 256;

// Splits the inputs into batches of up to max_rows rows (an input longer than that alone).
std::vector<std::pair<std::size_t, std::size_t>> batch_ranges(std::span<const AblationInput> inputs,
                                                              int max_rows) {
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  for (std::size_t first = 0; first < inputs.size();) {
    std::size_t end = first;
    int rows = 0;
    while (end < inputs.size() &&
           (end == first || rows + int(inputs[end].ids.size()) <= max_rows)) {
      rows += int(inputs[end].ids.size());
      ++end;
    }
    ranges.emplace_back(first, end);
    first = end;
  }
  return ranges;
}

// The NLL sum of the batch's scored tokens, from the hidden states the last pass left in `state`.
double scored_nll_sum(const Model& model, std::span<const AblationInput> inputs, const Batch& batch,
                      RunState& state, std::vector<float>& logits) {
  const int vocab = model.spec().vocab_size;
  struct Scored {
    int row;
    int target;
  };
  std::vector<Scored> scored;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    for (std::size_t k = 0; k < inputs[i].scored_positions.size(); ++k) {
      scored.push_back(
          {batch.sequences[i].row + inputs[i].scored_positions[k], inputs[i].targets[k]});
    }
  }
  double sum = 0;
  std::vector<int> rows;
  std::vector<double> nll(kLogitRows);
  for (std::size_t first = 0; first < scored.size(); first += kLogitRows) {
    const std::size_t count = std::min<std::size_t>(kLogitRows, scored.size() - first);
    rows.clear();
    for (std::size_t i = first; i < first + count; ++i) rows.push_back(scored[i].row);
    model.transformer->compute_logits(state, rows, logits.data());
    // A small model's pass costs little beside these sums over its vocabulary: one row a task.
    thread_pool().run(int(count), [&](int i) {
      const float* row = logits.data() + std::size_t(i) * vocab;
      nll[i] = log_sum_exp(row, vocab) - row[scored[first + i].target];
    });
    for (std::size_t i = 0; i < count; ++i) sum += nll[i];
  }
  return sum;
}

}  // namespace

long AblationResult::blocks_whole_passes() const {
  const long ablated = std::count_if(zero_nll_sum.begin(), zero_nll_sum.end(),
                                     [](double sum) { return !std::isnan(sum); });
  return long(n_layers) * n_positions * (2 + 2 * ablated);
}

AblationInput next_token_input(Encoding encoding) {
  AblationInput input{.ids = std::move(encoding.ids),
                      .type_ids = std::move(encoding.type_ids),
                      .scored_positions = {},
                      .targets = {}};
  for (std::size_t t = 0; t + 1 < input.ids.size(); ++t) {
    input.scored_positions.push_back(int(t));
    input.targets.push_back(input.ids[t + 1]);
  }
  return input;
}

AblationResult ablate_heads(const Model& model, std::span<const AblationInput> inputs,
                            const AblationHeads& heads, int max_batch_tokens,
                            const AblationProgress& progress) {
  const Transformer& transformer = *model.transformer;
  const ArchSpec& spec = model.spec();
  const int n_layers = spec.n_layer, n_heads = spec.n_head, head_dim = spec.head_dim;
  const int d = spec.d_model, q_dim = spec.q_dim();
  int longest = 0;
  for (const AblationInput& input : inputs) longest = std::max(longest, int(input.ids.size()));
  const int max_rows = std::max(longest, max_batch_tokens);
  const auto ranges = batch_ranges(inputs, max_rows);

  AblationResult result{
      .n_layers = n_layers,
      .n_heads = n_heads,
      .head_dim = head_dim,
      .n_inputs = long(inputs.size()),
      .zero_nll_sum = std::vector<double>(std::size_t(n_layers) * n_heads,
                                          std::numeric_limits<double>::quiet_NaN()),
      .mean_nll_sum = std::vector<double>(std::size_t(n_layers) * n_heads,
                                          std::numeric_limits<double>::quiet_NaN()),
      .mu = std::vector<float>(std::size_t(n_layers) * q_dim)};
  for (int layer : heads.layers) {
    for (int head : heads.heads) {
      result.zero_nll_sum[std::size_t(layer) * n_heads + head] = 0;
      result.mean_nll_sum[std::size_t(layer) * n_heads + head] = 0;
    }
  }
  KVCache cache(spec, max_rows, n_layers);
  RunState state(spec, max_rows, longest);
  const auto fill_batch = [&](Batch& batch, std::size_t first, std::size_t end) {
    batch.clear();
    for (std::size_t i = first; i < end; ++i) batch.add_sequence(inputs[i].ids, inputs[i].type_ids);
  };

  // Pass 1: mu, the mean head output over every position of every input. (n_layers, q_dim)
  std::vector<double> output_sums(std::size_t(n_layers) * q_dim, 0.0);
  ForwardObserver summing;
  summing.on_head_outputs = [&](int layer, float* outputs, int rows) {
    double* sums = output_sums.data() + std::size_t(layer) * q_dim;
    for (long r = 0; r < rows; ++r) {
      for (int c = 0; c < q_dim; ++c) sums[c] += outputs[r * q_dim + c];
    }
  };
  Batch batch;
  for (const auto& [first, end] : ranges) {
    fill_batch(batch, first, end);
    transformer.forward(batch, cache, state, &summing);
    result.n_positions += batch.rows();
    result.blocks_run += long(n_layers) * batch.rows();
    if (progress) progress(1, long(end));
  }
  for (std::size_t i = 0; i < output_sums.size(); ++i) {
    result.mu[i] = float(output_sums[i] / double(result.n_positions));
  }

  // Pass 2, batch by batch: the baseline, keeping the stream entering every layer (the
  // embeddings' output, reported as layer -1, enters layer 0), then each ablation from its
  // layer on.
  std::vector<float> logits(std::size_t(kLogitRows) * spec.vocab_size);
  std::vector<float> entering(std::size_t(n_layers) * max_rows * d);  // (n_layers, rows, d)
  ForwardObserver keeping;
  keeping.on_hidden = [&](int layer, const float* hidden, int rows) {
    if (layer + 1 < n_layers) {
      std::copy_n(hidden, std::size_t(rows) * d,
                  entering.begin() + std::size_t(layer + 1) * max_rows * d);
    }
  };
  int ablated_layer = 0, ablated_head = 0;
  const float* replacement = nullptr;  // head_dim values, or null for zeros
  ForwardObserver ablating;
  ablating.on_head_outputs = [&](int layer, float* outputs, int rows) {
    if (layer != ablated_layer) return;
    for (long r = 0; r < rows; ++r) {
      float* slice = outputs + r * q_dim + std::size_t(ablated_head) * head_dim;
      if (replacement) {
        std::copy_n(replacement, head_dim, slice);
      } else {
        std::fill_n(slice, head_dim, 0.0f);
      }
    }
  };
  for (const auto& [first, end] : ranges) {
    const std::span<const AblationInput> part = inputs.subspan(first, end - first);
    fill_batch(batch, first, end);
    transformer.forward(batch, cache, state, &keeping);
    const int rows = batch.rows();
    result.baseline_nll_sum += scored_nll_sum(model, part, batch, state, logits);
    result.blocks_run += long(n_layers) * rows;
    for (const AblationInput& input : part) result.n_scored += long(input.scored_positions.size());
    for (int layer : heads.layers) {
      for (int head : heads.heads) {
        ablated_layer = layer;
        ablated_head = head;
        for (const bool mean : {false, true}) {
          replacement =
              mean ? result.mu.data() + std::size_t(layer) * q_dim + head * head_dim : nullptr;
          std::copy_n(entering.begin() + std::size_t(layer) * max_rows * d, std::size_t(rows) * d,
                      state.hidden.begin());
          transformer.forward_from(layer, batch, cache, state, &ablating);
          const double sum = scored_nll_sum(model, part, batch, state, logits);
          (mean ? result.mean_nll_sum : result.zero_nll_sum)[std::size_t(layer) * n_heads + head] +=
              sum;
          result.blocks_run += long(n_layers - layer) * rows;
        }
      }
    }
    if (progress) progress(2, long(end));
  }
  return result;
}

}  // namespace attn
