// Pre-tokenizers of tokenizer.json. Every expected list of pieces was checked against the
// tokenizers library itself (its Node binding, tokenizers 0.23.2, preTokenizeString).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "src/base/error.h"
#include "src/tokenizer/pipeline/pre_tokenizers.h"

namespace attn::pipeline {
namespace {

using Texts = std::vector<std::string>;
using std::string_literals::operator""s;  // texts with a NUL byte

std::vector<Piece> run(const std::string& config, const std::string& text, bool at_input_start) {
  const nlohmann::json value = nlohmann::json::parse(config);
  const auto pre_tokenizer =
      make_pre_tokenizer(ConfigNode(value, "tokenizer.json", "pre_tokenizer"));
  std::vector<Piece> out;
  pre_tokenizer->pre_tokenize(Piece{text, at_input_start, {}}, out);
  return out;
}

Texts pieces(const std::string& config, const std::string& text) {
  Texts texts;
  for (const Piece& piece : run(config, text, true)) texts.push_back(piece.text);
  return texts;
}

// The message of the Error that building `config` throws ("" when it builds).
std::string build_error(const nlohmann::json& config) {
  try {
    make_pre_tokenizer(ConfigNode(config, "tokenizer.json", "pre_tokenizer"));
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

// The pre_tokenizer sections of the real files in shared/tokenizers/real, verbatim.
const char* const kLlama3 =
    R"json({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": false}, {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]})json";

const char* const kQwen3 =
    R"json({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": false}, {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]})json";

const char* const kDeepSeekV3 =
    R"json({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}"}, "behavior": "Isolated", "invert": false}, {"type": "Split", "pattern": {"Regex": "[一-龥぀-ゟ゠-ヿ]+"}, "behavior": "Isolated", "invert": false}, {"type": "Split", "pattern": {"Regex": "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": false}, {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]})json";

const char* const kGemma3 =
    R"json({"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": false})json";

const char* const kT5UnigramTiny =
    R"json({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true})json";

TEST(PipelinePreTokenizers, SplitBehaviorsGroupDelimitersAsTheLibraryDoes) {
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"String": "-"}, "behavior": "Removed", "invert": false})",
          "the-final--countdown-"),
      (Texts{"the", "final", "countdown"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"String": "-"}, "behavior": "Isolated", "invert": false})",
          "the-final--countdown-"),
      (Texts{"the", "-", "final", "-", "-", "countdown", "-"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"String": "-"}, "behavior": "MergedWithPrevious", "invert": false})",
          "the-final--countdown-"),
      (Texts{"the-", "final-", "-", "countdown-"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"String": "-"}, "behavior": "MergedWithNext", "invert": false})",
          "the-final--countdown-"),
      (Texts{"the", "-final", "-", "-countdown", "-"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"String": "-"}, "behavior": "Contiguous", "invert": false})",
          "the-final--countdown-"),
      (Texts{"the", "-", "final", "--", "countdown", "-"}));
}

TEST(PipelinePreTokenizers, InvertSwapsMatchesAndTheTextBetween) {
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"Regex": "\\w+|[^\\w\\s]+"}, "behavior": "Removed", "invert": true})",
          "How are  you doing?"),
      (Texts{"How", "are", "you", "doing", "?"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"Regex": "\\w+|[^\\w\\s]+"}, "behavior": "Isolated", "invert": true})",
          "How are  you doing?"),
      (Texts{"How", " ", "are", "  ", "you", " ", "doing", "?"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"Regex": "\\w+|[^\\w\\s]+"}, "behavior": "MergedWithPrevious", "invert": true})",
          "How are  you doing?"),
      (Texts{"How ", "are  ", "you ", "doing", "?"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"Regex": "\\w+|[^\\w\\s]+"}, "behavior": "MergedWithNext", "invert": true})",
          "How are  you doing?"),
      (Texts{"How", " are", "  you", " doing", "?"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"Regex": "\\w+|[^\\w\\s]+"}, "behavior": "Contiguous", "invert": true})",
          "How are  you doing?"),
      (Texts{"How", " ", "are", "  ", "you", " ", "doing?"}));
}

