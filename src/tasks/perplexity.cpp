#include "src/tasks/perplexity.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "src/base/error.h"
#include "src/kernels/ops.h"

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

  // Consecutive windows are packed into one batch of up to max_batch_rows rows (attention stays
  // within each), so that short windows still give the linear layers a tall matrix.
  const int window = std::min(options.window, n);
  const int max_rows = std::max(window, options.max_batch_rows);
  KVCache cache(spec, max_rows, spec.n_layer);
  RunState state(spec, max_rows, window);
  // Logits of this many rows at a time: (kLogitRows, vocab), not (rows, vocab). Each call
  // multiplies by the whole output matrix (GPT-2: 50257 x 768), which BLAS packs anew: 256 rows
  // make that a small part (perplexity 1.3x faster than 32 rows on GPT-2 124M).
  constexpr int kLogitRows = 256;
  std::vector<float> logits(std::size_t(kLogitRows) * spec.vocab_size);
  std::vector<int> rows;  // (<= kLogitRows) rows of the batch whose logits are computed
  struct ScoredToken {
    int position;  // in the text
    int row;       // in the batch: the row of position - 1
    std::size_t window;
  };
  std::vector<ScoredToken> scored;
  Batch batch;
  const std::size_t n_windows = result.windows.size();
  for (std::size_t first_window = 0; first_window < n_windows;) {
    batch.clear();
    std::size_t end_window = first_window;
    for (; end_window < n_windows; ++end_window) {
      const PerplexityWindow& w = result.windows[end_window];
      if (end_window > first_window && batch.rows() + (w.end - w.begin) > max_rows) break;
      batch.add_sequence(ids.subspan(w.begin, w.end - w.begin));
    }
    model.transformer->forward(batch, cache, state);
    // Every scored position p of the batch's windows, with the row that predicts it (that of
    // p - 1) and its window; their logits are computed kLogitRows at a time.
    scored.clear();
    for (std::size_t w = first_window; w < end_window; ++w) {
      const PerplexityWindow& current = result.windows[w];
      const int row_of_begin = batch.sequences[w - first_window].row;
      for (int p = current.end - current.n_scored; p < current.end; ++p) {
        scored.push_back({.position = p, .row = row_of_begin + p - current.begin - 1, .window = w});
      }
    }
    for (std::size_t first = 0; first < scored.size(); first += kLogitRows) {
      const std::size_t count = std::min<std::size_t>(kLogitRows, scored.size() - first);
      rows.clear();
      for (std::size_t i = first; i < first + count; ++i) rows.push_back(scored[i].row);
      model.transformer->compute_logits(state, rows, logits.data());
      for (std::size_t i = 0; i < count; ++i) {
        const ScoredToken& token = scored[first + i];
        const float* row = logits.data() + i * spec.vocab_size;
        const double nll = log_sum_exp(row, spec.vocab_size) - row[ids[token.position]];
        result.token_nll[token.position] = nll;
        result.windows[token.window].nll_sum += nll;
      }
    }
    for (std::size_t w = first_window; w < end_window; ++w) {
      result.n_scored += result.windows[w].n_scored;
      result.nll_sum += result.windows[w].nll_sum;
      if (on_window) on_window(int(w) + 1, int(n_windows));
    }
    first_window = end_window;
  }
  return result;
}

}  // namespace attn
