// generation_config.json: its defaults apply when the command line does not give a setting,
// command-line flags win, and eos_token_id may be a list (generation stops at any of them).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cli_util.h"
#include "tests/test_paths.h"

namespace attn::test {
namespace {

using nlohmann::json;

class GenerationConfigTest : public testing::Test {
 protected:
  // A copy of the shipped tiny GPT-2 with the given generation_config.json, in scratch/`name`.
  std::filesystem::path model_with(const json& generation_config, const char* name = "model") {
    const auto model = scratch_ / name;
    std::filesystem::copy(shipped_model("tiny-gpt2-brown"), model);
    write_file(model / "generation_config.json", generation_config.dump());
    return model;
  }

  json generate(const std::filesystem::path& model, std::vector<std::string> args) {
    args.insert(args.begin(), {"generate", "-m", model.string(), "-p", "The jury said", "--json"});
    const CommandResult result = run_attn(args);
    EXPECT_EQ(result.exit_status, 0) << describe(result);
    return json::parse(result.out);
  }

  TempDir scratch_;
};

TEST_F(GenerationConfigTest, DoSampleFalseMeansGreedyAndMaxNewTokensApplies) {
  const auto model = model_with({{"do_sample", false}, {"max_new_tokens", 7}});
  const json from_config = generate(model, {});
  const json greedy = generate(shipped_model("tiny-gpt2-brown"), {"--temp", "0", "-n", "7"});
  EXPECT_EQ(from_config["generated_ids"].size(), 7u);
  EXPECT_EQ(from_config["generated_ids"], greedy["generated_ids"]);
}

// A sampling option on the command line (--seed, --top-k, ...) turns sampling on over do_sample
// false, as llama.cpp's flags do: with Hugging Face's sampling defaults, as do_sample true
// without other settings gives them.
TEST_F(GenerationConfigTest, ASamplingOptionTurnsSamplingOnOverDoSampleFalse) {
  const auto model = model_with({{"do_sample", false}, {"max_new_tokens", 7}});
  const auto sampling = model_with({{"do_sample", true}, {"max_new_tokens", 7}}, "sampling");
  const json expected = generate(sampling, {"--seed", "3"});
  const json greedy = generate(model, {});
  ASSERT_EQ(expected["generated_ids"].size(), 7u);
  ASSERT_NE(expected["generated_ids"], greedy["generated_ids"]) << "seed 3 samples other tokens";
  EXPECT_EQ(generate(model, {"--seed", "3"})["generated_ids"], expected["generated_ids"]);
  EXPECT_EQ(generate(model, {"--seed", "3", "--top-k", "50"})["generated_ids"],
            expected["generated_ids"]);
  EXPECT_EQ(generate(model, {"--seed", "3", "--top-p", "1"})["generated_ids"],
            expected["generated_ids"]);
  // --temp 0 stays greedy, and --seed -1 is a random seed: sampling too, with the seed reported.
  EXPECT_EQ(generate(model, {"--temp", "0"})["generated_ids"], greedy["generated_ids"]);
  const json random = generate(model, {"--seed", "-1"});
  EXPECT_EQ(generate(sampling,
                     {"--seed", std::to_string(random["seed"].get<uint64_t>())})["generated_ids"],
            random["generated_ids"]);
}

TEST_F(GenerationConfigTest, FlagsOverrideTheConfig) {
  const auto model = model_with({{"do_sample", false}, {"max_new_tokens", 7}});
  const json sampled = generate(model, {"--temp", "1.5", "-n", "20", "--seed", "5"});
  const json same_flags =
      generate(shipped_model("tiny-gpt2-brown"), {"--temp", "1.5", "-n", "20", "--seed", "5"});
  EXPECT_EQ(sampled["generated_ids"].size(), 20u);
  EXPECT_EQ(sampled["generated_ids"], same_flags["generated_ids"]);
}

TEST_F(GenerationConfigTest, DoSampleTrueUsesItsTopK) {
  // top_k 1 makes sampling greedy whatever the temperature: the config's top_k is in effect.
  const auto model = model_with({{"do_sample", true}, {"temperature", 5.0}, {"top_k", 1}});
  const json from_config = generate(model, {"-n", "12", "--seed", "9"});
  const json greedy = generate(shipped_model("tiny-gpt2-brown"), {"--temp", "0", "-n", "12"});
  EXPECT_EQ(from_config["generated_ids"], greedy["generated_ids"]);
}

TEST_F(GenerationConfigTest, DoSampleTrueUsesItsMinPAndTypicalP) {
  // min_p 1 keeps only the most likely token: greedy, whatever the temperature.
  const auto model = model_with({{"do_sample", true}, {"temperature", 5.0}, {"min_p", 1.0}});
  const json greedy = generate(shipped_model("tiny-gpt2-brown"), {"--temp", "0", "-n", "12"});
  EXPECT_EQ(generate(model, {"-n", "12", "--seed", "9"})["generated_ids"], greedy["generated_ids"]);
  // The config's typical_p gives the same tokens as the flag.
  const auto typical = model_with({{"do_sample", true}, {"typical_p", 0.5}}, "typical");
  EXPECT_EQ(generate(typical, {"-n", "12", "--seed", "9"})["generated_ids"],
            generate(shipped_model("tiny-gpt2-brown"),
                     {"-n", "12", "--seed", "9", "--temp", "1", "--top-k", "50", "--typical-p",
                      "0.5"})["generated_ids"]);
}

TEST_F(GenerationConfigTest, StopsAtAnyOfSeveralEosIds) {
  const json greedy = generate(shipped_model("tiny-gpt2-brown"), {"--temp", "0", "-n", "12"});
  const int third = greedy["generated_ids"][2];
  ASSERT_NE(third, 50256);
  const auto model = model_with({{"eos_token_id", {50256, third}}});
  const json stopped = generate(model, {"--temp", "0", "-n", "12"});
  EXPECT_EQ(stopped["stop_reason"], "eos");
  EXPECT_EQ(stopped["generated_ids"].size(), 2u);
  const json ignored = generate(model, {"--temp", "0", "-n", "12", "--ignore-eos"});
  EXPECT_EQ(ignored["generated_ids"], greedy["generated_ids"]);
}

TEST_F(GenerationConfigTest, InfoPrintsTheDefaults) {
  const auto model = model_with({{"do_sample", true}, {"top_p", 0.9}, {"eos_token_id", {1, 2}}});
  const CommandResult result = run_attn({"info", "-m", model.string(), "--json"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const json info = json::parse(result.out);
  EXPECT_EQ(info["generation_defaults"]["eos_token_ids"], json({1, 2}));
  EXPECT_EQ(info["generation_defaults"]["do_sample"], true);
  EXPECT_NEAR(info["generation_defaults"]["top_p"].get<double>(), 0.9, 1e-6);
}

}  // namespace
}  // namespace attn::test