TEST(PipelinePreTokenizers, EmptyRegexMatchesEndTheSpanBeforeThem) {
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"Regex": "x*"}, "behavior": "Removed", "invert": false})",
          "axxéb"),
      (Texts{"a", "é", "b"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"Regex": "x*"}, "behavior": "Isolated", "invert": false})",
          "axxéb"),
      (Texts{"a", "xx", "é", "b"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"Regex": "x*"}, "behavior": "MergedWithPrevious", "invert": false})",
          "axxéb"),
      (Texts{"axx", "é", "b"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"Regex": "x*"}, "behavior": "MergedWithNext", "invert": false})",
          "axxéb"),
      (Texts{"a", "xxé", "b"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"Regex": "x*"}, "behavior": "Contiguous", "invert": false})",
          "axxéb"),
      (Texts{"a", "xx", "é", "b"}));
}

TEST(PipelinePreTokenizers, StringPatternIsALiteral) {
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"String": ".*"}, "behavior": "Isolated", "invert": false})",
          "a.*b.c*"),
      (Texts{"a", ".*", "b.c*"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"String": "ab"}, "behavior": "Removed", "invert": false})",
          "aabbab"),
      (Texts{"a", "b"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"String": ""}, "behavior": "Isolated", "invert": false})",
          "añb"),
      (Texts{"a", "ñ", "b"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"String": ""}, "behavior": "MergedWithNext", "invert": true})",
          "añb"),
      (Texts{"a", "ñ", "b"}));
}

TEST(PipelinePreTokenizers, Llama3Split) {
  EXPECT_EQ(
      pieces(
          R"({"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": false})",
          "I'M here, it's 12345 ñandú!!\n\n  ok   \tend  "),
      (Texts{"I", "'M", " here", ",", " it", "'s", " ", "123", "45", " ñandú", "!!\n\n", " ", " ok",
             "   ", "\tend", "  "}));
  EXPECT_EQ(pieces(kLlama3, "Hello world 2024's\n\tdone?"),
            (Texts{"Hello", "Ġworld", "Ġ", "202", "4", "'s", "Ċ", "ĉdone", "?"}));
}

TEST(PipelinePreTokenizers, Qwen3SplitsDigitsOneByOne) {
  EXPECT_EQ(pieces(kQwen3, "Qwen3 has 12345 params; 你好世界 'LL"),
            (Texts{"Qwen", "3", "Ġhas", "Ġ", "1", "2", "3", "4", "5", "Ġparams", ";",
                   "Ġä½łå¥½ä¸ĸçķĮ", "Ġ'", "LL"}));
}

TEST(PipelinePreTokenizers, DeepSeekV3SplitsCjkAndDigits) {
  EXPECT_EQ(
      pieces(kDeepSeekV3, "DeepSeek-V3 在2024年12月发布，ひらがなカタカナ ok!! e\u0301té\n\nx"),
      (Texts{"DeepSeek", "-V", "3", "Ġ", "åľ¨", "202", "4", "å¹´", "12", "æľĪåıĳå¸ĥ", "ï¼Į",
             "ãģ²ãĤīãģĮãģªãĤ«ãĤ¿ãĤ«ãĥĬ", "Ġok", "!!", "ĠeÌģtÃ©", "ĊĊ", "x"}));
}

TEST(PipelinePreTokenizers, Gemma3MergesSpacesWithThePreviousWord) {
  EXPECT_EQ(pieces(kGemma3, "  two  spaces here "),
            (Texts{" ", " ", "two ", " ", "spaces ", "here "}));
}

