// The tokenizer.json models on small hand-made vocabularies. Every expected id list was produced
// by the tokenizers library itself (its Node binding, tokenizers@0.23.2, with the same model and
// no normalizer or pre-tokenizer), so these pin attn to the library's behaviour, quirks included.

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "src/base/error.h"
#include "src/tokenizer/pipeline/models.h"

namespace attn::pipeline {
namespace {

using nlohmann::json;

constexpr const char* kFile = "tokenizer.json";

// Keeps the JSON alive next to the model built from it, as the tokenizer loader does.
struct LoadedModel {
  json config;
  std::unique_ptr<Model> model;

  std::vector<int> encode(std::string_view piece) const {
    std::vector<int> ids;
    model->tokenize(piece, ids, nullptr);
    return ids;
  }
};

LoadedModel load(std::string_view model_json) {
  LoadedModel loaded{json::parse(model_json), nullptr};
  loaded.model = make_model(ConfigNode(loaded.config, kFile, "model"));
  return loaded;
}

// The error message of loading `model_json`, "" when it loads.
std::string model_load_error(std::string_view model_json) {
  try {
    load(model_json);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

std::string encode_error(const LoadedModel& loaded, std::string_view piece) {
  try {
    loaded.encode(piece);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

using Ids = std::vector<int>;

constexpr const char* kAbcVocab =
    R"({"<unk>": 0, "a": 1, "b": 2, "c": 3, "ab": 4, "bc": 5, "abc": 6, "aa": 7, "aaaa": 8})";

std::string bpe(std::string_view options, std::string_view vocab, std::string_view merges) {
  return std::string(R"({"type": "BPE", )") + std::string(options) + (options.empty() ? "" : ", ") +
         R"("vocab": )" + std::string(vocab) + R"(, "merges": )" + std::string(merges) + "}";
}

TEST(BpeModel, MergesLowestRankFirstAndLeftmostAmongEqualRanks) {
  const auto loaded = load(bpe("", kAbcVocab, R"(["a a", "b c", "a b", "a bc", "aa aa"])"));
  EXPECT_EQ(loaded.encode("aaa"), (Ids{7, 1}));
  EXPECT_EQ(loaded.encode("aaaa"), (Ids{8}));
  EXPECT_EQ(loaded.encode("aaaaa"), (Ids{8, 1}));
  EXPECT_EQ(loaded.encode("abc"), (Ids{6}));
  EXPECT_EQ(loaded.encode("abcabc"), (Ids{6, 6}));
  EXPECT_EQ(loaded.encode("cab"), (Ids{3, 4}));
}

TEST(BpeModel, MergesAsPairsEncodeAsMergesAsStrings) {
  const auto loaded = load(
      bpe("", kAbcVocab, R"([["a", "a"], ["b", "c"], ["a", "b"], ["a", "bc"], ["aa", "aa"]])"));
  EXPECT_EQ(loaded.encode("aaaaa"), (Ids{8, 1}));
  EXPECT_EQ(loaded.encode("abc"), (Ids{6}));
}

TEST(BpeModel, RankDecidesBetweenOverlappingMerges) {
  const auto loaded = load(bpe("", kAbcVocab, R"(["a b", "b c", "ab c"])"));
  EXPECT_EQ(loaded.encode("abc"), (Ids{6}));
  EXPECT_EQ(loaded.encode("bcab"), (Ids{5, 4}));
}

TEST(BpeModel, SkipsTheVersionHeaderOfMergesTxt) {
  const auto loaded = load(bpe("", kAbcVocab, R"(["#version: 0.2", "b c", "a b", "a bc"])"));
  EXPECT_EQ(loaded.encode("abc"), (Ids{6}));
}

TEST(BpeModel, UnknownCharactersWithAndWithoutFusing) {
  const auto separate = load(bpe(R"("unk_token": "<unk>")", kAbcVocab, R"(["a b"])"));
  EXPECT_EQ(separate.encode("axyb"), (Ids{1, 0, 0, 2}));
  EXPECT_EQ(separate.encode("xyab"), (Ids{0, 0, 4}));
  EXPECT_EQ(separate.encode("éa"), (Ids{0, 1}));

  const auto fused =
      load(bpe(R"("unk_token": "<unk>", "fuse_unk": true)", kAbcVocab, R"(["a b"])"));
  EXPECT_EQ(fused.encode("axyb"), (Ids{1, 0, 2}));
  EXPECT_EQ(fused.encode("xyab"), (Ids{0, 4}));
  EXPECT_EQ(fused.encode("xayz"), (Ids{0, 1, 0}));
}

TEST(BpeModel, WithoutUnkTokenUnknownCharactersVanish) {
  const auto loaded = load(bpe(R"("unk_token": null)", kAbcVocab, R"(["a b"])"));
  EXPECT_EQ(loaded.encode("axyb"), (Ids{4}));
  EXPECT_EQ(loaded.encode("xy"), (Ids{}));
}

TEST(BpeModel, UnkTokenMissingFromVocabularyFailsOnlyWhenNeeded) {
  const auto loaded = load(bpe(R"("unk_token": "<missing>")", kAbcVocab, R"(["a b"])"));
  EXPECT_EQ(loaded.encode("ab"), (Ids{4}));
  EXPECT_EQ(encode_error(loaded, "ax"),
            "tokenizer.json: model.unk_token: \"<missing>\" is not in the vocabulary");
}

TEST(BpeModel, ByteFallbackSpellsUnknownCharactersAsBytes) {
  const auto loaded =
      load(bpe(R"("unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true)",
               R"({"<unk>": 0, "a": 1, "<0x78>": 2, "<0xC3>": 3, "<0xA9>": 4})", "[]"));
  EXPECT_EQ(loaded.encode("axa"), (Ids{1, 2, 1}));
  EXPECT_EQ(loaded.encode("aéa"), (Ids{1, 3, 4, 1}));
  // A character with a byte missing is unknown.
  EXPECT_EQ(loaded.encode("ayza"), (Ids{1, 0, 1}));
  // The library's order: a waiting unknown lands after the bytes of the next character.
  EXPECT_EQ(loaded.encode("ayéza"), (Ids{1, 3, 4, 0, 1}));
}

TEST(BpeModel, IgnoreMergesTakesAWholeVocabularyPieceAsIs) {
  constexpr const char* kVocab = R"({"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5})";
  const auto ignoring = load(bpe(R"("ignore_merges": true)", kVocab, R"(["b c", "a b"])"));
  EXPECT_EQ(ignoring.encode("abc"), (Ids{5}));
  EXPECT_EQ(ignoring.encode("ab"), (Ids{3}));
  EXPECT_EQ(ignoring.encode("abcab"), (Ids{0, 4, 3}));

  const auto merging = load(bpe(R"("ignore_merges": false)", kVocab, R"(["b c", "a b"])"));
  EXPECT_EQ(merging.encode("abc"), (Ids{0, 4}));
  EXPECT_EQ(merging.encode("abcab"), (Ids{0, 4, 3}));
}

TEST(BpeModel, ContinuingSubwordPrefixAndEndOfWordSuffix) {
  const auto loaded = load(bpe(
      R"("unk_token": "[UNK]", "continuing_subword_prefix": "##", "end_of_word_suffix": "</w>")",
      R"({"[UNK]": 0, "h": 1, "##u": 2, "##g": 3, "##s</w>": 4, "hu": 5, "hug": 6,
          "hugs</w>": 7, "##g</w>": 8, "hug</w>": 9})",
      R"(["h ##u", "hu ##g", "hug ##s</w>", "hu ##g</w>"])"));
  EXPECT_EQ(loaded.encode("hugs"), (Ids{7}));
  EXPECT_EQ(loaded.encode("hug"), (Ids{9}));
  EXPECT_EQ(loaded.encode("hu"), (Ids{1, 0}));  // "##u</w>" is no token
  EXPECT_EQ(loaded.encode("s"), (Ids{0}));
}

TEST(BpeModel, DropoutZeroIsAcceptedAndDropoutAboveZeroRefused) {
  EXPECT_EQ(load(bpe(R"("dropout": 0.0)", kAbcVocab, R"(["a b"])")).encode("ab"), (Ids{4}));
  EXPECT_EQ(model_load_error(bpe(R"("dropout": 0.1)", kAbcVocab, R"(["a b"])")),
            "tokenizer.json: model.dropout: BPE dropout > 0 is not implemented by attn");
  EXPECT_EQ(model_load_error(bpe(R"("dropout": 1.5)", kAbcVocab, R"(["a b"])")),
            "tokenizer.json: model.dropout: must be between 0 and 1, found 1.5");
}

TEST(BpeModel, MergesOutsideTheVocabularyAreRefusedAtLoad) {
  EXPECT_EQ(model_load_error(bpe("", kAbcVocab, R"(["a b", "a x"])")),
            "tokenizer.json: model.merges[1]: merge \"a\" + \"x\": \"x\" is not in the vocabulary");
  EXPECT_EQ(
      model_load_error(bpe("", kAbcVocab, R"([["c", "a"]])")),
      "tokenizer.json: model.merges[0]: merge \"c\" + \"a\": \"ca\" is not in the vocabulary");
  EXPECT_EQ(model_load_error(bpe("", kAbcVocab, R"(["a b c"])")),
            "tokenizer.json: model.merges[0]: \"a b c\" is not two tokens split by a space");
}

TEST(BpeModel, IdsMustBeBelowTwoToThe24) {
  EXPECT_EQ(model_load_error(bpe("", R"({"a": 16777216})", "[]")),
            "tokenizer.json: model.vocab: token \"a\" has id 16777216, expected an integer from 0 "
            "to 16777215");
  EXPECT_EQ(model_load_error(bpe("", R"({"a": -1})", "[]")),
            "tokenizer.json: model.vocab: token \"a\" has id -1, expected an integer from 0 to "
            "16777215");
}

TEST(BpeModel, VocabularyLookupsAndHoles) {
  const auto loaded = load(bpe("", R"({"a": 0, "b": 5, "also b": 5})", "[]"));
  EXPECT_EQ(loaded.model->vocab_size(), 6);
  EXPECT_EQ(loaded.model->token_to_id("b"), 5);
  EXPECT_EQ(loaded.model->token_to_id("also b"), 5);
  EXPECT_EQ(loaded.model->token_to_id("c"), std::nullopt);
  EXPECT_EQ(*loaded.model->id_to_token(0), "a");
  // Shared ids decode to the first token in key order.
  EXPECT_EQ(*loaded.model->id_to_token(5), "also b");
  EXPECT_EQ(loaded.model->id_to_token(3), nullptr);
  EXPECT_EQ(loaded.model->id_to_token(6), nullptr);
}

TEST(BpeModel, SeveralThreadsEncodeAtOnce) {
  const auto loaded =
      load(bpe(R"("unk_token": "<unk>")", kAbcVocab, R"(["a a", "b c", "a b", "a bc", "aa aa"])"));
  std::vector<std::string> words;
  for (int length = 1; length < 400; ++length) {
    words.push_back(std::string(length % 7, 'a') + std::string(length % 5, 'b') + "cx" +
                    std::string(length, 'a'));
  }
  std::vector<Ids> expected;
  for (const auto& word : words) expected.push_back(loaded.encode(word));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int thread = 0; thread < 4; ++thread) {
    threads.emplace_back([&, thread] {
      for (int round = 0; round < 20; ++round) {
        for (std::size_t i = 0; i < words.size(); ++i) {
          if (loaded.encode(words[i]) != expected[i]) ++mismatches[thread];
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(mismatches, (std::vector<int>{0, 0, 0, 0}));
}

constexpr const char* kWordPiece = R"({"type": "WordPiece", "unk_token": "[UNK]",
    "continuing_subword_prefix": "##", "max_input_chars_per_word": 5,
    "vocab": {"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3, "u": 4, "##n": 5, "aff": 6, "é": 7,
              "##é": 8}})";

TEST(WordPieceModel, GreedyLongestMatchFirst) {
  const auto loaded = load(kWordPiece);
  EXPECT_EQ(loaded.encode("unaff"), (Ids{1, 2}));
  EXPECT_EQ(loaded.encode("un"), (Ids{1}));
  EXPECT_EQ(loaded.encode("uné"), (Ids{1, 8}));
  EXPECT_EQ(loaded.encode("éé"), (Ids{7, 8}));
}

TEST(WordPieceModel, UnsplittableOrTooLongWordsAreUnknown) {
  const auto loaded = load(kWordPiece);
  EXPECT_EQ(loaded.encode("unx"), (Ids{0}));
  EXPECT_EQ(loaded.encode("xun"), (Ids{0}));
  EXPECT_EQ(loaded.encode("unaffa"), (Ids{0}));     // six characters, the limit is five
  EXPECT_EQ(loaded.encode("unaffable"), (Ids{0}));  // splittable, but too long
}

TEST(WordPieceModel, FileWithoutTypeIsReadByItsFields) {
  const auto loaded = load(R"({"unk_token": "[UNK]", "continuing_subword_prefix": "##",
      "max_input_chars_per_word": 100, "vocab": {"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3}})");
  EXPECT_EQ(loaded.encode("unaffable"), (Ids{1, 2, 3}));
}

TEST(WordPieceModel, AllFieldsAreRequired) {
  EXPECT_EQ(model_load_error(R"({"type": "WordPiece", "unk_token": "[UNK]",
      "continuing_subword_prefix": "##", "vocab": {}})"),
            "tokenizer.json: model.max_input_chars_per_word is missing");
}

TEST(WordLevelModel, WholePiecesOrUnknown) {
  const auto loaded = load(
      R"({"type": "WordLevel", "unk_token": "<unk>", "vocab": {"<unk>": 0, "hello": 1, "world": 2}})");
  EXPECT_EQ(loaded.encode("hello"), (Ids{1}));
  EXPECT_EQ(loaded.encode("world"), (Ids{2}));
  EXPECT_EQ(loaded.encode("other"), (Ids{0}));
  EXPECT_EQ(*loaded.model->id_to_token(2), "world");
  EXPECT_EQ(loaded.model->vocab_size(), 3);
}

TEST(WordLevelModel, FileWithoutTypeOrMergesIsWordLevel) {
  const auto loaded = load(R"({"unk_token": "<unk>", "vocab": {"<unk>": 0, "hello": 1}})");
  EXPECT_EQ(loaded.encode("hello"), (Ids{1}));
  EXPECT_EQ(loaded.encode("hi"), (Ids{0}));
}

TEST(UnigramModel, EqualScoresKeepTheLibrarysChoice) {
  const auto loaded = load(R"({"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0], ["0", -1],
      ["00", -2], ["000", -3.5], ["a", -1], ["b", -1], ["ab", -2]]})");
  // SentencePiece gives "00" + "0" here; the library keeps the path found first.
  EXPECT_EQ(loaded.encode("000"), (Ids{1, 2}));
  EXPECT_EQ(loaded.encode("0000"), (Ids{2, 2}));
  EXPECT_EQ(loaded.encode("00000"), (Ids{1, 2, 2}));
  EXPECT_EQ(loaded.encode("ab"), (Ids{6}));
  EXPECT_EQ(loaded.encode("aab"), (Ids{4, 6}));
}

TEST(UnigramModel, RunsOfUnknownCharactersBecomeOneUnknown) {
  const auto loaded = load(R"({"type": "Unigram", "unk_id": 0,
      "vocab": [["<unk>", 0], ["a", -1], ["b", -2], ["ab", -1.5]]})");
  EXPECT_EQ(loaded.encode("axyb"), (Ids{1, 0, 2}));
  EXPECT_EQ(loaded.encode("xy"), (Ids{0}));
  EXPECT_EQ(loaded.encode("xayz"), (Ids{0, 1, 0}));
  EXPECT_EQ(loaded.encode("é"), (Ids{0}));
  // The unknown piece's own text fuses with unknown characters next to it.
  EXPECT_EQ(loaded.encode("a<unk>x"), (Ids{1, 0}));
}

TEST(UnigramModel, ByteFallbackForUnknownRuns) {
  const auto loaded = load(R"({"type": "Unigram", "unk_id": 0, "byte_fallback": true,
      "vocab": [["<unk>", 0], ["a", -1], ["<0x78>", -5], ["<0x79>", -5], ["<0xC3>", -5],
                ["<0xA9>", -5]]})");
  EXPECT_EQ(loaded.encode("axya"), (Ids{1, 2, 3, 1}));
  EXPECT_EQ(loaded.encode("aéa"), (Ids{1, 4, 5, 1}));
  EXPECT_EQ(loaded.encode("aza"), (Ids{1, 0, 1}));
  // One byte of the fused run "xz" has no piece, so the whole run is unknown.
  EXPECT_EQ(loaded.encode("axza"), (Ids{1, 0, 1}));
}

TEST(UnigramModel, UnknownCharacterWithoutUnkIdFails) {
  const auto loaded = load(R"({"type": "Unigram", "vocab": [["a", -1], ["b", -2]]})");
  EXPECT_EQ(loaded.encode("ab"), (Ids{0, 1}));
  EXPECT_EQ(encode_error(loaded, "ax"),
            "tokenizer.json: model: the text has a character that is in no piece, and unk_id is "
            "not set");
}

TEST(UnigramModel, RepeatedPieceUsesItsLastEntry) {
  const auto loaded = load(R"({"type": "Unigram", "unk_id": 0,
      "vocab": [["<unk>", 0], ["a", -1], ["b", -2], ["a", -3], ["ab", -4.5]]})");
  EXPECT_EQ(loaded.encode("ab"), (Ids{4}));
  EXPECT_EQ(loaded.encode("a"), (Ids{3}));
  EXPECT_EQ(*loaded.model->id_to_token(1), "a");
  EXPECT_EQ(loaded.model->vocab_size(), 5);
}

TEST(UnigramModel, FileWithoutTypeAndAListVocabularyIsUnigram) {
  const auto loaded = load(R"({"unk_id": 0, "vocab": [["<unk>", 0], ["a", -1]]})");
  EXPECT_EQ(loaded.encode("ax"), (Ids{1, 0}));
}

TEST(UnigramModel, UnkIdMustBeAPiece) {
  EXPECT_EQ(
      model_load_error(R"({"type": "Unigram", "unk_id": 2, "vocab": [["<unk>", 0], ["a", -1]]})"),
      "tokenizer.json: model.unk_id: 2 is not an id of the vocabulary (2 pieces)");
}

TEST(MakeModel, UnknownTypeIsRefusedByName) {
  EXPECT_EQ(model_load_error(R"({"type": "Charformer", "vocab": {}})"),
            "tokenizer.json: model.type: model type \"Charformer\" is not implemented by attn");
}

}  // namespace
}  // namespace attn::pipeline
