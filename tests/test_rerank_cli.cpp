// attn rerank from the command line against the text-classification pipeline's golden logits of
// the shared 1-label RoBERTa cross-encoder (../shared/golden/tiny-roberta-seqcls-random/
// classify.jsonl): its inputs are (prompts[i mod 20], texts[3i]), so the lines sharing a query
// are that query's passages, ranked here by attn and checked score by score and in order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "tests/cli_util.h"
#include "tests/golden.h"
#include "tests/tokenizer_test_util.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

using nlohmann::json;

constexpr const char* kReranker = "tiny-roberta-seqcls-random";

// A query and its passages with the golden logit of each pair, in golden order.
struct GoldenQuery {
  std::string query;
  std::vector<std::string> passages;
  std::vector<double> logits;
};

std::vector<GoldenQuery> golden_queries() {
  std::vector<GoldenQuery> queries;
  std::map<std::string, std::size_t> index;
  for (const json& line : GoldenSet(kReranker).jsonl("classify.jsonl")) {
    const std::string query = line["text"].get<std::string>();
    auto [at, added] = index.emplace(query, queries.size());
    if (added) queries.push_back({.query = query, .passages = {}, .logits = {}});
    GoldenQuery& golden = queries[at->second];
    golden.passages.push_back(line["text_pair"].get<std::string>());
    golden.logits.push_back(line["logits"][0].get<double>());
  }
  return queries;
}

// The passages' indices, best first, as CrossEncoder.rank sorts them (ties in input order).
std::vector<int> golden_order(const std::vector<double>& scores) {
  std::vector<int> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return scores[a] > scores[b]; });
  return order;
}

float float_sigmoid(double logit) {
  const float x = float(logit);
  return 1.0f / (1.0f + std::exp(-x));
}

std::vector<std::string> rerank_args(const std::string& model, const std::string& query) {
  return {"rerank", "-m", shared_model_dir(model).string(), "--query", query, "--json"};
}

// Checks one query's JSON ranking against the golden scores (after `function`).
void expect_ranking(const CommandResult& result, const GoldenQuery& golden,
                    const std::vector<double>& expected, double tolerance_abs,
                    double tolerance_rel) {
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const json out = json::parse(result.out);
  EXPECT_EQ(out["query"], golden.query);
  ASSERT_EQ(out["results"].size(), golden.passages.size()) << describe(result);
  const std::vector<int> order = golden_order(expected);
  for (std::size_t rank = 0; rank < order.size(); ++rank) {
    const json& item = out["results"][rank];
    const int id = item["corpus_id"].get<int>();
    ASSERT_GE(id, 0);
    ASSERT_LT(id, int(expected.size()));
    EXPECT_EQ(item["text"], golden.passages[id]);
    EXPECT_NEAR(item["score"].get<double>(), expected[id],
                tolerance_abs + tolerance_rel * std::abs(expected[id]))
        << golden.query << " / " << golden.passages[id];
    // The order is the golden's unless two scores are within the tolerance of each other.
    if (id != order[rank]) {
      EXPECT_LE(std::abs(expected[id] - expected[order[rank]]), 2 * tolerance_abs) << rank;
    }
    if (rank > 0) {
      EXPECT_GE(out["results"][rank - 1]["score"].get<double>(), item["score"].get<double>());
    }
  }
}

TEST(RerankCli, LogitsAndOrderMatchThePipeline) {
  ATTN_REQUIRE_SHARED();
  const std::vector<GoldenQuery> queries = golden_queries();
  ASSERT_EQ(queries.size(), 20u);
  for (const GoldenQuery& golden : queries) {
    ASSERT_GE(golden.passages.size(), 2u) << golden.query;
    std::vector<std::string> args = rerank_args(kReranker, golden.query);
    args.insert(args.end(), golden.passages.begin(), golden.passages.end());
    expect_ranking(run_attn(args), golden, golden.logits, tolerance::kClassLogitAbsolute,
                   tolerance::kClassLogitRelative);
  }
}

// --activation: the sigmoid of each logit; the passages from a file, a blank line skipped.
TEST(RerankCli, SigmoidScoresFromAFile) {
  ATTN_REQUIRE_SHARED();
  TempDir dir;
  for (const GoldenQuery& golden : golden_queries()) {
    std::string file;
    for (const std::string& passage : golden.passages) file += passage + "\n\n";
    write_file(dir / "passages.txt", file);
    std::vector<std::string> args = rerank_args(kReranker, golden.query);
    args.insert(args.end(), {"--activation", "-f", (dir / "passages.txt").string()});
    std::vector<double> sigmoid;
    for (double logit : golden.logits) sigmoid.push_back(float_sigmoid(logit));
    const CommandResult result = run_attn(args);
    // attn's sigmoid of its own logits against the sigmoid of the golden's.
    expect_ranking(result, golden, sigmoid, tolerance::kScoreOnOwnLogits, 0);
    // Passage i is line 2i + 1 of the file.
    const json ranking = json::parse(result.out);
    for (const json& item : ranking["results"]) {
      EXPECT_EQ(item["line"].get<int>(), 2 * item["corpus_id"].get<int>() + 1);
    }
  }
}