TEST(PipelinePreTokenizers, ByteLevelMapsEveryByteAndSplitsWithGpt2Regex) {
  EXPECT_EQ(
      pieces(
          R"({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true})",
          "Hello  world's\né\u00ad\x00"
          "\x7f"
          " 123🙂"s),
      (Texts{"Hello", "Ġ", "Ġworld", "'s", "Ċ", "Ã©", "ÂŃĀġ", "Ġ123", "ðŁĻĤ"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true})",
          "hi there"),
      (Texts{"Ġhi", "Ġthere"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true})",
          " hi"),
      (Texts{"Ġhi"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": false})",
          "a b\tc"),
      (Texts{"ĠaĠbĉc"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true}]})",
          "every word gets it"),
      (Texts{"Ġevery", "Ġword", "Ġgets", "Ġit"}));
}

TEST(PipelinePreTokenizers, MetaspaceReplacesSpacesAndSplitsBeforeThem) {
  EXPECT_EQ(pieces(kT5UnigramTiny, "Hello  world ▁x"), (Texts{"▁Hello", "▁", "▁world", "▁", "▁x"}));
  EXPECT_EQ(pieces(kT5UnigramTiny, " lead"), (Texts{"▁lead"}));
  EXPECT_EQ(pieces(R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never"})",
                   "no prefix  here"),
            (Texts{"no", "▁prefix", "▁", "▁here"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": false})",
          "one piece here"),
      (Texts{"▁one▁piece▁here"}));
  EXPECT_EQ(pieces(R"({"type": "Metaspace", "replacement": "_", "add_prefix_space": true})",
                   "legacy key"),
            (Texts{"_legacy", "_key"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "Metaspace", "replacement": "_", "add_prefix_space": false, "prepend_scheme": "never"})",
          "legacy off"),
      (Texts{"legacy", "_off"}));
}

TEST(PipelinePreTokenizers, MetaspaceFirstPrependsOnlyAtTheInputStart) {
  EXPECT_EQ(
      pieces(
          R"({"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"}]})",
          "first word only"),
      (Texts{"▁first", "word", "only"}));
  EXPECT_EQ(
      pieces(
          R"({"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"}]})",
          " not at start"),
      (Texts{"not", "at", "start"}));
}

TEST(PipelinePreTokenizers, WhitespaceUsesTheRegexCratesWordClass) {
  EXPECT_EQ(pieces(R"({"type": "Whitespace"})", "Ⅷ ⓐb\u200dc x!?  don't\u3000go_1"),
            (Texts{"Ⅷ", "ⓐb\u200dc", "x", "!?", "don", "'", "t", "go_1"}));
}

TEST(PipelinePreTokenizers, WhitespaceSplitRemovesUnicodeWhitespace) {
  EXPECT_EQ(pieces(R"({"type": "WhitespaceSplit"})", " a\u00a0b\u3000c\u2028d\u200be\u0085f "),
            (Texts{"a", "b", "c", "d\u200be", "f"}));
}

TEST(PipelinePreTokenizers, BertIsolatesPunctuationAndDropsWhitespace) {
  EXPECT_EQ(pieces(R"({"type": "BertPreTokenizer"})",
                   "Hey friend!     How are you?!? $5^`~ «quoted» 1,5"),
            (Texts{"Hey", "friend", "!", "How", "are", "you",    "?", "!", "?", "$",
                   "5",   "^",      "`", "~",   "«",   "quoted", "»", "1", ",", "5"}));
}

TEST(PipelinePreTokenizers, PunctuationDefaultsToIsolated) {
  EXPECT_EQ(pieces(R"({"type": "Punctuation"})", "a$b..c¿d"),
            (Texts{"a", "$", "b", ".", ".", "c", "¿", "d"}));
  EXPECT_EQ(pieces(R"({"type": "Punctuation", "behavior": "MergedWithPrevious"})", "a$b..c¿d"),
            (Texts{"a$", "b.", ".", "c¿", "d"}));
  EXPECT_EQ(pieces(R"({"type": "Punctuation", "behavior": "Contiguous"})", "a$b..c¿d"),
            (Texts{"a", "$", "b", "..", "c", "¿", "d"}));
}

