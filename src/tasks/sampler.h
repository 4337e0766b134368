#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace attn {

struct SamplingOptions {
  float temperature = 1.0f;         // 0 = greedy
  int top_k = 0;                    // 0 = off
  float top_p = 1.0f;               // 1 = off
  float min_p = 0.0f;               // 0 = off; keep tokens with p >= min_p * (the top p)
  float typical_p = 1.0f;           // 1 = off; locally typical sampling (Meister et al., 2022)
  float repetition_penalty = 1.0f;  // 1 = off; as Hugging Face (CTRL paper): logit / p or * p
  // The tokens the penalty looks back over: -1 = the whole context, prompt included, as Hugging
  // Face's; N > 0 = the last N, as llama.cpp's --repeat-last-n; 0 = none (the penalty is off).
  int repeat_last_n = -1;
  uint64_t seed = 0;
};

// Chooses the next token from a row of logits, in the order of Hugging Face's logits processors:
// repetition penalty, temperature, top-k, top-p, min-p, typical-p, then a draw from what is left
// (or, at temperature 0, the argmax after the repetition penalty, the other filters unused).
// Each filter sees the distribution the previous ones left: top-p's mass and typical-p's entropy
// are those of the survivors, renormalized.
class Sampler {
 public:
  explicit Sampler(const SamplingOptions& options);

  // `logits` (vocab) is modified; `context` holds the ids seen so far (for the penalty).
  int next(std::span<float> logits, std::span<const int> context);

  // The tokens a draw chooses from after the filters, and their unnormalized probabilities
  // (parallel to candidates()), for sampling temperatures above 0. `logits` is modified.
  void filter(std::span<float> logits, std::span<const int> context);
  const std::vector<int>& candidates() const { return candidates_; }
  const std::vector<double>& probabilities() const { return probabilities_; }

 private:
  void apply_repetition_penalty(std::span<float> logits, std::span<const int> context) const;
  void keep_typical();

  SamplingOptions options_;
  std::mt19937_64 rng_;
  // Reused between calls: candidate ids (sorted by logit when top-k/top-p apply) and their
  // unnormalized probabilities.
  std::vector<int> candidates_;
  std::vector<double> probabilities_;
  std::vector<double> typical_distance_;    // (candidates) |-log q - entropy|
  std::vector<std::size_t> typical_order_;  // (candidates) by ascending distance
};

// Index of the largest value; the lowest index on exact ties, as torch.argmax.
int argmax(std::span<const float> values);

}  // namespace attn
