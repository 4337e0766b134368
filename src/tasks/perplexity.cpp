#include "src/tasks/perplexity.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "src/base/error.h"

namespace attn {

double PerplexityResult::perplexity() const { return std::exp(mean_nll()); }

std::vector<PerplexityWindow> perplexity_windows(int n, const PerplexityOptions& options) {
  if (options.window < 1) {
    throw UsageError("--window: must be >= 1, got " + std::to_string(options.window));
  }
  if (options.stride < 1 || options.stride > options.window) {
    throw UsageError("--stride: must be in 1..--window (" + std::to_string(options.window) +
                     "), got " + std::to_string(options.stride));
  }
  std::vector<PerplexityWindow> windows;
  int scored_until = 0;  // tokens before this were scored by an earlier window, or are token 0
  for (int begin = 0; begin < n; begin += options.stride) {
    const int end = std::min(begin + options.window, n);
    // Within a window, the token at begin + j is predicted by row j - 1: its first token never
    // is. Of the others, those an earlier window scored are context only.
    const int first_scored = std::max(begin + 1, scored_until);
    windows.push_back({.begin = begin, .end = end, .n_scored = std::max(0, end - first_scored)});
    scored_until = end;
    if (end == n) break;
  }
  return windows;
}

PerplexityResult perplexity(const Model& model, std::span<const int> ids,
                            const PerplexityOptions& options,
                            const std::function<void(int done, int total)>& on_window) {
  const ArchSpec& spec = model.spec();
  const int n = static_cast<int>(ids.size());
  if (n < 2) {
    throw Error("the text has " + std::to_string(n) +
                " token(s): perplexity needs at least 2 (one to predict from, one to score)");
  }
  if (options.window > spec.max_positions) {
    throw UsageError("--window: " + std::to_string(options.window) +
                     " tokens is more than the model's context of " +
                     std::to_string(spec.max_positions));
  }
  PerplexityResult result;
  result.windows = perplexity_windows(n, options);
  result.token_nll.assign(n, std::numeric_limits<double>::quiet_NaN());

  const int window = std::min(options.window, n);
  KVCache cache(spec, window, spec.n_layer);
  RunState state(spec, window, window);
  // Logits of this many rows at a time: (kLogitRows, vocab), not (window, vocab).
  constexpr int kLogitRows = 32;
  std::vector<float> logits(std::size_t(kLogitRows) * spec.vocab_size);
  std::vector<int> rows;
  Batch batch;
  for (std::size_t w = 0; w < result.windows.size(); ++w) {
    PerplexityWindow& current = result.windows[w];
    batch.clear();
    batch.add_sequence(ids.subspan(current.begin, current.end - current.begin));
    model.transformer->forward(batch, cache, state);
    // Scored positions p in [end - n_scored, end), predicted by row p - begin - 1.
    for (int first = current.end - current.n_scored; first < current.end; first += kLogitRows) {
      const int count = std::min(kLogitRows, current.end - first);
      rows.clear();
      for (int p = first; p < first + count; ++p) rows.push_back(p - current.begin - 1);
      model.transformer->compute_logits(state, rows, logits.data());
      for (int i = 0; i < count; ++i) {
        const float* row = logits.data() + std::size_t(i) * spec.vocab_size;
        // -log_softmax(row)[target] = max + log(sum exp(row - max)) - row[target]. The exp in
        // float (each term within an ulp; double's costs several times as much, per vocabulary
        // entry per token), summed in double.
        const float max = *std::max_element(row, row + spec.vocab_size);
        double sum = 0;
        for (int v = 0; v < spec.vocab_size; ++v) sum += std::exp(row[v] - max);
        const double nll = max + std::log(sum) - row[ids[first + i]];
        result.token_nll[first + i] = nll;
        current.nll_sum += nll;
      }
    }
    result.n_scored += current.n_scored;
    result.nll_sum += current.nll_sum;
    if (on_window) on_window(int(w) + 1, int(result.windows.size()));
  }
  return result;
}

}  // namespace attn
