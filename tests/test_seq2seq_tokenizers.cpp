// The tokenizers of the sequence-to-sequence families (MarianTokenizer, T5Tokenizer) against the
// goldens of transformers 4.40's slow tokenizers in ../shared/golden/tiny-{marian,t5}-random.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "src/base/error.h"
#include "src/tokenizer/tokenizer.h"
#include "tests/cli_util.h"
#include "tests/golden.h"
#include "tests/test_paths.h"
#include "tests/tokenizer_test_util.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace attn::test;  // tests/tokenizer_test_util.h, tests/test_paths.h

constexpr const char* kMarian = "tiny-marian-random";
constexpr const char* kT5 = "tiny-t5-random";

// "▁Charles": a piece of the Marian folder's SentencePiece models and its vocab.json (id 1681).
const std::string kCharles =
    "\xE2\x96\x81"
    "Charles";

class Seq2SeqTokenizerGolden : public ::testing::TestWithParam<const char*> {};

// Every line of tokens.jsonl: ids, token strings and decoded text identical.
TEST_P(Seq2SeqTokenizerGolden, TokensJsonl) {
  ATTN_REQUIRE_SHARED();
  expect_tokens_jsonl_match(GetParam());
}

// generate.jsonl: the source ids are encode(source); the greedy output (after the decoder start
// token, which the caller does not pass) decodes to generated_text, whole or token by token.
TEST_P(Seq2SeqTokenizerGolden, GenerateJsonlSourcesAndTranslations) {
  ATTN_REQUIRE_SHARED();
  const std::string model = GetParam();
  const Tokenizer& tokenizer = shared_tokenizer(model);
  int lines = 0;
  for (const json& golden : GoldenSet(model).jsonl("generate.jsonl")) {
    ++lines;
    const std::string source = golden["source"];
    EXPECT_EQ(tokenizer.encode(source).ids, golden["source_ids"].get<std::vector<int>>())
        << json_quoted(source);
    const std::vector<int> generated = golden["generated_ids"];
    const std::string text = golden["generated_text"];
    EXPECT_EQ(tokenizer.decode(generated, true), text);
    std::string streamed;
    for (std::size_t i = 0; i < generated.size(); ++i) {
      streamed += tokenizer.decode_continuation(std::span(generated).first(i), generated[i]);
    }
    EXPECT_EQ(streamed, text) << json_quoted(source);
    // The decoder start token (pad) is special: it adds nothing.
    EXPECT_EQ(tokenizer.decode_continuation({}, golden["decoder_start_token_id"].get<int>()), "");
  }
  EXPECT_EQ(lines, 20);
}

// attention.jsonl: the token strings of the source and of the decoder input (start token
// included).
TEST_P(Seq2SeqTokenizerGolden, AttentionJsonlTokens) {
  ATTN_REQUIRE_SHARED();
  const std::string model = GetParam();
  const Tokenizer& tokenizer = shared_tokenizer(model);
  for (const json& golden : GoldenSet(model).jsonl("attention.jsonl")) {
    EXPECT_EQ(tokenizer.encode(golden["text"].get<std::string>()).ids,
              golden["ids"].get<std::vector<int>>());
    EXPECT_EQ(tokens_of(tokenizer, golden["ids"].get<std::vector<int>>()),
              golden["tokens"].get<std::vector<std::string>>());
    EXPECT_EQ(tokens_of(tokenizer, golden["decoder_ids"].get<std::vector<int>>()),
              golden["decoder_tokens"].get<std::vector<std::string>>());
  }
}

TEST_P(Seq2SeqTokenizerGolden, StreamsWhatDecodeGives) {
  ATTN_REQUIRE_SHARED();
  expect_streaming_matches_decode(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Models, Seq2SeqTokenizerGolden, ::testing::Values(kMarian, kT5),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::erase(name, '-');
                           return name;
                         });

// ---- Special tokens -------------------------------------------------------------------------

