// pipeline::Regex: Oniguruma with the onig crate's find_iter, as the tokenizers library runs
// tokenizer.json's patterns.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/base/error.h"
#include "src/tokenizer/pipeline/regex.h"

namespace attn::pipeline {
namespace {

std::vector<std::string> matched(const std::string& pattern, const std::string& text) {
  const Regex regex(pattern, "test");
  std::vector<Match> matches;
  regex.find_all(text, matches);
  std::vector<std::string> pieces;
  for (const auto& [start, end] : matches) pieces.push_back(text.substr(start, end - start));
  return pieces;
}

TEST(PipelineRegex, Llama3ContractionsAreCaseInsensitiveAndDigitsGoByThree) {
  const std::string llama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  EXPECT_EQ(matched(llama3, "DON'T do"), (std::vector<std::string>{"DON", "'T", " do"}));
  EXPECT_EQ(matched(llama3, "1234567890"), (std::vector<std::string>{"123", "456", "789", "0"}));
  EXPECT_EQ(matched(llama3, "a\n\nb"), (std::vector<std::string>{"a", "\n\n", "b"}));
  EXPECT_EQ(matched(llama3, "a   b"), (std::vector<std::string>{"a", "  ", " b"}));
}

TEST(PipelineRegex, UnicodeClassesSeeNonAsciiLettersAndNumbers) {
  EXPECT_EQ(matched(R"(\p{L}+|\p{N})", "Việt٣x"), (std::vector<std::string>{"Việt", "٣", "x"}));
}

TEST(PipelineRegex, EmptyMatchesMoveOnOneCharacter) {
  // "x*" matches empty at every position but after a non-empty match, as onig's find_iter.
  EXPECT_EQ(matched("x*", "axxé"), (std::vector<std::string>{"", "xx", ""}));
}

TEST(PipelineRegex, APatternThatDoesNotCompileIsAnErrorNamingWhere) {
  try {
    Regex("(unclosed", "tokenizer.json: pre_tokenizer.pattern.Regex");
    FAIL() << "compiled";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("tokenizer.json: pre_tokenizer.pattern.Regex"),
              std::string::npos);
    EXPECT_NE(std::string(error.what()).find("does not compile"), std::string::npos);
  }
}

TEST(PipelineRegex, CatastrophicBacktrackingStopsWithAnError) {
  const Regex regex("(a+)+$", "test");
  std::vector<Match> matches;
  std::string subject(5000, 'a');
  subject += 'b';  // (GCC 12 warns, wrongly, of bounds on std::string(5000, 'a') + "b")
  EXPECT_THROW(regex.find_all(subject, matches), Error);
}

}  // namespace
}  // namespace attn::pipeline
