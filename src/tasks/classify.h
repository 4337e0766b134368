#pragma once

// Sequence classification as Hugging Face's TextClassificationPipeline reports it: the head's
// logits turned into scores by the pipeline's function, and the labels sorted by score.

#include <span>
#include <string>
#include <vector>

namespace attn {

// What turns logits into scores (the pipeline's function_to_apply).
enum class ScoreFunction { kSoftmax, kSigmoid, kNone };

// The pipeline's default: sigmoid for config.json's problem_type "multi_label_classification"
// or a single label, none for "regression", softmax otherwise.
ScoreFunction default_score_function(const std::string& problem_type, int n_labels);

// The scores of one input's logits (labels), computed in float32 as the pipeline's numpy
// functions do: softmax = exp(x - max) / sum, sigmoid = 1 / (1 + exp(-x)).
std::vector<float> class_scores(std::span<const float> logits, ScoreFunction function);

struct LabelScore {
  std::string label;
  float score = 0;
};

// The labels with their scores, highest first (ties keep the label order), at most top_k
// (0: all).
std::vector<LabelScore> ranked_labels(std::span<const float> scores,
                                      const std::vector<std::string>& labels, int top_k = 0);

}  // namespace attn