TEST(Seq2SeqTokenizerSpecial, EosPadUnkAndSentinels) {
  ATTN_REQUIRE_SHARED();
  // Marian: vocab.json's </s> 0, <unk> 1, <pad> 7999 (the decoder start token).
  const Tokenizer& marian = shared_tokenizer(kMarian);
  EXPECT_EQ(marian.eos_id(), 0);
  EXPECT_EQ(marian.mask_id(), std::nullopt);
  EXPECT_EQ(marian.vocab_size(), 8000);
  EXPECT_EQ(tokens_of(marian, {0, 1, 7999}), (std::vector<std::string>{"</s>", "<unk>", "<pad>"}));
  for (int id : {0, 1, 7999}) EXPECT_TRUE(marian.is_special(id)) << id;
  EXPECT_FALSE(marian.is_special(2));
  // T5: <pad> 0, </s> 1, <unk> 2, then the 8000 pieces, then <extra_id_99> 8000 ... <extra_id_0>
  // 8099, all special (additional_special_tokens).
  const Tokenizer& t5 = shared_tokenizer(kT5);
  EXPECT_EQ(t5.eos_id(), 1);
  EXPECT_EQ(t5.mask_id(), std::nullopt);
  EXPECT_EQ(t5.vocab_size(), 8100);
  EXPECT_EQ(tokens_of(t5, {0, 1, 2, 8099, 8098, 8000}),
            (std::vector<std::string>{"<pad>", "</s>", "<unk>", "<extra_id_0>", "<extra_id_1>",
                                      "<extra_id_99>"}));
  for (int id : {0, 1, 2, 8000, 8050, 8099}) EXPECT_TRUE(t5.is_special(id)) << id;
  EXPECT_FALSE(t5.is_special(3));
}

TEST(Seq2SeqTokenizerSpecial, T5SentinelsInTheTextAreSingleTokens) {
  ATTN_REQUIRE_SHARED();
  const Tokenizer& t5 = shared_tokenizer(kT5);
  // The golden line "Hello world" is ▁He ll o ▁world </s>. The sentinels are lstrip and rstrip
  // in the folder's added_tokens_decoder: they eat the spaces beside them.
  const std::vector<int> ids = t5.encode("Hello <extra_id_0> world <extra_id_1>").ids;
  EXPECT_EQ(tokens_of(t5, ids),
            (std::vector<std::string>{"\xE2\x96\x81He", "ll", "o", "<extra_id_0>",
                                      "\xE2\x96\x81world", "<extra_id_1>", "</s>"}));
  // T5TokenizerFast decodes every token through the Metaspace decoder, special tokens as they
  // are, with no space put around them (the slow class's _decode joins them with spaces).
  EXPECT_EQ(t5.decode(ids, false), "Hello<extra_id_0> world<extra_id_1></s>");
  EXPECT_EQ(t5.decode(ids, true), "Hello world");
}

TEST(Seq2SeqTokenizerSpecial, T5AppendsEosAfterEachSequence) {
  ATTN_REQUIRE_SHARED();
  // T5TokenizerFast's TemplateProcessing: "$A </s>", "$A </s> $B </s>", even after a sequence
  // that ends with </s> (the slow class's _add_eos_if_not_present leaves that one out).
  const Tokenizer& t5 = shared_tokenizer(kT5);
  const std::vector<int> hello = {51, 122, 108};  // ▁He ll o (golden "Hello world" minus ▁world)
  std::vector<int> expected = hello;
  expected.push_back(1);
  EXPECT_EQ(t5.encode("Hello").ids, expected);
  std::vector<int> twice = expected;
  twice.push_back(1);
  EXPECT_EQ(t5.encode("Hello</s>").ids, twice);
  EXPECT_EQ(t5.encode("Hello </s>").ids, twice);
  const Encoding pair = t5.encode("Hello</s>", "Hello");
  std::vector<int> pair_expected = twice;
  pair_expected.insert(pair_expected.end(), expected.begin(), expected.end());
  EXPECT_EQ(pair.ids, pair_expected);
  EXPECT_EQ(pair.type_ids, std::vector<int>(pair_expected.size(), 0));
}