TEST(RerankCli, PlainOutputAndTopK) {
  ATTN_REQUIRE_SHARED();
  const GoldenQuery golden = golden_queries().front();
  const std::vector<int> order = golden_order(golden.logits);
  std::vector<std::string> args = {"rerank", "-m", shared_model_dir(kReranker).string(), "--query",
                                   golden.query};
  args.insert(args.end(), golden.passages.begin(), golden.passages.end());
  const CommandResult plain = run_attn(args);
  ASSERT_EQ(plain.exit_status, 0) << describe(plain);
  const std::vector<std::string> lines = split_lines_of(plain.out);
  ASSERT_EQ(lines.size(), golden.passages.size()) << plain.out;
  for (std::size_t rank = 0; rank < lines.size(); ++rank) {
    const std::string& line = lines[rank];
    const std::size_t tab = line.find('\t'), second = line.find('\t', tab + 1);
    ASSERT_NE(second, std::string::npos) << line;
    EXPECT_EQ(line.substr(0, tab), std::to_string(rank + 1));
    const double logit = golden.logits[order[rank]];
    EXPECT_NEAR(std::stod(line.substr(tab + 1, second - tab - 1)), logit,
                tolerance::kFourDecimals + tolerance::kClassLogitAbsolute +
                    tolerance::kClassLogitRelative * std::abs(logit));
    EXPECT_EQ(line.substr(second + 1), golden.passages[order[rank]]);
  }

  args.insert(args.end(), {"-k", "1", "--json"});
  const CommandResult top = run_attn(args);
  ASSERT_EQ(top.exit_status, 0) << describe(top);
  const json out = json::parse(top.out);
  ASSERT_EQ(out["results"].size(), 1u) << top.out;
  EXPECT_EQ(out["results"][0]["corpus_id"], order[0]);
}

// A passage that does not fit is reported with its source while the others are ranked;
// --truncate cuts it (the longer text of the pair) to the model's context.
TEST(RerankCli, TooLongPassage) {
  ATTN_REQUIRE_SHARED();
  std::string long_passage;
  for (int i = 0; i < 600; ++i) long_passage += "the city said ";
  std::vector<std::string> args = rerank_args(kReranker, "The jury");
  args.insert(args.end(), {"a short one", long_passage, "another"});
  const CommandResult refused = run_attn(args);
  EXPECT_EQ(refused.exit_status, 1) << describe(refused);
  EXPECT_NE(refused.err.find("argument 2: the passage with the query is "), std::string::npos)
      << refused.err;
  const json out = json::parse(refused.out);
  ASSERT_EQ(out["results"].size(), 2u) << refused.out;
  for (const json& item : out["results"]) EXPECT_NE(item["corpus_id"], 1);

  args.push_back("--truncate");
  const CommandResult cut = run_attn(args);
  EXPECT_EQ(cut.exit_status, 0) << describe(cut);
  EXPECT_EQ(json::parse(cut.out)["results"].size(), 3u) << cut.out;
  EXPECT_NE(cut.err.find("cut off by --truncate"), std::string::npos) << cut.err;
}

// A folder whose config.json tells sentence-transformers to apply a sigmoid: attn says so and
// still prints the raw logit unless --activation.
TEST(RerankCli, ConfiguredSigmoidIsNamed) {
  ATTN_REQUIRE_SHARED();
  TempDir dir;
  const std::filesystem::path model = dir / "model";
  std::filesystem::copy(shared_model_dir(kReranker), model);
  json config = json::parse(read_file(model / "config.json"));
  config["sbert_ce_default_activation_function"] = "torch.nn.modules.activation.Sigmoid";
  write_file(model / "config.json", config.dump(2));
  const GoldenQuery golden = golden_queries().front();
  std::vector<std::string> args = {"rerank",     "-m",     model.string(),    "--query",
                                   golden.query, "--json", golden.passages[0]};
  const CommandResult result = run_attn(args);
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  EXPECT_NE(result.err.find("torch.nn.modules.activation.Sigmoid"), std::string::npos)
      << result.err;
  EXPECT_NEAR(
      json::parse(result.out)["results"][0]["score"].get<double>(), golden.logits[0],
      tolerance::kClassLogitAbsolute + tolerance::kClassLogitRelative * std::abs(golden.logits[0]));
}

TEST(RerankCli, RefusesModelsThatAreNoCrossEncoder) {
  ATTN_REQUIRE_SHARED();
  const CommandResult three_labels =
      run_attn({"rerank", "-m", shared_model_dir("tiny-bert-seqcls-random").string(), "--query",
                "a query", "a passage"});
  EXPECT_EQ(three_labels.exit_status, 2) << describe(three_labels);
  EXPECT_NE(three_labels.err.find("has 3 labels"), std::string::npos) << three_labels.err;
  EXPECT_NE(three_labels.err.find("attn classify --pair"), std::string::npos) << three_labels.err;
  EXPECT_TRUE(three_labels.out.empty()) << three_labels.out;

  const CommandResult masked_lm = run_attn(
      {"rerank", "-m", shared_model_dir("tiny-bert-brown").string(), "--query", "q", "passage"});
  EXPECT_EQ(masked_lm.exit_status, 2) << describe(masked_lm);
  EXPECT_NE(masked_lm.err.find("rerank needs a …ForSequenceClassification model"),
            std::string::npos)
      << masked_lm.err;
  EXPECT_NE(masked_lm.err.find("masked language model"), std::string::npos) << masked_lm.err;
}

TEST(RerankCli, NeedsAQuery) {
  ATTN_REQUIRE_SHARED();
  const CommandResult none =
      run_attn({"rerank", "-m", shared_model_dir(kReranker).string(), "a passage"});
  EXPECT_EQ(none.exit_status, 2) << describe(none);
  EXPECT_NE(none.err.find("--query is required"), std::string::npos) << none.err;

  // An empty query is a query, as sentence-transformers scores it: [CLS] [SEP] passage [SEP].
  const CommandResult empty = run_attn(
      {"rerank", "-m", shared_model_dir(kReranker).string(), "--json", "--query", "", "a passage"});
  EXPECT_EQ(empty.exit_status, 0) << describe(empty);
  EXPECT_EQ(json::parse(empty.out)["query"], "") << empty.out;
}

}  // namespace
}  // namespace attn::test