TEST(PipelinePreTokenizers, DigitsAreNumericCharacters) {
  EXPECT_EQ(pieces(R"({"type": "Digits", "individual_digits": false})", "Hey 123 friend²½٣!"),
            (Texts{"Hey ", "123", " friend", "²½٣", "!"}));
  EXPECT_EQ(pieces(R"({"type": "Digits", "individual_digits": true})", "Hey 123 friend²½٣!"),
            (Texts{"Hey ", "1", "2", "3", " friend", "²", "½", "٣", "!"}));
}

TEST(PipelinePreTokenizers, CharDelimiterSplitAndFixedLength) {
  EXPECT_EQ(pieces(R"({"type": "CharDelimiterSplit", "delimiter": "▁"})", "▁a▁▁bc▁"),
            (Texts{"a", "bc"}));
  EXPECT_EQ(pieces(R"({"type": "FixedLength"})", "abcdeñghijk"), (Texts{"abcde", "ñghij", "k"}));
  EXPECT_EQ(pieces(R"({"type": "FixedLength", "length": 2})", "añb"), (Texts{"añ", "b"}));
}

TEST(PipelinePreTokenizers, NestedSequencesRunInOrder) {
  EXPECT_EQ(
      pieces(
          R"({"type": "Sequence", "pretokenizers": [{"type": "Sequence", "pretokenizers": [{"type": "Punctuation", "behavior": "MergedWithNext"}]}, {"type": "Digits", "individual_digits": true}]})",
          "x-12-y3"),
      (Texts{"x", "-", "1", "2", "-y", "3"}));
}

TEST(PipelinePreTokenizers, ByteLevelTableIsGpt2s) {
  EXPECT_EQ(byte_level_char('a'), "a");
  EXPECT_EQ(byte_level_char('!'), "!");
  EXPECT_EQ(byte_level_char(' '), "Ġ");   // U+0120
  EXPECT_EQ(byte_level_char('\n'), "Ċ");  // U+010A
  EXPECT_EQ(byte_level_char(0x00), "Ā");  // U+0100
  EXPECT_EQ(byte_level_char(0x7F), "ġ");  // U+0121
  EXPECT_EQ(byte_level_char(0xAD), "Ń");  // U+0143
  EXPECT_EQ(byte_level_char(0xE9), "é");
  std::set<std::string> distinct;
  for (int byte = 0; byte < 256; ++byte) distinct.insert(byte_level_char(byte));
  EXPECT_EQ(distinct.size(), 256u);
}

TEST(PipelinePreTokenizers, MetaspaceFirstReadsAtInputStart) {
  const std::string first =
      R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"})";
  const auto at_start = run(first, "a b", true);
  ASSERT_EQ(at_start.size(), 2u);
  EXPECT_EQ(at_start[0].text, "▁a");
  EXPECT_TRUE(at_start[0].at_input_start);
  EXPECT_EQ(at_start[1].text, "▁b");
  EXPECT_FALSE(at_start[1].at_input_start);
  const auto later = run(first, "a b", false);
  ASSERT_EQ(later.size(), 2u);
  EXPECT_EQ(later[0].text, "a");
  EXPECT_EQ(later[1].text, "▁b");
}

TEST(PipelinePreTokenizers, OnlyTheSubPieceAtByteZeroKeepsAtInputStart) {
  const std::string whitespace_split = R"({"type": "WhitespaceSplit"})";
  for (const bool at_input_start : {true, false}) {
    const auto leading = run(whitespace_split, "a b", at_input_start);
    ASSERT_EQ(leading.size(), 2u);
    EXPECT_EQ(leading[0].at_input_start, at_input_start);
    EXPECT_FALSE(leading[1].at_input_start);
  }
  const auto after_space = run(whitespace_split, " a", true);
  ASSERT_EQ(after_space.size(), 1u);
  EXPECT_FALSE(after_space[0].at_input_start);
}

TEST(PipelinePreTokenizers, EmptyPiecesAreNeverAppended) {
  for (const char* config : {kLlama3, kGemma3, kT5UnigramTiny, R"({"type": "BertPreTokenizer"})",
                             R"({"type": "Sequence", "pretokenizers": []})"}) {
    EXPECT_TRUE(run(config, "", true).empty()) << config;
  }
}

