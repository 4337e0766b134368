// attn tokenize as a tokenizer tool: a folder with only tokenizer files, texts given the way the
// other commands take them, --no-special, --decode with --skip-special, and the real tokenizers
// of ../shared/tokenizers through the command line.

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli_util.h"
#include "tests/golden.h"
#include "tests/real_tokenizers.h"
#include "tests/test_paths.h"

namespace attn::test {
namespace {

using nlohmann::json;

// The shipped GPT-2's tokenizer.json alone in a folder: no config.json, no weights.
class TokenizeCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::copy_file(shipped_model("tiny-gpt2-brown") / "tokenizer.json",
                               folder_ / "tokenizer.json");
  }
  std::string folder() const { return folder_.path().string(); }
  TempDir folder_;
};

TEST_F(TokenizeCliTest, AFolderWithOnlyTokenizerJsonIsEnough) {
  const CommandResult result = run_attn({"tokenize", "-m", folder(), "Hello world"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  EXPECT_EQ(result.out, "15496\tHello\n995\tĠworld\n");
}

TEST_F(TokenizeCliTest, SeveralArgumentsGiveOneJsonLineEach) {
  const CommandResult result = run_attn({"tokenize", "-m", folder(), "--json", "Hello", " world"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  EXPECT_EQ(result.out,
            "{\"ids\":[15496],\"tokens\":[\"Hello\"]}\n{\"ids\":[995],\"tokens\":[\"Ġworld\"]}\n");
}

TEST_F(TokenizeCliTest, FileAndStandardInputGiveOneTextPerLine) {
  write_file(folder_ / "texts.txt", "Hello\n world\n");
  const CommandResult from_file =
      run_attn({"tokenize", "-m", folder(), "--json", "--file", (folder_ / "texts.txt").string()});
  const CommandResult from_stdin =
      run_attn({"tokenize", "-m", folder(), "--json"}, folder_ / "texts.txt");
  ASSERT_EQ(from_file.exit_status, 0) << describe(from_file);
  EXPECT_EQ(from_file.out,
            "{\"line\":1,\"ids\":[15496],\"tokens\":[\"Hello\"]}\n"
            "{\"line\":2,\"ids\":[995],\"tokens\":[\"Ġworld\"]}\n");
  EXPECT_EQ(from_stdin.out, from_file.out);
}

TEST_F(TokenizeCliTest, DecodeGivesTheTextBack) {
  const CommandResult result = run_attn({"tokenize", "-m", folder(), "--decode", "15496 995"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  EXPECT_EQ(result.out, "Hello world\n");
  const CommandResult with_commas =
      run_attn({"tokenize", "-m", folder(), "--decode", "--json", "[15496,995,50256]"});
  EXPECT_EQ(with_commas.out, "{\"ids\":[15496,995,50256],\"text\":\"Hello world<|endoftext|>\"}\n");
  const CommandResult skipping =
      run_attn({"tokenize", "-m", folder(), "--decode", "--skip-special", "15496,995,50256"});
  EXPECT_EQ(skipping.out, "Hello world\n");
  const CommandResult one_id_an_argument =
      run_attn({"tokenize", "-m", folder(), "--decode", "15496", "995"});
  EXPECT_EQ(one_id_an_argument.out, "Hello world\n");
  write_file(folder_ / "ids.txt", "15496 995\n50256\n");
  const CommandResult lines =
      run_attn({"tokenize", "-m", folder(), "--decode"}, folder_ / "ids.txt");
  EXPECT_EQ(lines.out, "Hello world\n<|endoftext|>\n");
}

TEST_F(TokenizeCliTest, BadUsageIsRefused) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"tokenize", "-m", folder(), "--skip-special", "a"},
        {"tokenize", "-m", folder(), "--decode", "--no-special", "1"},
        {"tokenize", "-m", folder(), "--no-special", "--pair", "b", "a"},
        {"tokenize", "-m", folder(), "--file", "x", "a"}}) {
    const CommandResult result = run_attn(args);
    EXPECT_EQ(result.exit_status, 2) << describe(result);
  }
  const CommandResult bad_ids = run_attn({"tokenize", "-m", folder(), "--decode", "12 x"});
  EXPECT_EQ(bad_ids.exit_status, 1) << describe(bad_ids);
  EXPECT_NE(bad_ids.err.find("the arguments: expected token ids"), std::string::npos);
  const CommandResult too_large = run_attn({"tokenize", "-m", folder(), "--decode", "50257"});
  EXPECT_EQ(too_large.exit_status, 1) << describe(too_large);
  EXPECT_NE(too_large.err.find("outside the vocabulary"), std::string::npos);
}

// The real tokenizers through the command line: what it prints is what the library and
// transformers give (ids with and without special tokens, decoded text).
TEST(TokenizeRealCliTest, PrintsWhatHuggingFaceGives) {
  ATTN_REQUIRE_SHARED();
  for (const char* name : {"llama3.1", "deepseek-v3", "gemma3", "t5-unigram-tiny"}) {
    SCOPED_TRACE(name);
    const auto dir = real_tokenizer_dir(name);
    ASSERT_FALSE(dir.empty());
    // The third line: a few ordinary sentences in.
    const json vector =
        GoldenSet("tokenizer-vectors/real").jsonl(std::string(name) + ".jsonl").at(2);
    const std::string text = vector["text"];
    const json ids =
        vector.contains("ids_transformers") ? vector["ids_transformers"] : vector["ids"];
    const CommandResult encoded = run_attn({"tokenize", "-m", dir.string(), "--json", text});
    ASSERT_EQ(encoded.exit_status, 0) << describe(encoded);
    EXPECT_EQ(json::parse(encoded.out)["ids"], ids);
    const CommandResult plain =
        run_attn({"tokenize", "-m", dir.string(), "--json", "--no-special", text});
    EXPECT_EQ(json::parse(plain.out)["ids"], vector["ids_plain"]);
    const CommandResult decoded = run_attn(
        {"tokenize", "-m", dir.string(), "--decode", "--skip-special", "--json", ids.dump()});
    ASSERT_EQ(decoded.exit_status, 0) << describe(decoded);
    const json expected_text = vector.contains("decoded_skip_transformers")
                                   ? vector["decoded_skip_transformers"]
                                   : vector["decoded_skip"];
    EXPECT_EQ(json::parse(decoded.out)["text"], expected_text);
    // --offsets: the library's character offsets ([0, 0] for DeepSeek-V3's BOS, which
    // transformers adds and the library on the file alone does not).
    json offsets = GoldenSet("tokenizer-vectors/real")
                       .jsonl(std::string("offsets/") + name + ".jsonl")
                       .at(2)["offsets"];
    if (vector.contains("ids_transformers")) offsets.insert(offsets.begin(), json::array({0, 0}));
    const CommandResult with_offsets =
        run_attn({"tokenize", "-m", dir.string(), "--json", "--offsets", text});
    ASSERT_EQ(with_offsets.exit_status, 0) << describe(with_offsets);
    EXPECT_EQ(json::parse(with_offsets.out)["ids"], ids);
    EXPECT_EQ(json::parse(with_offsets.out)["offsets"], offsets);
  }
}

// --offsets in the plain table: a column "[start, end)" between the id and the token.
TEST_F(TokenizeCliTest, OffsetsAreAColumnOfTheTable) {
  const std::string text = "Hello wörld";
  const CommandResult table = run_attn({"tokenize", "-m", folder(), "--offsets", text});
  const CommandResult lines = run_attn({"tokenize", "-m", folder(), "--offsets", "--json", text});
  ASSERT_EQ(table.exit_status, 0) << describe(table);
  ASSERT_EQ(lines.exit_status, 0) << describe(lines);
  const json encoded = json::parse(lines.out);
  std::string expected;
  for (std::size_t i = 0; i < encoded["ids"].size(); ++i) {
    const json& span = encoded["offsets"][i];
    expected += std::to_string(encoded["ids"][i].get<int>()) + "\t[" +
                std::to_string(span[0].get<int>()) + ", " + std::to_string(span[1].get<int>()) +
                ")\t" + encoded["tokens"][i].get<std::string>() + "\n";
  }
  EXPECT_EQ(table.out, expected);
  // The spans cover the text in code points: "ö" is one character.
  EXPECT_EQ(encoded["offsets"].back()[1], 11) << lines.out;
  for (const char* other : {"--decode", "--no-special"}) {
    const CommandResult refused = run_attn({"tokenize", "-m", folder(), "--offsets", other, "1"});
    EXPECT_EQ(refused.exit_status, 2) << describe(refused);
    EXPECT_NE(refused.err.find("--offsets"), std::string::npos) << refused.err;
  }
}

}  // namespace
}  // namespace attn::test
