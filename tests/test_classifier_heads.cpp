// Classifier heads (…ForSequenceClassification, …ForTokenClassification) against transformers:
// the logits of every golden input of ../shared/golden/<model>/classify.jsonl and
// token_classify.jsonl, computed from the golden's own ids and token types, within
// tolerance::kClassLogitAbsolute + kClassLogitRelative |golden|.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/tasks/classify.h"
#include "tests/golden.h"
#include "tests/model_util.h"
#include "tests/tokenizer_test_util.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

using nlohmann::json;

// The head's logits for one sequence: (labels) of its first token, or (tokens, labels) of all.
std::vector<float> class_logits(const Model& model, const std::vector<int>& ids,
                                const std::vector<int>& types, bool every_token) {
  const ArchSpec& spec = model.spec();
  const int n = static_cast<int>(ids.size());
  KVCache cache(spec, n, spec.n_layer);
  RunState state(spec, n, n);
  Batch batch;
  batch.add_sequence(ids, types);
  model.transformer->forward(batch, cache, state);
  std::vector<int> rows(every_token ? n : 1);
  for (int i = 0; i < int(rows.size()); ++i) rows[i] = i;
  std::vector<float> logits(rows.size() * model.labels.size());
  model.transformer->compute_class_logits(state, rows, logits.data());
  return logits;
}

class ClassifierHeadGolden : public testing::TestWithParam<const char*> {};

TEST_P(ClassifierHeadGolden, LogitsMatchTransformers) {
  ATTN_REQUIRE_SHARED();
  const std::string name = GetParam();
  const bool token_classifier = name == "tiny-bert-tokcls-random";
  const auto model = load_model(shared_model_dir(name));
  ASSERT_FALSE(model->labels.empty()) << name;
  const std::string file = token_classifier ? "token_classify.jsonl" : "classify.jsonl";
  int checked = 0;
  double worst = 0;
  for (const json& line : GoldenSet(name).jsonl(file)) {
    const std::vector<int> ids = line["input_ids"].get<std::vector<int>>();
    const std::vector<int> types = line.contains("token_type_ids")
                                       ? line["token_type_ids"].get<std::vector<int>>()
                                       : std::vector<int>{};
    std::vector<float> want;
    if (token_classifier) {
      for (const json& row : line["logits"]) {
        for (const json& value : row) want.push_back(value.get<float>());
      }
    } else {
      want = line["logits"].get<std::vector<float>>();
    }
    const Comparison c = compare(class_logits(*model, ids, types, token_classifier), want,
                                 tolerance::kClassLogitAbsolute, tolerance::kClassLogitRelative);
    EXPECT_LE(c.worst_ratio, 1.0) << name << " input " << checked << ": worst |Δ| " << c.worst_abs;
    worst = std::max(worst, c.worst_abs);
    ++checked;
  }
  EXPECT_GT(checked, 0);
  std::cout << name << ": " << checked << " inputs, worst |Δ| " << worst << "\n";
}

// TextClassificationPipeline's scores (its default function) and its order of the labels.
class SequenceClassifierGolden : public testing::TestWithParam<const char*> {};

TEST_P(SequenceClassifierGolden, ScoresAndLabelOrderMatchThePipeline) {
  ATTN_REQUIRE_SHARED();
  const std::string name = GetParam();
  const auto model = load_model(shared_model_dir(name));
  const ScoreFunction function = default_score_function("", int(model->labels.size()));
  int checked = 0;
  double worst = 0;
  for (const json& line : GoldenSet(name).jsonl("classify.jsonl")) {
    EXPECT_EQ(line["function_to_apply"],
              function == ScoreFunction::kSoftmax ? "softmax" : "sigmoid");
    const std::vector<float> logits = line["logits"].get<std::vector<float>>();
    const std::vector<float> scores = class_scores(logits, function);
    const Comparison c = compare(scores, line["scores"].get<std::vector<float>>(),
                                 tolerance::kScoreOnGoldenLogits, 0);
    EXPECT_LE(c.worst_ratio, 1.0) << name << " input " << checked << ": worst |Δ| " << c.worst_abs;
    worst = std::max(worst, c.worst_abs);
    const std::vector<LabelScore> ranked = ranked_labels(scores, model->labels);
    ASSERT_EQ(ranked.size(), line["pipeline"].size());
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      EXPECT_EQ(ranked[i].label, line["pipeline"][i]["label"]) << name << " input " << checked;
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);
  std::cout << name << ": " << checked << " inputs, worst score |Δ| " << worst << "\n";
}

INSTANTIATE_TEST_SUITE_P(SharedModels, SequenceClassifierGolden,
                         testing::Values("tiny-bert-seqcls-random", "tiny-distilbert-seqcls-random",
                                         "tiny-roberta-seqcls-random"),
                         model_test_name);

INSTANTIATE_TEST_SUITE_P(SharedModels, ClassifierHeadGolden,
                         testing::Values("tiny-bert-seqcls-random", "tiny-distilbert-seqcls-random",
                                         "tiny-roberta-seqcls-random", "tiny-bert-tokcls-random"),
                         model_test_name);

}  // namespace
}  // namespace attn::test
