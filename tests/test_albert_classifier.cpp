// ALBERT's classifier heads (AlbertForSequenceClassification: pooler "albert.pooler" + tanh +
// "classifier"; AlbertForTokenClassification: "classifier" on every token) against
// tests/make_albert_classifier_reference.py's float64 forward. No shared model has such a head:
// test setup gives tiny-albert-random a seeded one and computes the reference, after checking
// that forward against transformers' own hidden states of tiny-albert-random.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/tasks/classify.h"
#include "tests/cli_util.h"
#include "tests/model_util.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

using nlohmann::json;

class AlbertClassifier : public testing::TestWithParam<const char*> {};

// Every reference input in one packed batch, from the reference's own ids and token types.
TEST_P(AlbertClassifier, LogitsMatchTheFloat64Reference) {
  ATTN_REQUIRE_SHARED();
  const auto dir = random_model(GetParam());
  if (dir.empty()) ATTN_SKIP_UNLESS_CI("ALBERT classifier not generated (python3-numpy missing?)");
  const json reference = json::parse(read_file(dir / "reference.json"));
  const auto model = load_model(dir);
  const json config = json::parse(read_file(dir / "config.json"));
  ASSERT_EQ(model->labels.size(), config["id2label"].size());
  const bool per_token = std::string(GetParam()) == "tiny-albert-tokcls-random";
  if (per_token) {
    require_token_classifier(*model, "test");
  } else {
    require_sequence_classifier(*model, "test");
  }

  std::vector<Encoding> inputs;
  for (const json& item : reference["inputs"]) {
    inputs.push_back({.ids = item["input_ids"].get<std::vector<int>>(),
                      .type_ids = item["token_type_ids"].get<std::vector<int>>()});
  }
  ASSERT_GE(inputs.size(), 8u);
  std::size_t seen = 0;
  double worst = 0;
  classifier_logits(*model, inputs, 4096, [&](std::size_t i, std::span<const float> logits) {
    EXPECT_EQ(i, seen++);
    std::vector<double> want;
    const json& item = reference["inputs"][i];
    if (per_token) {
      for (const json& row : item["logits"]) {
        for (const json& value : row) want.push_back(value.get<double>());
      }
    } else {
      want = item["logits"].get<std::vector<double>>();
    }
    ASSERT_EQ(logits.size(), want.size()) << "input " << i;
    for (std::size_t k = 0; k < want.size(); ++k) {
      EXPECT_LE(std::abs(logits[k] - want[k]),
                tolerance::kClassLogitAbsolute + tolerance::kClassLogitRelative * std::abs(want[k]))
          << "input " << i << " logit " << k << ": " << logits[k] << " vs " << want[k];
      worst = std::max(worst, std::abs(logits[k] - want[k]));
    }
  });
  EXPECT_EQ(seen, inputs.size());
  std::cout << GetParam() << ": " << seen << " inputs, worst |Δ| " << worst << "\n";
}

INSTANTIATE_TEST_SUITE_P(Generated, AlbertClassifier,
                         testing::Values("tiny-albert-seqcls-random", "tiny-albert-tokcls-random"),
                         model_test_name);

// attn classify end to end: attn's SentencePiece tokenization of the reference texts (whose ids
// are transformers'), alone and as pairs, then the head.
TEST(AlbertClassifierCli, ClassifyMatchesTheReference) {
  ATTN_REQUIRE_SHARED();
  const auto dir = random_model("tiny-albert-seqcls-random");
  if (dir.empty()) ATTN_SKIP_UNLESS_CI("ALBERT classifier not generated (python3-numpy missing?)");
  const json reference = json::parse(read_file(dir / "reference.json"));
  int pairs = 0;
  for (const json& item : reference["inputs"]) {
    std::vector<std::string> args = {"classify", "-m", dir.string(),
                                     "--json",   "-p", item["text"].get<std::string>()};
    if (item.contains("text_pair")) {
      args.insert(args.end(), {"--pair", item["text_pair"].get<std::string>()});
      ++pairs;
    }
    const CommandResult result = run_attn(args);
    ASSERT_EQ(result.exit_status, 0) << describe(result);
    const json out = json::parse(result.out);
    const std::vector<double> want = item["logits"].get<std::vector<double>>();
    ASSERT_EQ(out["logits"].size(), want.size()) << result.out;
    for (std::size_t k = 0; k < want.size(); ++k) {
      EXPECT_LE(std::abs(out["logits"][k].get<double>() - want[k]),
                tolerance::kClassLogitAbsolute + tolerance::kClassLogitRelative * std::abs(want[k]))
          << item["text"] << " logit " << k;
    }
  }
  EXPECT_GT(pairs, 0);
}

// A sequence classifier without its pooler is refused, naming the missing tensor.
TEST(AlbertClassifierCli, MissingPoolerIsNamed) {
  ATTN_REQUIRE_SHARED();
  const auto dir = random_model("tiny-albert-tokcls-random");
  if (dir.empty()) ATTN_SKIP_UNLESS_CI("ALBERT classifier not generated (python3-numpy missing?)");
  // The token classifier's folder has no pooler: presented as a sequence classifier, it lacks it.
  TempDir scratch;
  const auto model_dir = scratch / "albert";
  std::filesystem::copy(dir, model_dir);
  json config = json::parse(read_file(model_dir / "config.json"));
  config["architectures"] = {"AlbertForSequenceClassification"};
  write_file(model_dir / "config.json", config.dump());
  const CommandResult result = run_attn({"classify", "-m", model_dir.string(), "a text"});
  EXPECT_EQ(result.exit_status, 1) << describe(result);
  EXPECT_NE(result.err.find("albert.pooler.weight"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace attn::test