TEST(Seq2SeqTokenizerSpecial, MarianAppendsEosOnceAfterAPair) {
  ATTN_REQUIRE_SHARED();
  // MarianTokenizer.build_inputs_with_special_tokens: A B </s>, and </s> in the text is kept.
  const Tokenizer& marian = shared_tokenizer(kMarian);
  EXPECT_EQ(marian.encode("Hello", "Hello").ids, (std::vector<int>{50, 121, 107, 50, 121, 107, 0}));
  EXPECT_EQ(marian.encode("Hello</s>").ids, (std::vector<int>{50, 121, 107, 0, 0}));
  // Special tokens kept in decoding are followed by a space (convert_tokens_to_string), and the
  // run after them decodes on its own.
  EXPECT_EQ(marian.decode(std::vector<int>{50, 121, 107, 0, 50, 121, 107, 0}, false),
            "Hello</s> Hello</s>");
  EXPECT_EQ(marian.decode(std::vector<int>{50, 121, 107, 0, 50, 121, 107, 0}, true), "Hello Hello");
}

TEST(Seq2SeqTokenizerSpecial, T5LegacyFalseGivesTextAfterASpecialTokenNoSpace) {
  ATTN_REQUIRE_SHARED();
  // legacy: true (the folder's) encodes every piece of text between special tokens with the
  // model's dummy prefix: "world" after </s> is ▁world. legacy: false, as LlamaTokenizer's, only
  // prefixes the start of the text.
  const Tokenizer& legacy = shared_tokenizer(kT5);
  const std::vector<std::string> legacy_tokens =
      tokens_of(legacy, legacy.encode("Hello</s>world").ids);
  ASSERT_EQ(legacy_tokens.size(), 6u);
  EXPECT_EQ(legacy_tokens[4], "\xE2\x96\x81world");
  EditedFolder folder(kT5, "tokenizer_config.json", [](json& config) { config["legacy"] = false; });
  const std::unique_ptr<Tokenizer> modern = load_tokenizer(folder.path());
  const std::vector<int> ids = modern->encode("Hello</s>world").ids;
  const std::vector<std::string> tokens = tokens_of(*modern, ids);
  ASSERT_GE(tokens.size(), 6u);
  EXPECT_EQ(std::vector<std::string>(tokens.begin(), tokens.begin() + 4),
            std::vector<std::string>(legacy_tokens.begin(), legacy_tokens.begin() + 4));
  EXPECT_FALSE(tokens[4].starts_with("\xE2\x96\x81")) << tokens[4];
  EXPECT_EQ(ids.back(), 1);
  // Decoding: the Metaspace decoder takes the "▁" off the first token only: "</s>", then
  // "▁world" (209) as " world", either way (the slow class decoded the run after a special
  // token on its own, "world").
  EXPECT_EQ(legacy.decode(std::vector<int>{1, 209}, false), "</s> world");
  EXPECT_EQ(modern->decode(std::vector<int>{1, 209}, false), "</s> world");
  // Text of known characters, without a leading space, is encoded the same either way. (An
  // unknown character at the start is not: without the dummy prefix its "▁" joins the unknown
  // piece, as in LlamaTokenizer's legacy: false.)
  for (const json& golden : GoldenSet(kT5).jsonl("tokens.jsonl")) {
    const std::string text = golden["text"];
    const std::vector<int> expected = golden["ids"];
    if (text.empty() || text.front() == ' ' || text.front() == '\n' || text.front() == '\t' ||
        std::find(expected.begin(), expected.end(), 2) != expected.end()) {
      continue;
    }
    EXPECT_EQ(modern->encode(text).ids, expected) << json_quoted(text);
  }
}

