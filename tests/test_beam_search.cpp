// Beam search against Hugging Face's (../shared/golden/*/beam.jsonl): returned ids identical
// and sequences_scores within 1e-4 on every line not marked a near tie; on near-tie lines the
// returned sequences still contain the golden best.

#include <gtest/gtest.h>

#include <cmath>

#include "src/tasks/beam_search.h"
#include "tests/golden.h"
#include "tests/model_util.h"

namespace attn::test {
namespace {

void expect_beams_match(const std::filesystem::path& model_dir,
                        const std::filesystem::path& golden_file) {
  const auto model = load_model(model_dir);
  double worst = 0;
  int lines = 0;
  for (const nlohmann::json& line : read_jsonl(golden_file)) {
    const BeamSearchOptions options{.beams = line["num_beams"],
                                    .num_return = line["num_return_sequences"],
                                    .max_new_tokens = line["max_new_tokens"],
                                    .length_penalty = line["length_penalty"],
                                    .early_stopping = line["early_stopping"],
                                    .eos_ids = {line["eos_token_id"].get<int>()},
                                    .stop = nullptr};
    const auto prompt = line["prompt_ids"].get<std::vector<int>>();
    const BeamSearchResult result = beam_search(*model, prompt, options);
    const std::string where = "line " + std::to_string(lines++) + " '" +
                              line["prompt"].get<std::string>().substr(0, 30) + "'";
    ASSERT_EQ(result.sequences.size(), line["sequences"].size()) << where;
    if (line["near_tie"].get<bool>()) {
      const auto best = line["sequences"][0].get<std::vector<int>>();
      EXPECT_TRUE(std::any_of(result.sequences.begin(), result.sequences.end(),
                              [&](const BeamHypothesis& h) { return h.ids == best; }))
          << where << ": the golden best is not among the returned sequences";
      continue;
    }
    for (std::size_t i = 0; i < result.sequences.size(); ++i) {
      EXPECT_EQ(result.sequences[i].ids, line["sequences"][i].get<std::vector<int>>())
          << where << " sequence " << i;
      const double diff =
          std::abs(result.sequences[i].score - line["sequences_scores"][i].get<double>());
      worst = std::max(worst, diff);
      EXPECT_LE(diff, 1e-4) << where << " sequence " << i;
      EXPECT_EQ(result.sequences[i].finished, line["ends_with_eos"][i].get<bool>())
          << where << " sequence " << i;
    }
  }
  std::cout << model_dir.filename() << ": worst |score - golden| " << worst << "\n";
}

TEST(BeamSearchGolden, TinyGpt2) {
  ATTN_REQUIRE_SHARED();
  expect_beams_match(shipped_model("tiny-gpt2-brown"),
                     shared_dir() / "golden/tiny-gpt2-brown/beam.jsonl");
}

TEST(BeamSearchGolden, TinyLlama) {
  ATTN_REQUIRE_SHARED();
  expect_beams_match(shared_dir() / "models/tiny-llama-brown",
                     shared_dir() / "golden/tiny-llama-brown/beam.jsonl");
}

}  // namespace
}  // namespace attn::test
