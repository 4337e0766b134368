#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/error.h"
#include "src/tokenizer/pipeline/decoders.h"

// Every expected text here is what the tokenizers library (0.23.2, through its Node binding)
// decodes for the same decoder JSON and tokens.

namespace attn::pipeline {
namespace {

std::vector<std::string> decode_chain(std::string_view decoder_json,
                                      std::vector<std::string> tokens) {
  const nlohmann::json config = nlohmann::json::parse(decoder_json);
  make_decoder(ConfigNode(config, "tokenizer.json", "decoder"))->decode_chain(tokens);
  return tokens;
}

std::string decode(std::string_view decoder_json, std::vector<std::string> tokens) {
  std::string text;
  for (const std::string& token : decode_chain(decoder_json, std::move(tokens))) text += token;
  return text;
}

std::string decoder_load_error(std::string_view decoder_json) {
  const nlohmann::json config = nlohmann::json::parse(decoder_json);
  try {
    make_decoder(ConfigNode(config, "tokenizer.json", "decoder"));
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

constexpr std::string_view kByteLevelDecoder =
    R"({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true})";

TEST(ByteLevelDecoder, JoinsTheBytesOfAllTokensIntoOneString) {
  // "âĸ" "ģĊ" are the bytes E2 96 / 81 0A: "▁" is split across the two tokens.
  EXPECT_EQ(decode_chain(kByteLevelDecoder, {"âĸ", "ģĊ", "<|end|>", "Ġx"}),
            std::vector<std::string>{"▁\n<|end|> x"});
}

TEST(ByteLevelDecoder, ReplacesInvalidUtf8ByMaximalSubparts) {
  // E0 80 | F0 9F 98 ED A0 80 | C0 80 F5: the truncated 4-byte sequence is one U+FFFD, every
  // other bad byte one each.
  EXPECT_EQ(decode(kByteLevelDecoder, {"Ġhi", "àĢ", "ðŁĺ", "íłĢ", "ÀĢõ"}), " hi���������");
  // A sequence completed by the next token is whole again.
  EXPECT_EQ(decode(kByteLevelDecoder, {"ðŁĺ", "Ģ"}), "😀");
}

TEST(ByteLevelDecoder, ReadsTokensOfByteCharactersOnlyAsBytes) {
  // Every character of "<|é|>" is a byte character, so é is the lone byte E9.
  EXPECT_EQ(decode(kByteLevelDecoder, {"âĸ", "<|é|>", "ģ"}), "�<|�|>�");
}

TEST(MetaspaceDecoder, DropsEveryReplacementOfTheFirstToken) {
  EXPECT_EQ(decode(R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first",
                       "split": false})",
                   {"▁▁Hey", "▁friend▁", "▁"}),
            "Hey friend  ");
  EXPECT_EQ(decode(R"({"type": "Metaspace", "replacement": "_", "add_prefix_space": true})",
                   {"_Hey", "_friend"}),
            "Hey friend");
}

TEST(MetaspaceDecoder, KeepsTheFirstSpaceWhenNeverPrepending) {
  EXPECT_EQ(decode(R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never",
                       "split": true})",
                   {"▁Hey", "▁friend"}),
            " Hey friend");
  EXPECT_EQ(decode(R"({"type": "Metaspace", "replacement": "_", "add_prefix_space": false,
                       "prepend_scheme": "never"})",
                   {"_Hey", "_friend"}),
            " Hey friend");
}

TEST(MetaspaceDecoder, RefusesContradictorySettings) {
  EXPECT_EQ(
      decoder_load_error(R"({"type": "Metaspace", "replacement": "_", "add_prefix_space": false})"),
      "tokenizer.json: decoder.add_prefix_space: false does not match prepend_scheme "
      "\"always\"");
  EXPECT_EQ(decoder_load_error(R"({"type": "Metaspace", "replacement": "ab"})"),
            "tokenizer.json: decoder.replacement: expected a single character");
}

TEST(ByteFallbackDecoder, TurnsByteRunsIntoText) {
  EXPECT_EQ(decode_chain(R"({"type": "ByteFallback"})", {"<0xE2>", "<0x96>", "<0x81>", "a"}),
            (std::vector<std::string>{"▁", "a"}));
}

TEST(ByteFallbackDecoder, GivesOneReplacementPerByteOfAnInvalidRun) {
  // "<0x+A>" is the byte 0A (Rust's from_str_radix takes the sign); "<0xff>" is FF.
  EXPECT_EQ(
      decode_chain(R"({"type": "ByteFallback"})", {"<0xE2>", "<0x96>", "<0x+A>", "<0x61>", "<0xff>",
                                                   "b", "<0x-1>", "<0xG1>", "<0x410>"}),
      (std::vector<std::string>{"�", "�", "�", "�", "�", "b", "<0x-1>", "<0xG1>", "<0x410>"}));
}

TEST(FuseDecoder, JoinsEverythingIntoOneToken) {
  EXPECT_EQ(decode_chain(R"({"type": "Fuse"})", {"a", "b ", "c"}),
            std::vector<std::string>{"ab c"});
}

TEST(StripDecoder, RemovesUpToStartAndStopCopiesOfTheCharacter) {
  EXPECT_EQ(decode_chain(R"({"type": "Strip", "content": " ", "start": 1, "stop": 2})",
                         {"  a  ", "   ", " b", "c   "}),
            (std::vector<std::string>{" a", "", "b", "c "}));
  EXPECT_EQ(decode(R"({"type": "Strip", "content": "▁", "start": 3, "stop": 0})", {"▁▁▁▁x", "▁"}),
            "▁x");
}