// ---- Marian's language codes and its two SentencePiece models ----------------------------------

TEST(Seq2SeqTokenizerMarian, LanguageCodes) {
  ATTN_REQUIRE_SHARED();
  // MarianTokenizer.remove_language_code: ">>.+<<" at the start of a piece of text is a token of
  // its own (here not in vocab.json: <unk>); every match is taken out of the text.
  const Tokenizer& marian = shared_tokenizer(kMarian);
  const std::vector<int> hello_world = {50, 121, 107, 208, 0};
  std::vector<int> with_code = {1};
  with_code.insert(with_code.end(), hello_world.begin(), hello_world.end());
  EXPECT_EQ(marian.encode(">>fra<< Hello world").ids, with_code);
  EXPECT_EQ(marian.encode("Hello >>fra<< world").ids, hello_world);
  // The match runs to the last "<<" of the line (the regex is greedy, and "." stops at a newline).
  EXPECT_EQ(marian.encode(">>fra<< x <<Hello world").ids, with_code);
  // Nothing between ">>" and "<<", or a newline there: no code.
  EXPECT_NE(marian.encode(">><<Hello world").ids.front(), 1);
  EXPECT_NE(marian.encode(">>fr\na<< Hello world").ids.front(), 1);

  // A folder whose vocab.json has the code (in place of the last piece, 7998) encodes it so.
  EditedFolder folder(kMarian, "vocab.json", [](json& vocab) {
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
      if (it.value() == 7998) {
        vocab.erase(it);
        break;
      }
    }
    vocab[">>fra<<"] = 7998;
  });
  const std::unique_ptr<Tokenizer> multilingual = load_tokenizer(folder.path());
  with_code[0] = 7998;
  EXPECT_EQ(multilingual->encode(">>fra<< Hello world").ids, with_code);
  EXPECT_EQ(multilingual->token_string(7998), ">>fra<<");
}

// target.spm: the source model with its piece "▁Charles" renamed "▁Charlez" (the same length,
// so the protocol buffer stays valid); vocab.json, which has "▁Charles", stays.
TEST(Seq2SeqTokenizerMarian, TargetSideUsesTargetSpm) {
  ATTN_REQUIRE_SHARED();
  EditedFolder folder(kMarian, "tokenizer_config.json", [](json&) {});
  std::string target = read_file(folder.path() / "source.spm");
  const std::string renamed =
      "\xE2\x96\x81"
      "Charlez";
  const std::size_t at = target.find(kCharles);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(target.find(kCharles, at + 1), std::string::npos);
  target.replace(at, kCharles.size(), renamed);
  write_file(folder.path() / "target.spm", target);
  const std::unique_ptr<Tokenizer> marian = load_tokenizer(folder.path());

  // encode() uses source.spm: ▁Charles (1681). encode_target() uses target.spm, which has no
  // ▁Charles: other pieces.
  EXPECT_EQ(marian->encode("Charles").ids, (std::vector<int>{1681, 0}));
  const std::vector<int> target_ids = marian->encode_target("Charles").ids;
  EXPECT_NE(target_ids, (std::vector<int>{1681, 0}));
  EXPECT_GT(target_ids.size(), 2u);
  EXPECT_EQ(target_ids.back(), 0);
  EXPECT_EQ(marian->decode(target_ids, true), "Charles");
  // target.spm's ▁Charlez is not in vocab.json: <unk> (1).
  EXPECT_EQ(marian->encode_target("Charlez").ids, (std::vector<int>{1, 0}));
  // decode() uses target.spm too: a piece it does not have is written as it is, "▁" and all.
  EXPECT_EQ(marian->decode(std::vector<int>{1681}, true), kCharles);
  EXPECT_EQ(shared_tokenizer(kMarian).decode(std::vector<int>{1681}, true), "Charles");
  // With the shipped folder (target.spm = source.spm) both sides agree.
  EXPECT_EQ(shared_tokenizer(kMarian).encode_target("Charles").ids,
            shared_tokenizer(kMarian).encode("Charles").ids);
  // The default for every other tokenizer: encode_target is encode.
  EXPECT_EQ(shared_tokenizer(kT5).encode_target("Charles").ids,
            shared_tokenizer(kT5).encode("Charles").ids);
}

