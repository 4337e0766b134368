// Beam search against Hugging Face's (../shared/golden/*/beam.jsonl): returned ids identical
// and sequences_scores within tolerance::kBeamScore on every line not marked a near tie; on
// near-tie lines the returned sequences still contain the golden best. And the pass beam search
// makes each step, every sequence's token in one batch with its own KV cache, against each sequence
// alone.

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <vector>

#include "src/tasks/beam_search.h"
#include "tests/golden.h"
#include "tests/model_util.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

void expect_beams_match(const std::filesystem::path& model_dir, const GoldenSet& golden) {
  const auto model = load_model(model_dir);
  double worst = 0;
  int lines = 0;
  for (const nlohmann::json& line : golden.jsonl("beam.jsonl")) {
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
      EXPECT_LE(diff, tolerance::kBeamScore) << where << " sequence " << i;
      EXPECT_EQ(result.sequences[i].finished, line["ends_with_eos"][i].get<bool>())
          << where << " sequence " << i;
    }
  }
  std::cout << model_dir.filename() << ": worst |score - golden| " << worst << "\n";
}

TEST(BeamSearchGolden, TinyGpt2) {
  ATTN_REQUIRE_SHARED();
  expect_beams_match(shipped_model("tiny-gpt2-brown"), GoldenSet("tiny-gpt2-brown"));
}

TEST(BeamSearchGolden, TinyLlama) {
  ATTN_REQUIRE_SHARED();
  expect_beams_match(shared_dir() / "models/tiny-llama-brown", GoldenSet("tiny-llama-brown"));
}

// Sequences of different lengths, each with its own KV cache, stepped together one token each
// (RowKind::kSeparate) give each sequence's logits bit for bit as stepping it alone does, over
// enough steps for a windowed layer to move its rows, in every weight type.
void expect_separate_sequences_equal_each_alone(const std::filesystem::path& model_dir,
                                                std::optional<WeightType> dtype) {
  const auto model = load_model(model_dir, dtype);
  const ArchSpec& spec = model->spec();
  const int vocab = spec.vocab_size, capacity = 32, steps = 12;
  const std::vector<std::vector<int>> prompts = {{5, 17, 3, 9, 12}, {8, 2, 30, 4, 11, 7, 6, 21, 1}};
  const int n = int(prompts.size());
  std::vector<KVCache> together, alone;
  RunState state(spec, capacity, capacity);
  for (const std::vector<int>& prompt : prompts) {
    together.emplace_back(spec, capacity, spec.n_layer);
    Batch batch;
    batch.add_sequence(prompt);
    model->transformer->forward(batch, together.back(), state);
    alone.push_back(together.back());
  }
  std::vector<KVCache*> caches;
  for (KVCache& cache : together) caches.push_back(&cache);
  std::vector<int> rows(n);
  for (int s = 0; s < n; ++s) rows[s] = s;
  std::vector<float> logits_together(std::size_t(n) * vocab), logits_alone(vocab);
  for (int step = 0; step < steps; ++step) {
    Batch batch;
    for (int s = 0; s < n; ++s) {
      const int token = (7 * step + 3 * s) % vocab;
      batch.add_sequence(std::span(&token, 1), {}, int(prompts[s].size()) + step);
    }
    model->transformer->forward(batch, caches, state);
    model->transformer->compute_logits(state, rows, logits_together.data(), RowKind::kSeparate);
    for (int s = 0; s < n; ++s) {
      const int token = (7 * step + 3 * s) % vocab, position = int(prompts[s].size()) + step;
      Batch one;
      one.add_sequence(std::span(&token, 1), {}, position);
      one.cache_offset = position;
      model->transformer->forward(one, alone[s], state);
      const int row = 0;
      model->transformer->compute_logits(state, std::span(&row, 1), logits_alone.data());
      for (int v = 0; v < vocab; ++v) {
        ASSERT_EQ(logits_together[std::size_t(s) * vocab + v], logits_alone[v])
            << model_dir.filename() << " " << (dtype ? weight_type_name(*dtype) : "as stored")
            << ": step " << step << ", sequence " << s << ", logit " << v;
      }
    }
  }
}

TEST(SeparateSequences, EachEqualsItsPassAlone) {
  ATTN_REQUIRE_SHARED();
  // GPT-2 ([in, out] weights), Llama (rotary), Mistral (a window of 8), Gemma-2
  // (alternating windows, soft-caps), BLOOM (ALiBi), Phi (parallel blocks).
  for (const char* name : {"tiny-llama-brown", "tiny-mistral-swa-random", "tiny-gemma2-random",
                           "tiny-bloom-random", "tiny-phi-random"}) {
    expect_separate_sequences_equal_each_alone(shared_dir() / "models" / name, std::nullopt);
  }
  for (std::optional<WeightType> dtype :
       {std::optional<WeightType>(), std::optional(WeightType::kF16),
        std::optional(WeightType::kQ8_0), std::optional(WeightType::kQ4_0)}) {
    expect_separate_sequences_equal_each_alone(shipped_model("tiny-gpt2-brown"), dtype);
  }
}

}  // namespace
}  // namespace attn::test
