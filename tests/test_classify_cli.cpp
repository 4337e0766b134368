// attn classify from the command line against the text-classification pipeline's goldens
// (../shared/golden/<model>/classify.jsonl): the first inputs of each shared sequence
// classifier, text and pair as the golden gives them, tokenized by attn.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli_util.h"
#include "tests/golden.h"
#include "tests/model_util.h"
#include "tests/tokenizer_test_util.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

using nlohmann::json;

class ClassifyCli : public testing::TestWithParam<const char*> {};

TEST_P(ClassifyCli, JsonMatchesThePipeline) {
  ATTN_REQUIRE_SHARED();
  const std::string name = GetParam();
  // jsonl() refuses a golden that is missing or empty: the checks below must run.
  const std::vector<json> lines = GoldenSet(name).jsonl("classify.jsonl");
  for (int checked = 0; checked < std::min<int>(5, int(lines.size())); ++checked) {
    const json& line = lines[std::size_t(checked)];
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
    ASSERT_EQ(out["logits"].size(), line["logits"].size()) << describe(result);
    for (std::size_t k = 0; k < out["logits"].size(); ++k) {
      const double want = line["logits"][k].get<double>();
      EXPECT_LE(std::abs(out["logits"][k].get<double>() - want),
                tolerance::kClassLogitAbsolute + tolerance::kClassLogitRelative * std::abs(want));
    }
    ASSERT_EQ(out["labels"].size(), line["pipeline"].size()) << describe(result);
    for (std::size_t i = 0; i < out["labels"].size(); ++i) {
      EXPECT_EQ(out["labels"][i]["label"], line["pipeline"][i]["label"]) << name << " " << checked;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, ClassifyCli,
                         testing::Values("tiny-bert-seqcls-random", "tiny-distilbert-seqcls-random",
                                         "tiny-roberta-seqcls-random"),
                         model_test_name);

// A file of "text<TAB>pair" lines (all the NLI golden's inputs, the empty first text of one
// included) runs in packed batches and gives one JSON line per line.
TEST(ClassifyCli, FileOfTabSeparatedPairs) {
  ATTN_REQUIRE_SHARED();
  const std::string name = "tiny-bert-seqcls-random";
  const std::vector<json> golden = GoldenSet(name).jsonl("classify.jsonl");
  std::string file_text;
  for (const json& line : golden) {
    file_text += line["text"].get<std::string>();
    if (line.contains("text_pair")) {
      file_text += '\t';
      file_text += line["text_pair"].get<std::string>();
    }
    file_text += "\n";
  }
  TempDir dir;
  write_file(dir.path() / "pairs.tsv", file_text);
  const CommandResult result =
      run_attn({"classify", "-m", shared_model_dir(name).string(), "--json", "--batch-tokens",
                "200", "-f", (dir.path() / "pairs.tsv").string()});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const std::vector<std::string> out = split_lines_of(result.out);
  ASSERT_EQ(out.size(), golden.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const json got = json::parse(out[i]);
    EXPECT_EQ(got["line"], i + 1);
    EXPECT_EQ(got["text"].get<std::string>(), golden[i]["text"].get<std::string>());
    EXPECT_EQ(got.contains("text_pair"), golden[i].contains("text_pair"));
    for (std::size_t k = 0; k < golden[i]["logits"].size(); ++k) {
      const double want = golden[i]["logits"][k].get<double>();
      EXPECT_LE(std::abs(got["logits"][k].get<double>() - want),
                tolerance::kClassLogitAbsolute + tolerance::kClassLogitRelative * std::abs(want));
    }
    for (std::size_t k = 0; k < golden[i]["pipeline"].size(); ++k) {
      EXPECT_EQ(got["labels"][k]["label"].get<std::string>(),
                golden[i]["pipeline"][k]["label"].get<std::string>());
    }
  }
}

// Zero-shot end to end against a float64 computation of the test's own, from the NLI logits
// attn gives for each (text, hypothesis) pair on its own: softmax of the entailment logits over
// the labels, or per label entailment against contradiction with --multi-label.
TEST(ClassifyCli, ZeroShotMatchesAFloat64Computation) {
  ATTN_REQUIRE_SHARED();
  const std::string model = shared_model_dir("tiny-bert-seqcls-random").string();
  const std::string text = "The match ended in a draw after extra time.";
  const std::vector<std::string> labels = {"politics", "sports", "science", "cooking"};
  std::vector<std::vector<double>> logits;  // (labels, 3): entailment, neutral, contradiction
  for (const std::string& label : labels) {
    const CommandResult pair = run_attn({"classify", "-m", model, "--json", "--function", "none",
                                         "-p", text, "--pair", "It is about " + label + "!"});
    ASSERT_EQ(pair.exit_status, 0) << describe(pair);
    logits.push_back(json::parse(pair.out)["logits"].get<std::vector<double>>());
  }
  for (const bool multi_label : {false, true}) {
    std::vector<std::string> args = {"classify",   "-m",
                                     model,        "--json",
                                     "--labels",   "politics, sports,science,cooking",
                                     "--template", "It is about {}!",
                                     "-p",         text};
    if (multi_label) args.push_back("--multi-label");
    const CommandResult result = run_attn(args);
    ASSERT_EQ(result.exit_status, 0) << describe(result);
    const json got = json::parse(result.out);
    std::vector<double> want(labels.size());
    double sum = 0;
    for (std::size_t c = 0; c < labels.size(); ++c) sum += std::exp(logits[c][0]);
    for (std::size_t c = 0; c < labels.size(); ++c) {
      want[c] = multi_label
                    ? std::exp(logits[c][0]) / (std::exp(logits[c][0]) + std::exp(logits[c][2]))
                    : std::exp(logits[c][0]) / sum;
      // attn's scores against the formula in double on the logits attn printed for each pair run
      // on its own: not a golden, and not in tests/tolerances.h.
      EXPECT_NEAR(got["scores"][c].get<double>(), want[c], 1e-6) << labels[c];
    }
    ASSERT_EQ(got["labels"].size(), labels.size());
    for (std::size_t k = 1; k < labels.size(); ++k) {
      EXPECT_GE(got["labels"][k - 1]["score"].get<double>(),
                got["labels"][k]["score"].get<double>());
    }
    const auto best = std::max_element(want.begin(), want.end()) - want.begin();
    EXPECT_EQ(got["labels"][0]["label"].get<std::string>(), labels[best]);
  }
}

TEST(ClassifyCli, BadInputIsRefusedWithTheReason) {
  ATTN_REQUIRE_SHARED();
  const std::string nli = shared_model_dir("tiny-bert-seqcls-random").string();
  TempDir dir;
  write_file(dir.path() / "two_tabs.tsv", "a\tb\tc\n");
  std::string many_words;  // more tokens than the model's 512
  for (int i = 0; i < 600; ++i) many_words += "word ";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"classify", "-m", nli, "--labels", "a,b", "--template", "no place", "hi"}, "has no {}"},
      {{"classify", "-m", nli, "--labels", "a,b,a", "hi"}, "'a' is given twice"},
      {{"classify", "-m", nli, "--labels", " , ", "hi"}, "--labels: no label"},
      {{"classify", "-m", nli, "--multi-label", "hi"}, "--multi-label: only for zero-shot"},
      {{"classify", "-m", nli, "--labels", "a,b", "--function", "none", "hi"}, "--function"},
      {{"classify", "-m", shared_model_dir("tiny-distilbert-seqcls-random").string(), "--labels",
        "a,b", "hi"},
       "needs an NLI model"},
      {{"classify", "-m", shared_model_dir("tiny-bert-tokcls-random").string(), "hi"},
       "BertForTokenClassification, a token classifier (try attn ner)"},
      {{"classify", "-m", shared_model_dir("tiny-bert-brown").string(), "hi"},
       "try attn fill-mask"},
      {{"classify", "-m", shared_model_dir("tiny-gpt2-brown").string(), "hi"}, "try attn generate"},
      {{"classify", "-m", nli, "-f", (dir.path() / "two_tabs.tsv").string()}, "more than one TAB"},
      {{"classify", "-m", nli, "--pair", "x", "-f", (dir.path() / "two_tabs.tsv").string()},
       "--pair gives a pair too"},
      {{"classify", "-m", nli, "-p", many_words}, "--truncate cuts it"},
  };
  for (const auto& [args, message] : cases) {
    const CommandResult result = run_attn(args);
    EXPECT_NE(result.exit_status, 0) << describe(result);
    EXPECT_NE(result.err.find(message), std::string::npos) << describe(result);
    EXPECT_EQ(split_lines_of(result.err).size(), 1u) << describe(result);
  }
}