TEST(ReplaceDecoder, ReplacesAString) {
  EXPECT_EQ(decode(R"({"type": "Replace", "pattern": {"String": "▁"}, "content": " "})",
                   {"▁a▁▁b", "c", "▁"}),
            " a  bc ");
}

TEST(ReplaceDecoder, AnEmptyStringMatchesAroundEveryCharacterOfANonEmptyToken) {
  EXPECT_EQ(
      decode(R"({"type": "Replace", "pattern": {"String": ""}, "content": "X"})", {"ab", "", "é"}),
      "XaXbXXéX");
}

TEST(ReplaceDecoder, ReplacesRegexMatches) {
  EXPECT_EQ(decode(R"({"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": "_"})",
                   {"a  b\tc ", "d"}),
            "a_b_c_d");
  EXPECT_EQ(decode(R"({"type": "Replace", "pattern": {"Regex": "(?<=a)b"}, "content": "X"})",
                   {"abab", "b"}),
            "aXaXb");
}

TEST(ReplaceDecoder, RegexEmptyMatchesFollowTheLibrary) {
  constexpr std::string_view kStars =
      R"({"type": "Replace", "pattern": {"Regex": "a*"}, "content": "X"})";
  EXPECT_EQ(decode(kStars, {"baac"}), "XbXcX");
  EXPECT_EQ(decode(kStars, {"aa"}), "X");
  EXPECT_EQ(decode(kStars, {"b"}), "XbX");
  EXPECT_EQ(decode(kStars, {""}), "");
}

TEST(WordPieceDecoder, JoinsWordsWithSpacesAndCleansUpEachToken) {
  EXPECT_EQ(decode(R"({"type": "WordPiece", "prefix": "##", "cleanup": true})",
                   {"##he", "##llo", "world", ".", "do", "not", "n't", "'", "s", "##!", "?"}),
            "##hello world. do notn't ' s!?");
  EXPECT_EQ(decode(R"({"type": "WordPiece", "prefix": "##", "cleanup": false})",
                   {"##he", "##llo", "world", ".", "n't"}),
            "##hello world . n't");
  EXPECT_EQ(decode(R"({"type": "WordPiece", "prefix": "", "cleanup": true})", {"he", "llo", " ."}),
            "hello.");
}

TEST(BpeDecoder, TurnsTheSuffixIntoSpacesButInTheLastToken) {
  EXPECT_EQ(
      decode(R"({"type": "BPEDecoder", "suffix": "</w>"})", {"hel", "lo</w>", "wor</w>ld</w>"}),
      "hello world");
  EXPECT_EQ(decode(R"({"type": "BPEDecoder", "suffix": ""})", {"ab", "c"}), " a b c");
  EXPECT_EQ(decode(R"({"type": "BPEDecoder", "suffix": "</w>"})", {}), "");
}

TEST(CtcDecoder, CollapsesRepeatsAndDropsPadding) {
  EXPECT_EQ(decode(R"({"type": "CTC", "pad_token": "<pad>", "word_delimiter_token": "|",
                       "cleanup": true})",
                   {"<pad>", "h", "h", "e", "<pad>", "l", "l", "|", "|", "o", ".", "|", "x<pad>y"}),
            "hel o. xy");
  EXPECT_EQ(decode(R"({"type": "CTC", "pad_token": "<pad>", "word_delimiter_token": "|",
                       "cleanup": false})",
                   {"h", "h", "|", "o"}),
            "h|o");
}

TEST(SequenceDecoder, RunsGemmasChain) {
  EXPECT_EQ(decode(R"({"type": "Sequence", "decoders": [
                         {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                         {"type": "ByteFallback"}, {"type": "Fuse"},
                         {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})",
                   {"▁Hello", "▁wor", "ld", "<0xE2>", "<0x96>", "<0x81>", "<0xFF>"}),
            "Hello world����");
  EXPECT_EQ(decode(R"({"type": "Sequence", "decoders": []})", {"a", "b"}), "ab");
}

TEST(MakeDecoder, RefusesUnknownTypes) {
  EXPECT_EQ(decoder_load_error(R"({"type": "Foo"})"),
            "tokenizer.json: decoder: decoder type \"Foo\" is not implemented by attn");
  EXPECT_EQ(decoder_load_error(
                R"({"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "Bar"}]})"),
            "tokenizer.json: decoder.decoders[1]: decoder type \"Bar\" is not implemented by attn");
}

TEST(MakeDecoder, NamesTheFieldOfABadSetting) {
  EXPECT_EQ(decoder_load_error(R"({"type": "WordPiece", "prefix": "##"})"),
            "tokenizer.json: decoder.cleanup is missing");
  EXPECT_EQ(decoder_load_error(R"({"type": "Replace", "pattern": {"Glob": "*"}, "content": ""})"),
            "tokenizer.json: decoder.pattern: expected {\"String\": ...} or {\"Regex\": ...}, "
            "found {\"Glob\":\"*\"}");
}

TEST(MakeDecoder, RefusesDeepNestingWithoutRecursingForever) {
  nlohmann::json config = {{"type", "Fuse"}};
  for (int depth = 0; depth < 1000; ++depth) {
    config = {{"type", "Sequence"}, {"decoders", nlohmann::json::array({std::move(config)})}};
  }
  EXPECT_THROW(make_decoder(ConfigNode(config, "tokenizer.json", "decoder")), Error);
}

}  // namespace
}  // namespace attn::pipeline
