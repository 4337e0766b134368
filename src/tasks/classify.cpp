#include "src/tasks/classify.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "src/base/error.h"
#include "src/tasks/encoder_batches.h"

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

namespace {

void require_classifier(const Model& model, const std::string& command,
                        ClassifierHead::Pooling pooling, const std::string& wanted) {
  const ClassifierHead* head = model.transformer->classifier();
  if (!head || head->pooling != pooling) {
    throw UsageError(model.dir.string() + ": " + command + " needs a " + wanted +
                     " model; this one is " + model.description());
  }
}

}  // namespace

void require_sequence_classifier(const Model& model, const std::string& command) {
  require_classifier(model, command, ClassifierHead::Pooling::kFirstToken,
                     "…ForSequenceClassification");
}

void require_token_classifier(const Model& model, const std::string& command) {
  require_classifier(model, command, ClassifierHead::Pooling::kEveryToken,
                     "…ForTokenClassification");
}

ClassifierInput encode_for_classifier(const Model& model, std::string_view text,
                                      std::optional<std::string_view> pair, Truncation truncation) {
  ClassifierInput input{.encoding = model.tokenizer->encode(text, pair)};
  std::vector<int>& ids = input.encoding.ids;
  std::vector<int>& type_ids = input.encoding.type_ids;
  const std::size_t max_length = std::size_t(model.spec().max_positions);
  if (ids.size() <= max_length) return input;
  if (truncation == Truncation::kNone) {
    throw Error("is " + std::to_string(ids.size()) + " tokens, longer than the model's " +
                std::to_string(max_length) + " (--truncate cuts it)");
  }
  input.dropped_tokens = int(ids.size() - max_length);
  if (!pair) {
    truncate_keeping_last(ids, max_length);
    truncate_keeping_last(type_ids, max_length);
    return input;
  }
  // A pair is special tokens around the two texts' own tokens, each encoded alone: find where
  // each text's tokens sit, cut the end of the longer one (or of the first) by one token at a
  // time as the slow tokenizers do, and keep every special token.
  const std::vector<int> first = model.tokenizer->encode_plain(text);
  const std::vector<int> second = model.tokenizer->encode_plain(*pair);
  const auto first_at = std::search(ids.begin(), ids.end(), first.begin(), first.end());
  const auto second_at =
      std::search(first_at + long(first.size()), ids.end(), second.begin(), second.end());
  const std::size_t cuttable =
      first.size() + (truncation == Truncation::kOnlyFirst ? 0 : second.size());
  if (first_at == ids.end() || second_at == ids.end() ||
      cuttable < std::size_t(input.dropped_tokens)) {
    throw Error("is " + std::to_string(ids.size()) + " tokens, longer than the model's " +
                std::to_string(max_length) + ", and cannot be cut enough");
  }
  std::size_t first_kept = first.size(), second_kept = second.size();
  for (int i = 0; i < input.dropped_tokens; ++i) {
    const bool cut_first = truncation == Truncation::kOnlyFirst || first_kept > second_kept;
    (cut_first ? first_kept : second_kept) -= 1;
  }
  // Cut the second text first so that the first one's positions stay valid.
  const long second_begin = second_at - ids.begin(), first_begin = first_at - ids.begin();
  for (std::vector<int>* values : {&ids, &type_ids}) {
    values->erase(values->begin() + second_begin + long(second_kept),
                  values->begin() + second_begin + long(second.size()));
    values->erase(values->begin() + first_begin + long(first_kept),
                  values->begin() + first_begin + long(first.size()));
  }
  return input;
}

void classifier_logits(const Model& model, std::span<const Encoding> inputs, int max_batch_tokens,
                       const std::function<void(std::size_t, std::span<const float>)>& on_logits) {
  const ClassifierHead* head = model.transformer->classifier();
  if (!head) throw std::logic_error("classifier_logits without a classifier head");
  const bool per_token = head->pooling == ClassifierHead::Pooling::kEveryToken;
  const int n_labels = int(model.labels.size());
  std::vector<int> lengths;
  for (const Encoding& input : inputs) lengths.push_back(int(input.ids.size()));
  std::vector<int> rows;      // the rows the head reads
  std::vector<float> logits;  // (rows, labels)
  run_encoder_batches(
      model, lengths, max_batch_tokens,
      [&](Batch& batch, std::size_t i) { batch.add_sequence(inputs[i].ids, inputs[i].type_ids); },
      [&](const Batch& batch, RunState& state, std::size_t begin) {
        rows.clear();
        for (const SequenceSlice& sequence : batch.sequences) {
          for (int t = 0; t < (per_token ? sequence.length : 1); ++t)
            rows.push_back(sequence.row + t);
        }
        logits.resize(rows.size() * std::size_t(n_labels));
        model.transformer->compute_class_logits(state, rows, logits.data());
        const float* next = logits.data();
        for (std::size_t s = 0; s < batch.sequences.size(); ++s) {
          const std::size_t size =
              std::size_t(per_token ? batch.sequences[s].length : 1) * n_labels;
          on_logits(begin + s, std::span<const float>(next, size));
          next += size;
        }
      });
}

}  // namespace attn
