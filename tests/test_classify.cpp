// Sequence classification and zero-shot classification at the task level: attn's own
// tokenization and packed batches against the text-classification pipeline's goldens
// (../shared/golden/<model>/classify.jsonl), pair truncation as the slow tokenizers cut pairs,
// and zero-shot scores by the formula of transformers' ZeroShotClassificationPipeline.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/base/error.h"
#include "src/tasks/classify.h"
#include "src/tasks/zero_shot.h"
#include "tests/golden.h"
#include "tests/model_util.h"
#include "tests/tokenizer_test_util.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

using nlohmann::json;

class ClassifyGolden : public testing::TestWithParam<const char*> {};

// Every golden input, tokenized by attn and run in packed batches of up to 256 tokens (several
// inputs per batch), gives the pipeline's ids, logits and label order. The scores are the
// pipeline's function of the logits, which SequenceClassifierGolden checks to
// tolerance::kScoreOnGoldenLogits on the golden's own logits. End to end a score may differ by
// that plus what the logits' difference carries through the function (softmax and sigmoid move
// by at most half the largest change of their inputs), as in test_token_classify: the goldens'
// float32 logits are themselves up to 4e-6 from a float64 forward (check_float64.json), which
// moves their scores by up to 1.25e-6 (DistilBERT input 58, scripts/check-classifier-float64.py),
// so no implementation, however exact, is within a flat kScoreOnGoldenLogits (1e-6) of every
// golden score.
TEST_P(ClassifyGolden, PackedBatchesGiveThePipelinesResults) {
  ATTN_REQUIRE_SHARED();
  const std::string name = GetParam();
  const auto model = load_model(shared_model_dir(name));
  const std::vector<json> lines = GoldenSet(name).jsonl("classify.jsonl");
  ASSERT_FALSE(lines.empty());
  std::vector<Encoding> inputs;
  for (const json& line : lines) {
    std::optional<std::string> pair;
    if (line.contains("text_pair")) pair = line["text_pair"].get<std::string>();
    const ClassifierInput input =
        encode_for_classifier(*model, line["text"].get<std::string>(), pair, Truncation::kNone);
    ASSERT_EQ(input.encoding.ids, line["input_ids"].get<std::vector<int>>()) << line["text"];
    if (line.contains("token_type_ids")) {
      ASSERT_EQ(input.encoding.type_ids, line["token_type_ids"].get<std::vector<int>>());
    }
    inputs.push_back(input.encoding);
  }
  const ScoreFunction function =
      default_score_function(model->problem_type, int(model->labels.size()));
  std::size_t seen = 0;
  double worst_logit = 0, worst_score = 0;
  classifier_logits(*model, inputs, 256, [&](std::size_t i, std::span<const float> logits) {
    ASSERT_EQ(i, seen++);
    const json& line = lines[i];
    ASSERT_EQ(logits.size(), line["logits"].size());
    double largest_logit_change = 0;
    for (std::size_t k = 0; k < logits.size(); ++k) {
      const double want = line["logits"][k].get<double>();
      EXPECT_LE(std::abs(logits[k] - want),
                tolerance::kClassLogitAbsolute + tolerance::kClassLogitRelative * std::abs(want))
          << name << " " << i;
      largest_logit_change = std::max(largest_logit_change, std::abs(logits[k] - want));
    }
    worst_logit = std::max(worst_logit, largest_logit_change);
    EXPECT_EQ(function == ScoreFunction::kSoftmax ? "softmax" : "sigmoid",
              line["function_to_apply"].get<std::string>());
    const std::vector<float> scores = class_scores(logits, function);
    const std::vector<LabelScore> ranked = ranked_labels(scores, model->labels);
    ASSERT_EQ(ranked.size(), line["pipeline"].size());
    for (std::size_t k = 0; k < ranked.size(); ++k) {
      EXPECT_EQ(ranked[k].label, line["pipeline"][k]["label"].get<std::string>())
          << name << " " << i;
      const double want = line["pipeline"][k]["score"].get<double>();
      EXPECT_LE(std::abs(ranked[k].score - want),
                tolerance::kScoreOnGoldenLogits + 0.5 * largest_logit_change)
          << name << " " << i;
      worst_score = std::max(worst_score, std::abs(ranked[k].score - want));
    }
  });
  EXPECT_EQ(seen, lines.size());
  std::cout << name << ": " << lines.size() << " inputs, worst |d logit| " << worst_logit
            << ", worst |d score| " << worst_score << "\n";
}

