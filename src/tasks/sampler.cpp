#include "src/tasks/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attn {

int argmax(std::span<const float> values) {
  return int(std::max_element(values.begin(), values.end()) - values.begin());
}

Sampler::Sampler(const SamplingOptions& options) : options_(options), rng_(options.seed) {}

int Sampler::next(std::span<float> logits, std::span<const int> context) {
  if (options_.repetition_penalty != 1.0f) {
    std::vector<bool> seen(logits.size(), false);
    for (int id : context) {
      if (seen[id]) continue;
      seen[id] = true;
      float& logit = logits[id];
      logit = logit > 0 ? logit / options_.repetition_penalty : logit * options_.repetition_penalty;
    }
  }
  if (options_.temperature == 0.0f) return argmax(logits);

  // Every token is a candidate. Only when top-k or top-p will cut the list is it sorted by
  // descending logit (and then only as far as top-k keeps): sorting the whole vocabulary for
  // every token would cost more than the rest of sampling.
  candidates_.resize(logits.size());
  std::iota(candidates_.begin(), candidates_.end(), 0);
  std::size_t keep = logits.size();
  if (options_.top_k > 0) keep = std::min<std::size_t>(keep, options_.top_k);
  if (options_.top_k > 0 || options_.top_p < 1.0f) {
    auto by_logit = [&](int a, int b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    };
    std::partial_sort(candidates_.begin(), candidates_.begin() + keep, candidates_.end(), by_logit);
    candidates_.resize(keep);
  }

  std::vector<double>& probabilities = probabilities_;
  probabilities.resize(keep);
  const double max_logit = logits[argmax(logits)];
  double sum = 0;
  for (std::size_t i = 0; i < keep; ++i) {
    probabilities[i] = std::exp((logits[candidates_[i]] - max_logit) / options_.temperature);
    sum += probabilities[i];
  }
  if (options_.top_p < 1.0f) {
    // Keep the smallest prefix whose probability reaches top_p (at least one token).
    double cumulative = 0;
    std::size_t cut = 0;
    while (cut < keep) {
      cumulative += probabilities[cut++] / sum;
      if (cumulative >= options_.top_p) break;
    }
    probabilities.resize(cut);
    candidates_.resize(cut);
  }
  std::discrete_distribution<std::size_t> draw(probabilities.begin(), probabilities.end());
  return candidates_[draw(rng_)];
}

}  // namespace attn
