#include "src/tasks/classify.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attn {

ScoreFunction default_score_function(const std::string& problem_type, int n_labels) {
  if (problem_type == "multi_label_classification" || n_labels == 1) return ScoreFunction::kSigmoid;
  if (problem_type == "regression") return ScoreFunction::kNone;
  return ScoreFunction::kSoftmax;
}

std::vector<float> class_scores(std::span<const float> logits, ScoreFunction function) {
  std::vector<float> scores(logits.begin(), logits.end());
  switch (function) {
    case ScoreFunction::kSoftmax: {
      const float largest = *std::max_element(scores.begin(), scores.end());
      float sum = 0;
      for (float& score : scores) sum += score = std::exp(score - largest);
      for (float& score : scores) score /= sum;
      break;
    }
    case ScoreFunction::kSigmoid:
      for (float& score : scores) score = 1.0f / (1.0f + std::exp(-score));
      break;
    case ScoreFunction::kNone:
      break;
  }
  return scores;
}

std::vector<LabelScore> ranked_labels(std::span<const float> scores,
                                      const std::vector<std::string>& labels, int top_k) {
  std::vector<int> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return scores[a] > scores[b]; });
  if (top_k > 0 && top_k < int(order.size())) order.resize(top_k);
  std::vector<LabelScore> ranked;
  for (int id : order) ranked.push_back({labels[id], scores[id]});
  return ranked;
}

}  // namespace attn