INSTANTIATE_TEST_SUITE_P(SharedModels, ClassifyGolden,
                         testing::Values("tiny-bert-seqcls-random", "tiny-distilbert-seqcls-random",
                                         "tiny-roberta-seqcls-random"),
                         model_test_name);

std::string repeated(const std::string& word, int times) {
  std::string text;
  for (int i = 0; i < times; ++i) text += (i > 0 ? " " : "") + word;
  return text;
}

// The slow tokenizers' "longest_first" and "only_first": one token at a time from the end of the
// longer text (the second when they are as long), or of the first only.
void cut_pair(std::vector<int>& first, std::vector<int>& second, std::size_t excess,
              bool only_first) {
  for (std::size_t i = 0; i < excess; ++i) {
    if (only_first || first.size() > second.size()) {
      first.pop_back();
    } else {
      second.pop_back();
    }
  }
}

TEST(ClassifierInput, PairsAreCutAsTheSlowTokenizersCutThem) {
  ATTN_REQUIRE_SHARED();
  const auto model = load_model(shared_model_dir("tiny-bert-seqcls-random"));
  const Tokenizer& tokenizer = *model->tokenizer;
  const std::size_t context = std::size_t(model->spec().max_positions);
  const int cls = tokenizer.encode("").ids.front(), sep = tokenizer.encode("").ids.back();
  const std::string long_text = repeated("the dog ran home", 200);  // 800 words
  const std::string short_text = "a cat sat";
  for (const auto& [first_text, second_text, only_first] :
       std::vector<std::tuple<std::string, std::string, bool>>{
           {long_text, short_text, false},
           {short_text, long_text, false},
           {long_text, long_text + " again", false},
           {long_text, short_text, true}}) {
    EXPECT_THROW(encode_for_classifier(*model, first_text, second_text, Truncation::kNone), Error);
    const ClassifierInput input =
        encode_for_classifier(*model, first_text, second_text,
                              only_first ? Truncation::kOnlyFirst : Truncation::kLongestFirst);
    std::vector<int> first = tokenizer.encode_plain(first_text);
    std::vector<int> second = tokenizer.encode_plain(second_text);
    const std::size_t excess = first.size() + second.size() + 3 - context;
    cut_pair(first, second, excess, only_first);
    std::vector<int> want = {cls};
    want.insert(want.end(), first.begin(), first.end());
    want.push_back(sep);
    std::vector<int> want_types(want.size(), 0);
    want.insert(want.end(), second.begin(), second.end());
    want.push_back(sep);
    want_types.resize(want.size(), 1);
    EXPECT_EQ(input.encoding.ids, want);
    EXPECT_EQ(input.encoding.type_ids, want_types);
    EXPECT_EQ(input.dropped_tokens, int(excess));
  }
  // only_first cannot take from the second text.
  EXPECT_THROW(encode_for_classifier(*model, short_text, long_text, Truncation::kOnlyFirst), Error);
  // A single text keeps its first tokens and its [SEP].
  const ClassifierInput single =
      encode_for_classifier(*model, long_text, std::nullopt, Truncation::kLongestFirst);
  std::vector<int> want = tokenizer.encode(long_text).ids;
  want.erase(want.begin() + long(context) - 1, want.end() - 1);
  EXPECT_EQ(single.encoding.ids, want);
}