TEST(PipelinePreTokenizers, UnsupportedTypesAreRefusedByName) {
  const std::string scripts = build_error({{"type", "UnicodeScripts"}});
  EXPECT_NE(scripts.find("tokenizer.json: pre_tokenizer"), std::string::npos) << scripts;
  EXPECT_NE(scripts.find("\"UnicodeScripts\" is not implemented"), std::string::npos) << scripts;
  const std::string nested =
      build_error({{"type", "Sequence"},
                   {"pretokenizers", {{{"type", "WhitespaceSplit"}}, {{"type", "Nope"}}}}});
  EXPECT_NE(nested.find("pre_tokenizer.pretokenizers[1]"), std::string::npos) << nested;
  EXPECT_NE(nested.find("\"Nope\""), std::string::npos) << nested;
}

TEST(PipelinePreTokenizers, BadFieldsAreErrorsNamingTheField) {
  using nlohmann::json;
  const json split = {{"type", "Split"}, {"pattern", {{"Regex", "\\s"}}}, {"invert", false}};
  EXPECT_NE(build_error(split).find("pre_tokenizer.behavior is missing"), std::string::npos);
  json bad_behavior = split;
  bad_behavior["behavior"] = "Merged";
  EXPECT_NE(build_error(bad_behavior).find("pre_tokenizer.behavior: \"Merged\" is not one of"),
            std::string::npos);
  json two_patterns = split;
  two_patterns["behavior"] = "Isolated";
  two_patterns["pattern"] = {{"Regex", "a"}, {"String", "b"}};
  EXPECT_NE(build_error(two_patterns).find("pre_tokenizer.pattern:"), std::string::npos);
  json bad_regex = split;
  bad_regex["behavior"] = "Isolated";
  bad_regex["pattern"] = {{"Regex", "(unclosed"}};
  EXPECT_NE(build_error(bad_regex).find("pre_tokenizer.pattern.Regex"), std::string::npos);
  // The library requires these fields (no defaults).
  EXPECT_NE(build_error({{"type", "ByteLevel"}}).find("add_prefix_space is missing"),
            std::string::npos);
  EXPECT_NE(build_error({{"type", "Digits"}}).find("individual_digits is missing"),
            std::string::npos);
  EXPECT_NE(build_error({{"type", "Metaspace"}, {"replacement", "ab"}})
                .find("pre_tokenizer.replacement: expected a single character"),
            std::string::npos);
  EXPECT_NE(build_error({{"type", "Metaspace"}, {"replacement", "_"}, {"prepend_scheme", "last"}})
                .find("pre_tokenizer.prepend_scheme"),
            std::string::npos);
  // The legacy add_prefix_space false must agree with prepend_scheme, which defaults to always.
  EXPECT_NE(build_error({{"type", "Metaspace"}, {"replacement", "_"}, {"add_prefix_space", false}})
                .find("pre_tokenizer.add_prefix_space"),
            std::string::npos);
  // The library panics on a length of 0.
  EXPECT_NE(build_error({{"type", "FixedLength"}, {"length", 0}}).find("pre_tokenizer.length"),
            std::string::npos);
  EXPECT_NE(build_error({{"type", "CharDelimiterSplit"}, {"delimiter", ""}}).find("delimiter"),
            std::string::npos);
}

TEST(PipelinePreTokenizers, DeepNestingIsAnErrorNotAStackOverflow) {
  nlohmann::json config = {{"type", "WhitespaceSplit"}};
  for (int depth = 0; depth < 10000; ++depth) {
    nlohmann::json outer = {{"type", "Sequence"}, {"pretokenizers", nlohmann::json::array()}};
    outer["pretokenizers"].push_back(std::move(config));
    config = std::move(outer);
  }
  EXPECT_NE(build_error(config).find("nested more than"), std::string::npos);
}

}  // namespace
}  // namespace attn::pipeline