// A head whose size does not match config.json's id2label is refused, naming both.
TEST(ClassifyCli, LabelsThatDoNotMatchTheHeadAreRefused) {
  ATTN_REQUIRE_SHARED();
  TempDir dir;
  const std::filesystem::path source = shared_model_dir("tiny-distilbert-seqcls-random");
  for (const auto& entry : std::filesystem::directory_iterator(source)) {
    std::filesystem::copy(entry.path(), dir.path() / entry.path().filename());
  }
  json config = json::parse(read_file(source / "config.json"));
  config["id2label"] = {{"0", "A"}, {"1", "B"}, {"2", "C"}};
  write_file(dir.path() / "config.json", config.dump());
  CommandResult result = run_attn({"classify", "-m", dir.path().string(), "hi"});
  EXPECT_EQ(result.exit_status, 1) << describe(result);
  EXPECT_NE(result.err.find("classifier.weight"), std::string::npos) << describe(result);
  EXPECT_NE(result.err.find("3 labels in its id2label"), std::string::npos) << describe(result);
  config.erase("id2label");
  write_file(dir.path() / "config.json", config.dump());
  result = run_attn({"classify", "-m", dir.path().string(), "hi"});
  EXPECT_EQ(result.exit_status, 1) << describe(result);
  EXPECT_NE(result.err.find("needs id2label"), std::string::npos) << describe(result);
}

}  // namespace
}  // namespace attn::test
