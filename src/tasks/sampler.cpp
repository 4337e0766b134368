#include "src/tasks/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attn {

int argmax(std::span<const float> values) {
  return int(std::max_element(values.begin(), values.end()) - values.begin());
}

Sampler::Sampler(const SamplingOptions& options) : options_(options), rng_(options.seed) {}

void Sampler::apply_repetition_penalty(std::span<float> logits,
                                       std::span<const int> context) const {
  if (options_.repetition_penalty == 1.0f || options_.repeat_last_n == 0) return;
  if (options_.repeat_last_n > 0 && context.size() > std::size_t(options_.repeat_last_n)) {
    context = context.last(std::size_t(options_.repeat_last_n));
  }
  std::vector<bool> seen(logits.size(), false);
  for (int id : context) {
    if (seen[id]) continue;
    seen[id] = true;
    float& logit = logits[id];
    logit = logit > 0 ? logit / options_.repetition_penalty : logit * options_.repetition_penalty;
  }
}

void Sampler::filter(std::span<float> logits, std::span<const int> context) {
  apply_repetition_penalty(logits, context);
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

  // exp((logit - max) / temperature): the top token's is 1.
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
  if (options_.min_p > 0.0f) {
    // A probability relative to the top one does not depend on the normalization, so the
    // survivors of top-k and top-p need none: keep p >= min_p * 1 (the top token always).
    std::size_t kept = 0;
    for (std::size_t i = 0; i < candidates_.size(); ++i) {
      if (probabilities[i] >= options_.min_p) {
        candidates_[kept] = candidates_[i];
        probabilities[kept++] = probabilities[i];
      }
    }
    candidates_.resize(kept);
    probabilities.resize(kept);
  }
  if (options_.typical_p < 1.0f) keep_typical();
}

void Sampler::keep_typical() {
  // With q the renormalized survivors and H their entropy, a token is typical when its
  // information -log q is close to H. Tokens are taken by ascending |-log q - H| until their
  // mass reaches typical_p, as Hugging Face's TypicalLogitsWarper: it keeps the first
  // (count of cumulative masses below typical_p) + 1 of that order, and every token tied with
  // the last of them.
  const std::size_t n = candidates_.size();
  const double sum = std::accumulate(probabilities_.begin(), probabilities_.end(), 0.0);
  double entropy = 0;
  for (double p : probabilities_) {
    if (p > 0) entropy -= p / sum * std::log(p / sum);  // an underflowed token adds nothing
  }
  std::vector<double>& distance = typical_distance_;
  distance.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    distance[i] = std::abs(-std::log(probabilities_[i] / sum) - entropy);
  }
  std::vector<std::size_t>& order = typical_order_;
  order.resize(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return distance[a] < distance[b]; });
  std::size_t last = 0;  // the count of cumulative masses below typical_p, at most n - 1
  double cumulative = 0;
  for (std::size_t i = 0; i + 1 < n; ++i) {
    cumulative += probabilities_[order[i]] / sum;
    if (cumulative >= options_.typical_p) break;
    last = i + 1;
  }
  const double threshold = distance[order[last]];
  std::size_t kept = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (distance[i] <= threshold) {
      candidates_[kept] = candidates_[i];
      probabilities_[kept++] = probabilities_[i];
    }
  }
  candidates_.resize(kept);
  probabilities_.resize(kept);
}

int Sampler::next(std::span<float> logits, std::span<const int> context) {
  if (options_.temperature == 0.0f) {
    apply_repetition_penalty(logits, context);
    return argmax(logits);
  }
  filter(logits, context);
  std::discrete_distribution<std::size_t> draw(probabilities_.begin(), probabilities_.end());
  return candidates_[draw(rng_)];
}

}  // namespace attn
