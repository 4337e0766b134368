// The sampling filters on a fixed logits vector, against a float64 reference written here:
// which tokens survive, and their renormalized probabilities.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <vector>

#include "src/tasks/sampler.h"
#include "tests/cli_util.h"

namespace attn {
namespace {

// Ten logits with a clear order: token i has logit 2 - 0.5 i, shuffled by a fixed permutation.
const std::vector<int> kOrder = {3, 7, 0, 9, 4, 1, 8, 5, 2, 6};  // token of rank r
std::vector<float> fixed_logits() {
  std::vector<float> logits(kOrder.size());
  for (std::size_t rank = 0; rank < kOrder.size(); ++rank) logits[kOrder[rank]] = 2 - 0.5 * rank;
  return logits;
}

// The logits by rank: 2 - 0.5 r.
std::vector<double> rank_logits() {
  std::vector<double> logits(kOrder.size());
  for (std::size_t rank = 0; rank < logits.size(); ++rank) logits[rank] = 2 - 0.5 * rank;
  return logits;
}

// softmax(logit / temperature) in double, by rank.
std::vector<double> reference_probabilities(const std::vector<double>& logits, double temperature) {
  std::vector<double> p(logits.size());
  double sum = 0;
  for (std::size_t rank = 0; rank < p.size(); ++rank)
    sum += p[rank] = std::exp(logits[rank] / temperature);
  for (double& value : p) value /= sum;
  return p;
}

// The sampler's surviving tokens (by descending probability) and their renormalized
// probabilities, having seen the tokens `context`.
std::pair<std::vector<int>, std::vector<double>> survivors(const SamplingOptions& options,
                                                           const std::vector<int>& context) {
  Sampler sampler(options);
  std::vector<float> logits = fixed_logits();
  sampler.filter(logits, context);
  std::vector<std::size_t> order(sampler.candidates().size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return sampler.probabilities()[a] > sampler.probabilities()[b];
  });
  const double sum =
      std::accumulate(sampler.probabilities().begin(), sampler.probabilities().end(), 0.0);
  std::vector<int> tokens;
  std::vector<double> probabilities;
  for (std::size_t i : order) {
    tokens.push_back(sampler.candidates()[i]);
    probabilities.push_back(sampler.probabilities()[i] / sum);
  }
  return {tokens, probabilities};
}

// The survivors are the tokens of `ranks` (by descending probability), with the reference's
// probabilities of those ranks renormalized. `logits` are the reference's logits by rank, after
// what the context does to them.
void expect_ranks(const SamplingOptions& options, const std::vector<std::size_t>& ranks,
                  double temperature, const std::vector<double>& logits = rank_logits(),
                  const std::vector<int>& context = {}) {
  const auto [tokens, probabilities] = survivors(options, context);
  const std::vector<double> reference = reference_probabilities(logits, temperature);
  double kept = 0;
  for (std::size_t rank : ranks) kept += reference[rank];
  ASSERT_EQ(tokens.size(), ranks.size());
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    EXPECT_EQ(tokens[i], kOrder[ranks[i]]) << "rank " << ranks[i];
    EXPECT_NEAR(probabilities[i], reference[ranks[i]] / kept, 1e-12) << "rank " << ranks[i];
  }
}

// The first `n` ranks of the reference, renormalized.
void expect_top_ranks(const SamplingOptions& options, std::size_t n, double temperature) {
  std::vector<std::size_t> ranks(n);
  std::iota(ranks.begin(), ranks.end(), 0);
  expect_ranks(options, ranks, temperature);
}

TEST(SamplerFilters, TemperatureAloneKeepsEveryToken) {
  expect_top_ranks({.temperature = 0.7f}, 10, double(0.7f));
}

TEST(SamplerFilters, TopKKeepsTheKMostLikely) { expect_top_ranks({.top_k = 3}, 3, 1.0); }

TEST(SamplerFilters, TopPKeepsTheSmallestPrefixReachingP) {
  // Cumulative probabilities at temperature 1: 0.393, 0.632, 0.776, 0.864, ...
  expect_top_ranks({.top_p = 0.7f}, 3, 1.0);
  expect_top_ranks({.top_p = 0.6f}, 2, 1.0);
}

TEST(SamplerFilters, MinPKeepsTokensAtLeastThatFractionOfTheTop) {
  // p(rank r) / p(top) = exp(-0.5 r / T): at T = 1, 0.2 keeps ranks with 0.5 r <= ln 5 (r <= 3).
  expect_top_ranks({.min_p = 0.2f}, 4, 1.0);
  // At T = 0.5 the ratio is exp(-r): 0.2 keeps r <= 1.
  expect_top_ranks({.temperature = 0.5f, .min_p = 0.2f}, 2, 0.5);
}

