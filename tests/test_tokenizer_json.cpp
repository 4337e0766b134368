// tokenizer.json run as Hugging Face's tokenizers library runs it: every line of
// ../shared/golden/tokenizer-vectors/real/NAME.jsonl (683 texts per tokenizer), every field.

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/tokenizer/tokenizer.h"
#include "src/tokenizer/tokenizer_json.h"
#include "tests/golden.h"
#include "tests/real_tokenizers.h"
#include "tests/test_paths.h"

namespace attn::test {
namespace {

using nlohmann::json;

std::vector<std::string> token_strings(const Tokenizer& tokenizer, const std::vector<int>& ids) {
  std::vector<std::string> tokens;
  for (int id : ids) tokens.push_back(tokenizer.token_string(id));
  return tokens;
}

class RealTokenizerVectors : public ::testing::TestWithParam<const char*> {};

TEST_P(RealTokenizerVectors, EveryFieldOfEveryLineIsIdentical) {
  ATTN_REQUIRE_SHARED();
  const std::string name = GetParam();
  const auto dir = real_tokenizer_dir(name);
  ASSERT_FALSE(dir.empty()) << name << ": could not unpack the tokenizer";
  const auto tokenizer = load_tokenizer_json(dir);
  int lines = 0;
  int failures = 0;
  for (const json& vector : GoldenSet("tokenizer-vectors/real").jsonl(name + ".jsonl")) {
    ++lines;
    const std::string text = vector["text"];
    // Where Python transformers differs from the Rust library (tokenizer_config.json), attn
    // follows transformers: that is what Hugging Face users get.
    const auto expected = [&](const char* field) {
      const std::string transformers_field = std::string(field) + "_transformers";
      return vector.contains(transformers_field) ? vector[transformers_field] : vector[field];
    };
    const std::vector<int> ids = tokenizer->encode(text).ids;
    const std::vector<int> ids_plain = tokenizer->encode_plain(text);
    const std::vector<int> expected_ids = expected("ids");
    const bool same = ids == expected_ids &&
                      ids_plain == vector["ids_plain"].get<std::vector<int>>() &&
                      token_strings(*tokenizer, vector["ids"]) ==
                          vector["tokens"].get<std::vector<std::string>>() &&
                      tokenizer->decode(vector["ids"].get<std::vector<int>>(), false) ==
                          expected("decoded").get<std::string>() &&
                      tokenizer->decode(vector["ids"].get<std::vector<int>>(), true) ==
                          expected("decoded_skip").get<std::string>();
    if (!same && ++failures <= 5) {
      ADD_FAILURE() << name << " line " << lines << " " << json(text).dump() << "\n  ids      "
                    << json(ids).dump() << "\n  expected " << json(expected_ids).dump()
                    << "\n  plain    " << json(ids_plain).dump() << "\n  expected "
                    << vector["ids_plain"] << "\n  decoded  "
                    << json(tokenizer->decode(vector["ids"].get<std::vector<int>>(), false))
                           .dump(-1, ' ', false, json::error_handler_t::replace)
                    << "\n  expected " << expected("decoded").dump();
    }
  }
  EXPECT_EQ(lines, 683);
  EXPECT_EQ(failures, 0) << name << ": " << failures << " of " << lines << " lines differ";
}

// The offsets of offsets/NAME.jsonl: the Rust library's encode(text, addSpecialTokens=true)
// getOffsets(), in code points, for every text of texts.json.
TEST_P(RealTokenizerVectors, OffsetsOfEveryLineAreIdentical) {
  ATTN_REQUIRE_SHARED();
  const std::string name = GetParam();
  const auto dir = real_tokenizer_dir(name);
  ASSERT_FALSE(dir.empty()) << name << ": could not unpack the tokenizer";
  const auto tokenizer = load_tokenizer_json(dir);
  const TokenOffsets& offsets = tokenizer->offsets();
  const GoldenSet golden("tokenizer-vectors/real");
  const std::vector<json> vectors = golden.jsonl(name + ".jsonl");
  const std::vector<json> expected_lines = golden.jsonl("offsets/" + name + ".jsonl");
  ASSERT_EQ(vectors.size(), expected_lines.size());
  int failures = 0;
  for (std::size_t line = 0; line < vectors.size(); ++line) {
    const std::string text = vectors[line]["text"];
    json expected = expected_lines[line]["offsets"];
    // DeepSeek-V3's BOS, which transformers adds and the Rust library on the file alone does
    // not (ids_transformers), is a special token the post-processor adds: [0, 0].
    if (vectors[line].contains("ids_transformers"))
      expected.insert(expected.begin(), json::array({0, 0}));
    json actual = json::array();
    for (const CharSpan& span : offsets.token_offsets(text)) {
      actual.push_back({span.start, span.end});
    }
    if (actual != expected && ++failures <= 5) {
      ADD_FAILURE() << name << " line " << line + 1 << " " << json(text).dump() << "\n  ids      "
                    << json(tokenizer->encode(text).ids).dump() << "\n  offsets  " << actual.dump()
                    << "\n  expected " << expected.dump();
    }
  }
  EXPECT_EQ(failures, 0) << name << ": " << failures << " of " << vectors.size() << " lines differ";
}

INSTANTIATE_TEST_SUITE_P(Real, RealTokenizerVectors,
                         ::testing::Values("llama3", "llama3.1", "qwen3", "gemma3", "mistral",
                                           "deepseek-v3", "t5-unigram-tiny", "gpt2",
                                           "bert-base-uncased"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace attn::test

namespace attn::test {
namespace {

// A folder with the shipped BERT's tokenizer files (tokenizer.json, or vocab.txt for the slow
// reader) and `config` as its tokenizer_config.json.
std::filesystem::path bert_folder(const std::filesystem::path& dir, const char* tokenizer_file,
                                  const nlohmann::json& config) {
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(source_dir() / "models" / "tiny-bert-brown" / tokenizer_file,
                             dir / tokenizer_file);
  std::ofstream(dir / "tokenizer_config.json") << config.dump();
  return dir;
}

// BertTokenizerFast rebuilds the file's normalizer from do_lower_case, strip_accents and
// tokenize_chinese_chars when they disagree with it: a cased config over an uncased
// tokenizer.json tokenizes as the slow class does with that config.
TEST(TokenizerJsonClassArguments, BertConfigOverridesTheFilesNormalizer) {
  const auto root =
      std::filesystem::temp_directory_path() / ("attn-bert-args-" + std::to_string(getpid()));
  const nlohmann::json config = {{"tokenizer_class", "BertTokenizer"}, {"do_lower_case", false}};
  const auto fast = load_tokenizer(bert_folder(root / "fast", "tokenizer.json", config));
  const auto slow = load_tokenizer(bert_folder(root / "slow", "vocab.txt", config));
  for (const char* text : {"Hello World", "Héllo wörld", "The Jury Said"}) {
    EXPECT_EQ(fast->encode(text).ids, slow->encode(text).ids) << text;
  }
  EXPECT_NE(fast->encode("Hello").ids,
            load_tokenizer(bert_folder(root / "uncased", "tokenizer.json",
                                       {{"tokenizer_class", "BertTokenizer"}}))
                ->encode("Hello")
                .ids);
  std::filesystem::remove_all(root);
}

// Named tokens that neither tokenizer_config.json nor special_tokens_map.json gives are the
// class's defaults: BertTokenizerFast's mask token is "[MASK]".
TEST(TokenizerJsonClassArguments, NamedTokensDefaultToTheClasses) {
  const auto root =
      std::filesystem::temp_directory_path() / ("attn-bert-defaults-" + std::to_string(getpid()));
  const auto tokenizer = load_tokenizer(
      bert_folder(root, "tokenizer.json", {{"tokenizer_class", "BertTokenizerFast"}}));
  EXPECT_EQ(tokenizer->mask_id(), 103);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace attn::test
