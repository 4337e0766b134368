#pragma once

#include <functional>
#include <span>
#include <vector>

#include "src/model/model.h"

// Perplexity of a decoder on a text, by Hugging Face's sliding-window recipe ("Perplexity of
// fixed-length models"): windows of `window` tokens start every `stride` tokens; each runs on
// its own (positions from 0, no cache from earlier windows), and scores only the tokens that no
// earlier window scored, the overlap serving as context. Position 0 of the text, and with
// stride == window the first token of every window, have no prediction and are not scored.

namespace attn {

struct PerplexityOptions {
  int window = 0;  // tokens per window, at most the model's context
  int stride = 0;  // tokens between window starts, 1..window
  // Windows shorter than this are packed into batches of up to this many tokens.
  int max_batch_rows = 1024;
};

struct PerplexityWindow {
  int begin = 0;     // first token of the window
  int end = 0;       // one past its last
  int n_scored = 0;  // tokens it scores
  double nll_sum = 0;
};

struct PerplexityResult {
  std::vector<PerplexityWindow> windows;
  // -log p(token | its window's earlier tokens) for every position of the text, in nats; NaN
  // where the position is not scored.
  std::vector<double> token_nll;
  int n_scored = 0;
  double nll_sum = 0;
  double mean_nll() const { return nll_sum / n_scored; }
  double perplexity() const;
};

// The windows the recipe runs over a text of n tokens: [begin, end) and how many tokens each
// scores. Throws UsageError for a stride outside 1..window.
std::vector<PerplexityWindow> perplexity_windows(int n, const PerplexityOptions& options);

// Scores `ids` (at least 2 tokens). `on_window`, when given, hears after each window how many
// of the windows are done.
PerplexityResult perplexity(const Model& model, std::span<const int> ids,
                            const PerplexityOptions& options,
                            const std::function<void(int done, int total)>& on_window = {});

}  // namespace attn
