// Issue 8: the decoder families beyond GPT-2 (Llama, Llama 3 style, Qwen2, GPT-NeoX, Phi,
// BLOOM) against Hugging Face's goldens: tokens, last-prompt logits, greedy continuations,
// hidden states, cached against uncached generation. Attention weights: test_attention.cpp.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cli_util.h"
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

// The commands other than generate and attention (tested above and in test_attention.cpp) on
// every family: info describes it, tokenize gives the library's ids, bench runs.
TEST_P(DecoderFamily, InfoTokenizeAndBenchRun) {
  using nlohmann::json;
  const std::string dir = model_dir().string();
  const CommandResult info = run_attn({"info", "-m", dir, "--json"});
  ASSERT_EQ(info.exit_status, 0) << describe(info);
  auto model = load_model(model_dir());
  const ArchSpec& spec = model->spec();
  const json described = json::parse(info.out);
  EXPECT_EQ(described["kind"], "decoder");
  EXPECT_EQ(described["n_layers"], spec.n_layer);
  EXPECT_EQ(described["n_kv_heads"], spec.n_kv_head);
  EXPECT_EQ(described["head_dim"], spec.head_dim);

  const std::string text = "The jury said it was \"well done\" -- 3 times.";
  const CommandResult tokens = run_attn({"tokenize", "-m", dir, text, "--json"});
  ASSERT_EQ(tokens.exit_status, 0) << describe(tokens);
  EXPECT_EQ(json::parse(tokens.out)["ids"].get<std::vector<int>>(),
            model->tokenizer->encode(text).ids);

  const CommandResult bench =
      run_attn({"bench", "-m", dir, "-p", "16", "-n", "8", "-r", "1", "--json"});
  ASSERT_EQ(bench.exit_status, 0) << describe(bench);
  const json figures = json::parse(bench.out);
  EXPECT_GT(figures["prompt_tokens_per_s"].get<double>(), 0);
  EXPECT_GT(figures["decode_tokens_per_s"].get<double>(), 0);
}

INSTANTIATE_TEST_SUITE_P(Shared, DecoderFamily, decoder_family_models(), model_test_name);

// window_check.json holds Hugging Face's greedy ids with the window disabled (sliding_window
// 4096). attn with the same change gives them too, up to and including the step where they
// leave the windowed golden: the window is what makes the golden tests pass, not a blind spot.
class WindowCheck : public testing::TestWithParam<const char*> {};

TEST_P(WindowCheck, WithoutTheWindowTheIdsAreHuggingFacesWithoutIt) {
  ATTN_REQUIRE_SHARED();
  using nlohmann::json;
  TempDir scratch;
  const auto model_dir = scratch / GetParam();
  std::filesystem::copy(shared_dir() / "models" / GetParam(), model_dir);
  const auto golden = shared_dir() / "golden" / GetParam();
  json config = json::parse(read_file(model_dir / "config.json"));
  config["sliding_window"] = 4096;
  write_file(model_dir / "config.json", config.dump());
  const auto model = load_model(model_dir);
  const json check = json::parse(read_file(golden / "window_check.json"));
  const std::vector<json> lines = read_jsonl(golden / "generate.jsonl");
  ASSERT_GT(check["differences"].size(), 0u);
  for (const json& difference : check["differences"]) {
    const int prompt = difference["prompt"], step = difference["first_different_step"];
    const auto want = check["no_window_generated_ids"][prompt].get<std::vector<int>>();
    const auto windowed = lines[prompt]["generated_ids"].get<std::vector<int>>();
    ASSERT_NE(want[step], windowed[step]) << "prompt " << prompt;
    GenerateOptions options;
    options.max_new_tokens = step + 1;
    options.sampling.temperature = 0;
    options.ignore_eos = true;
    const auto got = generate(*model, lines[prompt]["prompt_ids"].get<std::vector<int>>(), options)
                         .generated_ids;
    EXPECT_EQ(got, std::vector<int>(want.begin(), want.begin() + step + 1)) << "prompt " << prompt;
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, WindowCheck,
                         testing::Values("tiny-mistral-swa-random", "tiny-gemma2-random",
                                         "tiny-gemma3-random"),
                         model_test_name);

// The same weights as tiny-phi3-random in 3 safetensors shards give its goldens (issue 23).
TEST(ShardedPhi3, ReproducesTheSingleFilesGoldens) {
  ATTN_REQUIRE_SHARED();
  const auto model = shared_dir() / "models" / "tiny-phi3-random-sharded";
  const auto golden = shared_dir() / "golden" / "tiny-phi3-random";
  expect_logits_match(model, golden);
  expect_greedy_matches(model, golden);
  expect_hidden_states_match(model, golden / "hidden");
}

}  // namespace
}  // namespace attn::test
