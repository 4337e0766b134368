// Issue 8: the decoder families beyond GPT-2 (Llama, Llama 3 style, Qwen2, GPT-NeoX, Phi,
// BLOOM) against Hugging Face's goldens: tokens, last-prompt logits, greedy continuations,
// hidden states, cached against uncached generation. Attention weights: test_attention.cpp.
#include <gtest/gtest.h>

#include "tests/decoder_checks.h"

namespace attn::test {
namespace {

class DecoderFamily : public testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { ATTN_REQUIRE_SHARED(); }
  std::filesystem::path model_dir() const { return shared_dir() / "models" / GetParam(); }
  std::filesystem::path golden_dir() const { return shared_dir() / "golden" / GetParam(); }
};

TEST_P(DecoderFamily, TokensMatchGolden) {
  auto model = load_model(model_dir());
  int lines = 0;
  for (const auto& line : read_jsonl(golden_dir() / "tokens.jsonl")) {
    const std::string text = line["text"];
    const auto ids = model->tokenizer->encode(text).ids;
    ASSERT_EQ(ids, line["ids"].get<std::vector<int>>()) << text;
    std::vector<std::string> tokens;
    for (int id : ids) tokens.push_back(model->tokenizer->token_string(id));
    EXPECT_EQ(tokens, line["tokens"].get<std::vector<std::string>>()) << text;
    ++lines;
  }
  EXPECT_GT(lines, 0);
}

TEST_P(DecoderFamily, LastLogitsMatchGolden) { expect_logits_match(model_dir(), golden_dir()); }

TEST_P(DecoderFamily, GreedyAndTop5MatchGolden) {
  expect_greedy_matches(model_dir(), golden_dir());
}

TEST_P(DecoderFamily, HiddenStatesMatchGolden) {
  expect_hidden_states_match(model_dir(), golden_dir() / "hidden");
}

TEST_P(DecoderFamily, CachedEqualsUncached) {
  expect_cached_equals_uncached(model_dir(), {"The", "It was a dark and stormy night, and"});
}

INSTANTIATE_TEST_SUITE_P(Shared, DecoderFamily, decoder_family_models(), model_test_name);

}  // namespace
}  // namespace attn::test
