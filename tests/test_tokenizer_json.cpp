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
  std::ifstream in(shared_dir() / "golden" / "tokenizer-vectors" / "real" / (name + ".jsonl"));
  ASSERT_TRUE(in) << name << ".jsonl not found";
  int lines = 0;
  int failures = 0;
  for (std::string line; std::getline(in, line);) {
    ++lines;
    const json vector = json::parse(line);
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
