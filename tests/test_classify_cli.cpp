// attn classify from the command line against the text-classification pipeline's goldens
// (../shared/golden/<model>/classify.jsonl): the first inputs of each shared sequence
// classifier, text and pair as the golden gives them, tokenized by attn.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli_util.h"
#include "tests/tokenizer_test_util.h"

namespace attn::test {
namespace {

using nlohmann::json;

class ClassifyCli : public testing::TestWithParam<const char*> {};

TEST_P(ClassifyCli, JsonMatchesThePipeline) {
  ATTN_REQUIRE_SHARED();
  const std::string name = GetParam();
  std::ifstream lines(shared_golden_dir(name) / "classify.jsonl");
  int checked = 0;
  for (std::string text; std::getline(lines, text) && checked < 5; ++checked) {
    const json line = json::parse(text);
    if (line["text"].get<std::string>().empty()) continue;
    std::vector<std::string> args = {"classify", "-m", shared_model_dir(name).string(),
                                     "--json",   "-p", line["text"].get<std::string>()};
    if (line.contains("text_pair")) {
      args.push_back("--pair");
      args.push_back(line["text_pair"].get<std::string>());
    }
    const CommandResult result = run_attn(args);
    ASSERT_EQ(result.exit_status, 0) << describe(result);
    const json out = json::parse(result.out);
    ASSERT_EQ(out["labels"].size(), line["pipeline"].size()) << describe(result);
    for (std::size_t i = 0; i < out["labels"].size(); ++i) {
      EXPECT_EQ(out["labels"][i]["label"], line["pipeline"][i]["label"]) << name << " " << checked;
      EXPECT_NEAR(out["labels"][i]["score"].get<double>(),
                  line["pipeline"][i]["score"].get<double>(), 1e-6)
          << name << " " << checked;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, ClassifyCli,
                         testing::Values("tiny-bert-seqcls-random", "tiny-distilbert-seqcls-random",
                                         "tiny-roberta-seqcls-random"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           std::erase(name, '-');
                           return name;
                         });

}  // namespace
}  // namespace attn::test
