#pragma once

// Classification as Hugging Face's pipelines report it: a classifier head's logits for texts (or
// text pairs) run in packed batches, turned into scores by the pipeline's function, and the
// labels sorted by score.

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/model/model.h"

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

// Throws UsageError unless `model` has the head `command` needs: a …ForSequenceClassification
// head for classify and rerank, a …ForTokenClassification head for ner. The message names the
// head the folder has and the command that fits it.
void require_sequence_classifier(const Model& model, const std::string& command);
void require_token_classifier(const Model& model, const std::string& command);

// A text, or a text pair, ready for the classifier.
struct ClassifierInput {
  Encoding encoding;       // ids and type ids, at most the model's context
  int dropped_tokens = 0;  // tokens cut off by truncation
};

// How an input longer than the model's context is cut (the pipelines' truncation).
enum class Truncation {
  kNone,          // it is an error
  kLongestFirst,  // a single text keeps its first tokens and its closing special token; a pair
                  // loses tokens from the end of its longer text, one at a time
  kOnlyFirst,     // a pair loses tokens from the end of its first text only (zero-shot)
};

// Tokenizes a text (and its pair) with the model's special tokens, as the pipelines do, and cuts
// it to the model's context as `truncation` says; throws Error when it is too long and may not
// be cut, or cannot be cut enough.
ClassifierInput encode_for_classifier(const Model& model, std::string_view text,
                                      std::optional<std::string_view> pair, Truncation truncation);

// Runs the inputs through the model, packed in order into batches of up to max_batch_tokens
// tokens, and calls on_logits(i, logits) for input i as soon as its batch is done, in input
// order: logits is (labels) for a sequence classifier, (tokens, labels) row-major for a token
// classifier, valid during the call only.
void classifier_logits(const Model& model, std::span<const Encoding> inputs, int max_batch_tokens,
                       const std::function<void(std::size_t, std::span<const float>)>& on_logits);

}  // namespace attn
