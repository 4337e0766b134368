// GPT-2 against Hugging Face: last-position logits, greedy continuations with their per-step
// top-5, cached against uncached generation, and the hidden states of every layer.
#include <gtest/gtest.h>

#include "src/tasks/generate.h"
#include "tests/decoder_checks.h"

namespace attn::test {
namespace {

TEST(Gpt2Golden, TinyLastLogits) {
  ATTN_REQUIRE_SHARED();
  expect_logits_match(shipped_model("tiny-gpt2-brown"), GoldenSet("tiny-gpt2-brown"));
}

TEST(Gpt2Golden, TinyGreedyAndTop5) {
  ATTN_REQUIRE_SHARED();
  expect_greedy_matches(shipped_model("tiny-gpt2-brown"), GoldenSet("tiny-gpt2-brown"));
}

TEST(Gpt2Golden, TinyHiddenStates) {
  ATTN_REQUIRE_SHARED();
  expect_hidden_states_match(shipped_model("tiny-gpt2-brown"), GoldenSet("tiny-gpt2-brown"));
}

TEST(Gpt2Generate, CachedEqualsUncached) {
  expect_cached_equals_uncached(
      shipped_model("tiny-gpt2-brown"),
      {"The", "It was a dark and stormy night, and", "In 1961 the city council"});
}

// A decoder loaded for many-row passes (an analysis) has its matrices packed at load, and a pass
// over many rows gives the logits of the unpacked model, which packs at each product, bit for bit.
TEST(Gpt2Packed, ManyRowPassesGiveTheUnpackedLogits) {
  const auto unpacked = load_model(shipped_model("tiny-gpt2-brown"));
  const auto packed = load_model(shipped_model("tiny-gpt2-brown"), std::nullopt, Passes::kManyRows);
  ASSERT_FALSE(unpacked->packed_panels);
  ASSERT_TRUE(packed->packed_panels);
  const std::vector<int> ids =
      unpacked->tokenizer->encode("It was a dark and stormy night, and the rain fell").ids;
  const int n = int(ids.size());
  std::vector<int> rows(n);
  for (int i = 0; i < n; ++i) rows[i] = i;
  std::vector<std::vector<float>> logits;
  for (const Model* model : {unpacked.get(), packed.get()}) {
    const ArchSpec& spec = model->spec();
    KVCache cache(spec, n, spec.n_layer);
    RunState state(spec, n, n);
    Batch batch;
    batch.add_sequence(ids);
    model->transformer->forward(batch, cache, state);
    logits.emplace_back(std::size_t(n) * spec.vocab_size);
    model->transformer->compute_logits(state, rows, logits.back().data());
  }
  EXPECT_EQ(logits[0], logits[1]);
}

TEST(Gpt2Generate, SameSeedSameText) {
  auto model = load_model(shipped_model("tiny-gpt2-brown"));
  const auto ids = model->tokenizer->encode("The man said").ids;
  GenerateOptions options;
  options.max_new_tokens = 30;
  options.sampling = {
      .temperature = 0.9f, .top_k = 40, .top_p = 0.95f, .repetition_penalty = 1.1f, .seed = 7};
  const auto first = generate(*model, ids, options);
  const auto second = generate(*model, ids, options);
  EXPECT_EQ(first.generated_ids, second.generated_ids);
  options.sampling.seed = 8;
  const auto other = generate(*model, ids, options);
  EXPECT_NE(first.generated_ids, other.generated_ids);
}

TEST(Gpt2Generate, StopStringCutsText) {
  auto model = load_model(shipped_model("tiny-gpt2-brown"));
  const auto ids = model->tokenizer->encode("The").ids;
  GenerateOptions options;
  options.max_new_tokens = 48;
  options.sampling.temperature = 0;
  const auto full = generate(*model, ids, options);
  ASSERT_GT(full.text.size(), 10u);
  const std::string stop = full.text.substr(5, 4);
  options.stop = {stop};
  std::string streamed;
  GenerateCallbacks callbacks;
  callbacks.on_text = [&](std::string_view text) { streamed += text; };
  const auto cut = generate(*model, ids, options, callbacks);
  EXPECT_EQ(cut.stop_reason, "stop");
  EXPECT_EQ(cut.text, full.text.substr(0, full.text.find(stop)));
  EXPECT_EQ(streamed, cut.text);
}

TEST(Gpt2RandomFullSize, LogitsMatchGolden) {
  ATTN_REQUIRE_SHARED();
  const auto dir = random_model("gpt2");
  if (dir.empty())
    ATTN_SKIP_UNLESS_CI("full-size random GPT-2 not generated (python3-numpy missing?)");
  expect_logits_match(dir, GoldenSet("gpt2-124M-random"));
}

TEST(Gpt2RandomFullSize, GreedyMatchesGolden) {
  ATTN_REQUIRE_SHARED();
  const auto dir = random_model("gpt2");
  if (dir.empty())
    ATTN_SKIP_UNLESS_CI("full-size random GPT-2 not generated (python3-numpy missing?)");
  expect_greedy_matches(dir, GoldenSet("gpt2-124M-random"));
}

}  // namespace
}  // namespace attn::test