TEST(Seq2SeqTokenizerMarian, FolderThatDeclaresAnotherClassIsRefused) {
  ATTN_REQUIRE_SHARED();
  EditedFolder folder(kMarian, "tokenizer_config.json",
                      [](json& config) { config["tokenizer_class"] = "FSMTTokenizer"; });
  EXPECT_EQ(error_message([&] { load_tokenizer(folder.path()); }),
            (folder.path() / "source.spm").string() +
                ": the folder's tokenizer class is FSMTTokenizer; attn reads source.spm with "
                "MarianTokenizer only");
}

TEST(Seq2SeqTokenizerMarian, SeparateVocabulariesAreRefused) {
  ATTN_REQUIRE_SHARED();
  EditedFolder folder(kMarian, "tokenizer_config.json",
                      [](json& config) { config["separate_vocabs"] = true; });
  EXPECT_EQ(error_message([&] { load_tokenizer(folder.path()); }),
            (folder.path() / "tokenizer_config.json").string() +
                ": separate_vocabs is true (the decoder's own target_vocab.json), which attn "
                "does not implement");
}

// ---- T5's sentinels from the older files ------------------------------------------------------

TEST(Seq2SeqTokenizerT5, SentinelsWithoutAddedTokensDecoder) {
  ATTN_REQUIRE_SHARED();
  // Without added_tokens_decoder, transformers takes the added tokens from added_tokens.json
  // (neither lstrip nor rstrip, and normalized, not being named tokens), and without that from
  // T5TokenizerFast.__init__ (special, not normalized). Either way they are special (the
  // class's additional special tokens). A normalized sentinel is found in the normalized text,
  // and the space before it is a "▁" of its own; the others' text around them is normalized
  // apart, and its space at the end stripped.
  EditedFolder folder(kT5, "tokenizer_config.json", [](json& config) {
    config.erase("added_tokens_decoder");
    config.erase("additional_special_tokens");
  });
  fs::remove(folder.path() / "special_tokens_map.json");
  for (const bool with_added_tokens_json : {true, false}) {
    if (!with_added_tokens_json) fs::remove(folder.path() / "added_tokens.json");
    const std::unique_ptr<Tokenizer> t5 = load_tokenizer(folder.path());
    std::vector<std::string> expected = {
        "\xE2\x96\x81"
        "a",
        "<extra_id_0>",
        "\xE2\x96\x81"
        "b",
        "</s>"};
    if (with_added_tokens_json) expected.insert(expected.begin() + 1, "\xE2\x96\x81");
    EXPECT_EQ(tokens_of(*t5, t5->encode("a <extra_id_0> b").ids), expected)
        << with_added_tokens_json;
    EXPECT_EQ(t5->token_string(8000), "<extra_id_99>");
    EXPECT_TRUE(t5->is_special(8000));
    EXPECT_TRUE(t5->is_special(8099));
    EXPECT_EQ(t5->vocab_size(), 8100);
  }
}

TEST(Seq2SeqTokenizerT5, ExtraIdsDisagreeingWithTheSentinelsAreRefused) {
  ATTN_REQUIRE_SHARED();
  EditedFolder folder(kT5, "tokenizer_config.json", [](json& config) { config["extra_ids"] = 50; });
  EXPECT_EQ(error_message([&] { load_tokenizer(folder.path()); }),
            (folder.path() / "tokenizer_config.json").string() +
                ": extra_ids is 50 but additional_special_tokens has 100 <extra_id_N> tokens; "
                "T5Tokenizer needs the two to agree");
}

}  // namespace
}  // namespace attn
