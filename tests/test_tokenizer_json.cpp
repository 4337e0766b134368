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

// Offsets of small pipelines, each expected value being what the tokenizers library 0.23.2
// gives (its Node binding: encode(text, null, {addSpecialTokens: true}).getOffsets()) for the
// same tokenizer.json and text.
json offsets_of(const json& tokenizer_json, const std::string& text) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("attn-offsets-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << tokenizer_json.dump();
  const auto tokenizer = load_tokenizer_json(dir);
  std::filesystem::remove_all(dir);
  json spans = json::array();
  for (const CharSpan& span : tokenizer->offsets().token_offsets(text)) {
    spans.push_back({span.start, span.end});
  }
  return spans;
}

json word_level(const json& vocab) {
  return {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}};
}

// The trimming of RobertaProcessing's (and ByteLevel's) trim_offsets reads each token's text in
// the library's encoding. An added token's is the text it matched, with the spaces lstrip and
// rstrip took, so its span loses them: " <mask>" spans "<mask>", "<x>  " spans "<x>".
TEST(TokenizerJsonOffsets, TrimmingLeavesOutTheSpacesAnAddedTokenStripped) {
  const json file = {{"version", "1.0"},
                     {"added_tokens",
                      {{{"id", 3},
                        {"content", "<mask>"},
                        {"single_word", false},
                        {"lstrip", true},
                        {"rstrip", false},
                        {"normalized", false},
                        {"special", true}},
                       {{"id", 4},
                        {"content", "<x>"},
                        {"single_word", false},
                        {"lstrip", false},
                        {"rstrip", true},
                        {"normalized", false},
                        {"special", false}}}},
                     {"pre_tokenizer",
                      {{"type", "ByteLevel"},
                       {"add_prefix_space", false},
                       {"trim_offsets", true},
                       {"use_regex", true}}},
                     {"post_processor",
                      {{"type", "RobertaProcessing"},
                       {"sep", {"</s>", 2}},
                       {"cls", {"<s>", 1}},
                       {"trim_offsets", true},
                       {"add_prefix_space", false}}},
                     {"model", word_level({{"<unk>", 0},
                                           {"<s>", 1},
                                           {"</s>", 2},
                                           {"<mask>", 3},
                                           {"<x>", 4},
                                           {"a", 5},
                                           {"Ġb", 6},
                                           {"c", 7}})}};
  EXPECT_EQ(offsets_of(file, "a <mask> b<x>  c"),
            json::parse("[[0,0],[0,1],[2,8],[9,10],[10,13],[15,16],[0,0]]"));
}

// Unigram names a token by its piece of the text, so the unknown token's text is the run of
// characters it stands for ("  x"), and trimming takes that run's leading spaces off its span.
TEST(TokenizerJsonOffsets, TrimmingReadsTheTextOfUnigramsUnknownToken) {
  const json file = {{"version", "1.0"},
                     {"post_processor",
                      {{"type", "ByteLevel"},
                       {"add_prefix_space", false},
                       {"trim_offsets", true},
                       {"use_regex", true}}},
                     {"model",
                      {{"type", "Unigram"},
                       {"unk_id", 0},
                       {"vocab", json::parse(R"([["<unk>", 0.0], ["a", -1.0], ["b", -1.0]])")}}}};
  EXPECT_EQ(offsets_of(file, "a  xb"), json::parse("[[0,1],[3,4],[4,5]]"));
}

// A character a normalizer inserts before all the others (Replace's empty match at the start,
// or the first character itself re-inserted by Prepend's empty prefix) takes the empty span at
// the start of the text, also when a normalizer before it stripped characters from there.
TEST(TokenizerJsonOffsets, ACharacterInsertedFirstSpansFromTheStartOfTheText) {
  const json strip = {{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}};
  const json replace = {{"type", "Replace"}, {"pattern", {{"String", ""}}}, {"content", "X"}};
  const json prepend = {{"type", "Prepend"}, {"prepend", ""}};
  EXPECT_EQ(offsets_of({{"version", "1.0"},
                        {"normalizer", {{"type", "Sequence"}, {"normalizers", {strip, replace}}}},
                        {"model", word_level({{"<unk>", 0}, {"XaXbX", 1}})}},
                       "  ab"),
            json::parse("[[0,4]]"));
  EXPECT_EQ(offsets_of({{"version", "1.0"},
                        {"normalizer", {{"type", "Sequence"}, {"normalizers", {strip, prepend}}}},
                        {"model", word_level({{"<unk>", 0}, {"ab", 1}})}},
                       "  ab"),
            json::parse("[[0,4]]"));
}

// NFKC and NFKD decompose the characters U+00A0..U+00BF that have only a compatibility
// decomposition (no-break space, "²", "¼") with offsets as without: fuzz_tokenizer_pipeline
// found encode_with_offsets leaving a no-break space as it was, where encode made it a space.
TEST(TokenizerJsonOffsets, CompatibilityFormsDecomposeLatin1Symbols) {
  for (const char* form : {"NFKC", "NFKD"}) {
    const json file = {
        {"version", "1.0"},
        {"normalizer", {{"type", form}}},
        {"model",
         {{"type", "BPE"},
          {"vocab", {{"a", 0}, {" ", 1}, {"x", 2}, {"2", 3}, {"1", 4}, {"\u2044", 5}, {"4", 6}}},
          {"merges", json::array()}}}};
    const std::string text = "a\u00a0x\u00b2\u00bca";
    EXPECT_EQ(offsets_of(file, text),
              json::parse("[[0,1],[1,2],[2,3],[3,4],[4,5],[4,5],[4,5],[5,6]]"))
        << form;
  }
}

// Spans the library gives out of order, which the fuzzers' offsets check (tests/fuzz/fuzz_util.h)
// allows: ByteLevel's prefix space before "1" (a word of its own after Digits) spans "1", and
// trimming leaves it the empty span after "1", [2, 2) before "1"'s [1, 2).
TEST(TokenizerJsonOffsets, ATrimmedPrefixSpaceEndsUpAfterItsWord) {
  const json file = {
      {"version", "1.0"},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Digits"}, {"individual_digits", false}},
          {{"type", "ByteLevel"},
           {"add_prefix_space", true},
           {"trim_offsets", true},
           {"use_regex", false}}}}}},
      {"post_processor",
       {{"type", "ByteLevel"},
        {"add_prefix_space", true},
        {"trim_offsets", true},
        {"use_regex", true}}},
      {"model",
       {{"type", "BPE"}, {"vocab", {{"Ġ", 0}, {"a", 1}, {"1", 2}}}, {"merges", json::array()}}}};
  EXPECT_EQ(offsets_of(file, "a1"), json::parse("[[0,0],[0,1],[2,2],[1,2]]"));
}

// And spans the library gives twice: Unigram's byte fallback gives each <0xNN> token the span of
// the whole run of unknown characters the bytes spell.
TEST(TokenizerJsonOffsets, UnigramsByteTokensEachSpanTheirWholeRun) {
  const json file = {
      {"version", "1.0"},
      {"model",
       {{"type", "Unigram"},
        {"unk_id", 0},
        {"byte_fallback", true},
        {"vocab", json::parse(R"([["<unk>", 0.0], ["a", -1.0], ["<0x0A>", -1.0]])")}}}};
  EXPECT_EQ(offsets_of(file, "a\n\na"), json::parse("[[0,1],[1,3],[1,3],[3,4]]"));
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