TEST(SamplerFilters, FiltersApplyInHuggingFacesOrder) {
  // top-k 5, then top-p over those five, renormalized (cumulative 0.429, 0.689, 0.846, 0.942,
  // 1), then min-p 0.3 (exp(-0.5 r) >= 0.3: r <= 2).
  expect_top_ranks({.top_k = 5, .top_p = 0.9f}, 4, 1.0);
  expect_top_ranks({.top_k = 5, .top_p = 0.8f}, 3, 1.0);
  expect_top_ranks({.top_k = 5, .top_p = 0.9f, .min_p = 0.3f}, 3, 1.0);
}

TEST(SamplerFilters, TypicalPKeepsTheTokensNearestTheEntropy) {
  // At T = 1 the entropy is 1.663 nats and |-log q - H| by rank is 0.737, 0.237, 0.263, 0.763,
  // ...: ranks 1, 2, 0, 3, ... in that order, cumulative mass 0.240, 0.386, 0.782, 0.871. Mass
  // 0.3 stops at the second (rank 2), so the most likely token is not typical; 0.5 at the third.
  expect_ranks({.typical_p = 0.3f}, {1, 2}, 1.0);
  expect_ranks({.typical_p = 0.5f}, {0, 1, 2}, 1.0);
  expect_ranks({.typical_p = 0.9f}, {0, 1, 2, 3, 4}, 1.0);
  // After top-k 3 the entropy is that of the three survivors renormalized (1.020 nats; distances
  // 0.340, 0.160, 0.660, masses 0.506, 0.307, 0.186): rank 1 alone reaches 0.3.
  expect_ranks({.top_k = 3, .typical_p = 0.3f}, {1}, 1.0);
}

TEST(SamplerFilters, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogits) {
  // Tokens of rank 0 (logit 2) and 5 (logit -0.5) were seen, rank 0 twice: with penalty 1.5 each
  // is penalized once, to 2 / 1.5 (in float, as the sampler and torch compute it) and -0.75.
  // Rank 0 falls behind rank 1 (1.5).
  std::vector<double> logits = rank_logits();
  logits[0] = double(2.0f / 1.5f);
  logits[5] = -0.75;
  const std::vector<int> context = {kOrder[0], kOrder[5], kOrder[0]};
  expect_ranks({.top_k = 5, .repetition_penalty = 1.5f}, {1, 0, 2, 3, 4}, 1.0, logits, context);
  expect_ranks({.repetition_penalty = 1.5f}, {1, 0, 2, 3, 4, 5, 6, 7, 8, 9}, 1.0, logits, context);
}

TEST(SamplerFilters, RepeatLastNPenalizesOnlyTheLastNTokens) {
  // The context ends with rank 5, after rank 0: --repeat-last-n 1 penalizes rank 5 alone, so rank
  // 0 keeps its logit 2 and its place; 2 penalizes both, as the whole context does.
  const std::vector<int> context = {kOrder[0], kOrder[5]};
  std::vector<double> last_one = rank_logits();
  last_one[5] = -0.75;
  expect_ranks({.repetition_penalty = 1.5f, .repeat_last_n = 1}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9},
               1.0, last_one, context);
  std::vector<double> last_two = last_one;
  last_two[0] = double(2.0f / 1.5f);
  expect_ranks({.repetition_penalty = 1.5f, .repeat_last_n = 2}, {1, 0, 2, 3, 4, 5, 6, 7, 8, 9},
               1.0, last_two, context);
  // 0 turns the penalty off.
  expect_ranks({.repetition_penalty = 1.5f, .repeat_last_n = 0}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9},
               1.0, rank_logits(), context);
}

// A fixed seed gives the same sampled tokens whatever the thread count.
TEST(SamplerSeed, SameSeedSameTokensAcrossThreadCounts) {
  std::vector<std::string> texts;
  for (const char* threads : {"1", "2"}) {
    const test::CommandResult result = test::run_attn(
        {"generate", "-p", "The jury said", "-n", "24", "--temp", "0.9", "--top-p", "0.95",
         "--min-p", "0.02", "--typical-p", "0.95", "--seed", "7", "-t", threads});
    ASSERT_EQ(result.exit_status, 0) << test::describe(result);
    texts.push_back(result.out);
  }
  EXPECT_EQ(texts[0], texts[1]);
}

// Without --seed, --json reports the seed drawn, and giving it back repeats the text.
TEST(SamplerSeed, TheReportedSeedRepeatsTheRun) {
  const std::vector<std::string> args = {"generate", "-p",     "The jury said", "-n",
                                         "24",       "--temp", "0.9",           "--json"};
  const test::CommandResult first = test::run_attn(args);
  ASSERT_EQ(first.exit_status, 0) << test::describe(first);
  const auto out = nlohmann::json::parse(first.out);
  std::vector<std::string> again = args;
  again.push_back("--seed");
  again.push_back(std::to_string(out["seed"].get<uint64_t>()));
  const test::CommandResult second = test::run_attn(again);
  ASSERT_EQ(second.exit_status, 0) << test::describe(second);
  EXPECT_EQ(nlohmann::json::parse(second.out)["generated_ids"], out["generated_ids"]);
}

}  // namespace
}  // namespace attn