TEST(ZeroShot, LabelsAreSplitAtCommasAndStripped) {
  EXPECT_EQ(split_candidate_labels(" politics, sports ,,science ", "--labels"),
            (std::vector<std::string>{"politics", "sports", "science"}));
  EXPECT_EQ(split_candidate_labels("one", "--labels"), std::vector<std::string>{"one"});
  EXPECT_THROW(split_candidate_labels(" , ,", "--labels"), Error);
  EXPECT_THROW(split_candidate_labels("a,b, a", "--labels"), Error);
}

TEST(ZeroShot, HypothesesAreFormattedAsPythonFormatsThem) {
  EXPECT_EQ(hypothesis_for("This example is {}.", "sports", "t"), "This example is sports.");
  EXPECT_EQ(hypothesis_for("{0} {{x}}", "sports", "t"), "sports {x}");
  EXPECT_THROW(hypothesis_for("This example is.", "sports", "t"), Error);
  EXPECT_THROW(hypothesis_for("{label}", "sports", "t"), Error);
  EXPECT_THROW(hypothesis_for("{", "sports", "t"), Error);
}

TEST(ZeroShot, TheEntailmentLabelIsFoundByItsName) {
  EXPECT_EQ(entailment_label_id({"contradiction", "neutral", "ENTAILMENT"}), 2);
  EXPECT_EQ(entailment_label_id({"entailment", "neutral", "contradiction"}), 0);
  EXPECT_EQ(entailment_label_id({"NEGATIVE", "POSITIVE"}), -1);
}

// The golden NLI logits of four consecutive inputs, taken as the four candidate pairs of one
// zero-shot call. The pipeline's postprocess, written out (e = entailment id, k = contradiction
// id: 0, or the last label when e is 0):
//   over the labels:     score[c] = exp(l[c][e]) / sum_c' exp(l[c'][e])
//   one label at a time: score[c] = exp(l[c][e]) / (exp(l[c][k]) + exp(l[c][e]))
TEST(ZeroShot, ScoresFollowThePipelinesFormula) {
  ATTN_REQUIRE_SHARED();
  const std::vector<json> lines = GoldenSet("tiny-bert-seqcls-random").jsonl("classify.jsonl");
  const std::vector<std::string> nli_labels = {"entailment", "neutral", "contradiction"};
  ASSERT_GE(lines.size(), 8u);
  for (int e : {0, 2}) {  // as labelled, and as if the labels were the other way round
    const int k = e == 0 ? 2 : 0;
    for (std::size_t group = 0; group + 4 <= 8; group += 4) {
      std::vector<float> logits;
      std::vector<double> entail(4), contradict(4);
      for (int c = 0; c < 4; ++c) {
        const json& row = lines[group + c]["logits"];
        for (const json& value : row) logits.push_back(value.get<float>());
        entail[c] = std::exp(row[e].get<double>());
        contradict[c] = std::exp(row[k].get<double>());
      }
      double sum = 0;
      for (double value : entail) sum += value;
      const std::vector<float> over_labels = zero_shot_scores(logits, 3, e, false);
      const std::vector<float> each_label = zero_shot_scores(logits, 3, e, true);
      for (int c = 0; c < 4; ++c) {
        EXPECT_NEAR(over_labels[c], entail[c] / sum, tolerance::kScoreOnGoldenLogits);
        EXPECT_NEAR(each_label[c], entail[c] / (contradict[c] + entail[c]),
                    tolerance::kScoreOnGoldenLogits);
      }
      // One candidate is scored on its own even without multi_label.
      const std::vector<float> single = zero_shot_scores(std::span(logits).first(3), 3, e, false);
      EXPECT_NEAR(single[0], entail[0] / (contradict[0] + entail[0]),
                  tolerance::kScoreOnGoldenLogits);
    }
  }
  EXPECT_EQ(zero_shot_order(std::vector<float>{0.2f, 0.5f, 0.2f, 0.1f}),
            (std::vector<int>{1, 2, 0, 3}));
}

}  // namespace
}  // namespace attn::test
