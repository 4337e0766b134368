// The tolerance table (tests/tolerances.h) against the goldens' own errors: every fixed bound
// leaves attn at least as much room as the golden itself is from float64 (check_float64.json:
// transformers' same code run in float64), i.e. bound >= 2 x the golden's distance, on every
// golden set that measures the quantity. Then an implementation whose float32 rounding is no
// worse than torch's passes whatever order its kernels sum in, on the far side of the exact
// value from the golden. (Attention weights are not here: their bound is set per golden set,
// the larger of tolerance::kAttentionWeight and that set's own distance, test_attention.cpp.)

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/golden.h"
#include "tests/test_paths.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

// One quantity of check_float64.json (or check_float64_extra.json) and the bound that holds it.
struct Rule {
  const char* file;
  const char* section;
  const char* key;
  double bound;
};

constexpr Rule kRules[] = {
    {"check_float64.json", "generate", "max_abs_dlogit_full_last_prompt_logits",
     tolerance::kLogitAbsolute},
    {"check_float64.json", "generate", "max_abs_dlogit_top5_all_steps", tolerance::kLogitAbsolute},
    {"check_float64.json", "fill_mask", "max_abs_dscore_top10", tolerance::kFillMaskScore},
    {"check_float64.json", "classify", "max_abs_dlogit", tolerance::kClassLogitAbsolute},
    {"check_float64.json", "token_classify", "max_abs_dlogit", tolerance::kClassLogitAbsolute},
    {"check_float64.json", "embeddings", "max_abs_dmean", tolerance::kEmbeddingMean},
    {"check_float64.json", "embeddings", "max_abs_dnormalized", tolerance::kEmbeddingNormalized},
    {"check_float64.json", "embeddings", "max_abs_dcls", tolerance::kEmbeddingCls},
    {"check_float64.json", "similarity", "max_abs_dcosine", tolerance::kCosine},
    {"check_float64_extra.json", "perplexity", "max_abs_dtoken_nll", tolerance::kTokenNll},
    {"check_float64_extra.json", "perplexity", "max_rel_dppl", tolerance::kMeanNllRelative},
    {"check_float64_extra.json", "beam", "max_abs_dsequences_scores_vs_float64_teacher_forced",
     tolerance::kBeamScore},
};

// The bound a rule has on one golden set, where it differs from the table's general entry.
double bound_for(const Rule& rule, const std::string& set) {
  if (set == "bert-base-random" && std::string(rule.section) == "fill_mask") {
    return tolerance::kFillMaskScoreBertBase;
  }
  return rule.bound;
}

TEST(Tolerances, LeaveAttnAsMuchRoomAsEachGoldenIsFromFloat64) {
  ATTN_REQUIRE_SHARED();
  std::map<const Rule*, int> sets_per_rule;
  int hidden_arrays = 0;
  for (const auto& entry : std::filesystem::directory_iterator(shared_dir() / "golden")) {
    if (!entry.is_directory()) continue;
    const std::string set = entry.path().filename().string();
    // Its float64 check measures Hugging Face's switch of RoPE factors between the cached and
    // the uncached path, not rounding (../shared/golden/README.md, "Phi-3 longrope").
    if (set == "tiny-phi3-longrope-random") continue;
    const GoldenSet golden(set);
    for (const Rule& rule : kRules) {
      if (!std::filesystem::exists(golden.dir() / rule.file)) continue;
      const nlohmann::json check = golden.json(rule.file);
      if (!check.contains(rule.section) || !check[rule.section].contains(rule.key)) continue;
      const double distance = check[rule.section][rule.key].get<double>();
      EXPECT_GE(bound_for(rule, set), 2 * distance)
          << set << " " << rule.file << " " << rule.section << "." << rule.key;
      ++sets_per_rule[&rule];
    }
    // Hidden states: each array's distance relative to its largest value.
    if (!std::filesystem::exists(golden.dir() / "check_float64.json")) continue;
    const nlohmann::json check = golden.json("check_float64.json");
    if (!check.contains("hidden")) continue;
    for (const auto& [name, array] : check["hidden"].items()) {
      EXPECT_GE(tolerance::kHiddenOfLargest, 2 * array["max_abs_over_max_value"].get<double>())
          << set << " hidden/" << name;
      ++hidden_arrays;
    }
  }
  // Each rule held on some set: a renamed key would otherwise check nothing.
  for (const Rule& rule : kRules) {
    EXPECT_GT(sets_per_rule[&rule], 0) << rule.file << " " << rule.section << "." << rule.key;
    std::cout << rule.section << "." << rule.key << ": " << sets_per_rule[&rule] << " sets\n";
  }
  EXPECT_GT(hidden_arrays, 0);
  std::cout << "hidden arrays: " << hidden_arrays << "\n";
}

}  // namespace
}  // namespace attn::test
