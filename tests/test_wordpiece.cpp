#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/error.h"
#include "src/tokenizer/tokenizer.h"
#include "src/tokenizer/wordpiece.h"
#include "tests/golden.h"
#include "tests/test_paths.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::GoldenSet;  // refuses a golden that is missing or empty

constexpr int kCls = 101;
constexpr int kSep = 102;
constexpr int kMask = 103;

// Loaded once: the vocabulary has 30522 entries.
const Tokenizer& tiny_bert() {
  static const std::unique_ptr<Tokenizer> tokenizer =
      load_wordpiece_tokenizer(test::shipped_model("tiny-bert-brown"));
  return *tokenizer;
}

std::vector<std::string> tokens_of(const Tokenizer& tokenizer, const std::vector<int>& ids) {
  std::vector<std::string> tokens;
  for (int id : ids) tokens.push_back(tokenizer.token_string(id));
  return tokens;
}

std::vector<std::string> encode_tokens(std::string_view text) {
  return tokens_of(tiny_bert(), tiny_bert().encode(text).ids);
}

// A scratch directory for one test, removed afterwards.
class TempDir {
 public:
  TempDir()
      : path_(fs::temp_directory_path() /
              ("attn_test_wordpiece_" +
               std::string(testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
               std::to_string(getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return path_; }

  void write(const std::string& name, const std::string& content) const {
    std::ofstream(path_ / name, std::ios::binary) << content;
  }

  void write_vocab(std::initializer_list<std::string_view> tokens) const {
    std::string content;
    for (std::string_view token : tokens) content.append(token).append("\n");
    write("vocab.txt", content);
  }

 private:
  fs::path path_;
};

// Loading `dir` must fail with a message that contains every one of `parts`.
void expect_load_error(const fs::path& dir, std::initializer_list<std::string> parts) {
  try {
    load_wordpiece_tokenizer(dir);
    ADD_FAILURE() << "loading " << dir << " should have failed";
  } catch (const Error& e) {
    for (const std::string& part : parts) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "message '" << e.what() << "' does not mention '" << part << "'";
    }
  }
}

// --- Always-run tests on the shipped tiny-bert-brown tokenizer ---------------------------------

TEST(WordPiece, LowercasesAndStripsAccents) {
  EXPECT_EQ(encode_tokens("Héllo WORLD"),
            (std::vector<std::string>{"[CLS]", "hello", "world", "[SEP]"}));
  EXPECT_EQ(encode_tokens("Crème brûlée"),
            (std::vector<std::string>{"[CLS]", "cr", "##eme", "br", "##ule", "##e", "[SEP]"}));
  // "≠" decomposes to "=" + a combining overlay (Mn), which accent stripping drops.
  EXPECT_EQ(encode_tokens("≠"), (std::vector<std::string>{"[CLS]", "=", "[SEP]"}));
}

TEST(WordPiece, SplitsPunctuationWhitespaceAndIdeographs) {
  EXPECT_EQ(encode_tokens("Hello, world! (it's $5)"),
            (std::vector<std::string>{"[CLS]", "hello", ",", "world", "!", "(", "it", "'", "s", "$",
                                      "5", ")", "[SEP]"}));
  // NBSP and U+2028 separate words, the zero-width space is removed, ideographs stand alone.
  EXPECT_EQ(encode_tokens("non\u00a0breaking\u2028zero\u200bwidth 中文"),
            (std::vector<std::string>{"[CLS]", "non", "breaking", "zero", "##wi", "##dt", "##h",
                                      "中", "文", "[SEP]"}));
}

TEST(WordPiece, SpecialTokenLiteralsStayWhole) {
  const Encoding encoding = tiny_bert().encode("Paris is the [MASK] of France.");
  EXPECT_EQ(tokens_of(tiny_bert(), encoding.ids),
            (std::vector<std::string>{"[CLS]", "paris", "is", "the", "[MASK]", "of", "france", ".",
                                      "[SEP]"}));
  EXPECT_EQ(encoding.ids[4], kMask);
  // Special tokens are matched case-sensitively before lowercasing.
  EXPECT_EQ(encode_tokens("[mask]"),
            (std::vector<std::string>{"[CLS]", "[", "mask", "]", "[SEP]"}));
  EXPECT_EQ(encode_tokens("a[MASK]b"),
            (std::vector<std::string>{"[CLS]", "a", "[MASK]", "b", "[SEP]"}));
}

TEST(WordPiece, PairGetsSecondSegmentTypeIds) {
  const Encoding encoding = tiny_bert().encode("Hello world", "How are you?");
  EXPECT_EQ(encoding.ids, (std::vector<int>{kCls, 7592, 2088, kSep, 2129, 2024, 2017, 1029, kSep}));
  EXPECT_EQ(encoding.type_ids, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1, 1}));
}

TEST(WordPiece, LiteralSepIsATokenOfTheOneSegment) {
  // As in Hugging Face's tokenizers, slow and fast: a [SEP] written in the text is a single
  // token, and every token of a single text has type id 0.
  const Encoding literal = tiny_bert().encode("Hello world [SEP] How are you?");
  const Encoding pair = tiny_bert().encode("Hello world", "How are you?");
  EXPECT_EQ(literal.ids, pair.ids);
  EXPECT_EQ(literal.type_ids, std::vector<int>(literal.ids.size(), 0));
}

TEST(WordPiece, EmptyAndBlankTextGiveClsSep) {
  for (std::string_view text : {"", "   ", "\t\n\r\n", "\x01\u200d"}) {
    const Encoding encoding = tiny_bert().encode(text);
    EXPECT_EQ(encoding.ids, (std::vector<int>{kCls, kSep})) << "text: '" << text << "'";
    EXPECT_EQ(encoding.type_ids, (std::vector<int>{0, 0}));
  }
}

TEST(WordPiece, WordsOverHundredCharactersAreUnknown) {
  EXPECT_EQ(encode_tokens(std::string(101, 'a')),
            (std::vector<std::string>{"[CLS]", "[UNK]", "[SEP]"}));
  EXPECT_NE(encode_tokens(std::string(100, 'a'))[1], "[UNK]");
  // Punctuation splits the word first, so only the too-long part is unknown.
  EXPECT_EQ(encode_tokens("ok." + std::string(101, 'b')),
            (std::vector<std::string>{"[CLS]", "ok", ".", "[UNK]", "[SEP]"}));
}

TEST(WordPiece, DecodeJoinsPiecesAndCleansUpSpaces) {
  const std::vector<int> ids = tiny_bert().encode("Hello, world! It's threading, isn't it?").ids;
  EXPECT_EQ(tiny_bert().decode(ids, true), "hello, world! it's threading, isn't it?");
  EXPECT_EQ(tiny_bert().decode(ids, false), "[CLS] hello, world! it's threading, isn't it? [SEP]");
  const std::vector<int> continuation{tiny_bert().encode("threading").ids[2]};
  EXPECT_EQ(tiny_bert().decode(continuation, false), "##ing");
  EXPECT_EQ(tiny_bert().decode(std::vector<int>{kMask}, true), "");
}

TEST(WordPiece, VocabularyAndSpecialTokens) {
  const Tokenizer& tokenizer = tiny_bert();
  EXPECT_EQ(tokenizer.vocab_size(), 30522);
  EXPECT_EQ(tokenizer.mask_id(), kMask);
  EXPECT_EQ(tokenizer.eos_id(), std::nullopt);
  EXPECT_EQ(tokenizer.token_string(1996), "the");
  EXPECT_EQ(tokenizer.token_string(kMask), "[MASK]");
  for (int id : {0, 100, kCls, kSep, kMask}) EXPECT_TRUE(tokenizer.is_special(id)) << id;
  EXPECT_FALSE(tokenizer.is_special(1996));
}

TEST(WordPiece, InvalidUtf8IsAnError) {
  EXPECT_THROW(tiny_bert().encode("caf\xc3"), Error);
  EXPECT_THROW(tiny_bert().encode("ok", std::string_view("\xff")), Error);
}

// --- Loading ------------------------------------------------------------------------------------

TEST(WordPieceLoad, VocabTxtWithoutConfigUsesBertDefaults) {
  TempDir dir;
  dir.write_vocab({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "##s", "."});
  const auto tokenizer = load_wordpiece_tokenizer(dir.path());
  EXPECT_EQ(tokenizer->vocab_size(), 8);
  EXPECT_EQ(tokenizer->encode("HELLOS. xyz [MASK]").ids, (std::vector<int>{2, 5, 6, 7, 1, 4, 3}));
  EXPECT_EQ(tokenizer->mask_id(), 4);
}

TEST(WordPieceLoad, DuplicateTokenIsAnError) {
  TempDir dir;
  dir.write_vocab({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "hello"});
  expect_load_error(dir.path(), {(dir.path() / "vocab.txt").string(), "duplicate", "'hello'"});
}

TEST(WordPieceLoad, MissingUnkIsAnError) {
  TempDir dir;
  dir.write_vocab({"[PAD]", "[CLS]", "[SEP]", "[MASK]", "hello"});
  expect_load_error(dir.path(), {(dir.path() / "vocab.txt").string(), "[UNK]"});
}

// A named token the vocabulary lacks is added after it, as transformers' fast tokenizer adds it.
TEST(WordPieceLoad, MissingMaskIsAddedAfterTheVocabulary) {
  TempDir dir;
  dir.write_vocab({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello"});
  const auto tokenizer = load_wordpiece_tokenizer(dir.path());
  EXPECT_EQ(tokenizer->mask_id(), 5);
  EXPECT_EQ(tokenizer->vocab_size(), 6);
  EXPECT_EQ(tokenizer->encode("hello [MASK]").ids, (std::vector<int>{2, 4, 5, 3}));
}

TEST(WordPieceLoad, MissingVocabularyIsAnError) {
  TempDir dir;
  expect_load_error(dir.path(),
                    {dir.path().string() + ": no BERT vocabulary found (expected vocab.txt)"});
}

// The shipped model's fast tokenizer (tokenizer.json with the configs that name its special
// tokens, run by the tokenizer.json pipeline) and its slow one (vocab.txt) must agree.
TEST(WordPieceLoad, TokenizerJsonGivesIdenticalIds) {
  TempDir dir;
  for (const char* file : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}) {
    fs::copy_file(test::shipped_model("tiny-bert-brown") / file, dir.path() / file);
  }
  const auto from_json = load_tokenizer(dir.path());
  const Tokenizer& from_vocab = tiny_bert();
  EXPECT_EQ(from_json->vocab_size(), from_vocab.vocab_size());
  EXPECT_EQ(from_json->mask_id(), from_vocab.mask_id());

  std::vector<std::string> texts = {"",
                                    "Hello, World!",
                                    "Crème brûlée à la mode",
                                    "Paris is the [MASK] of France. [SEP] Yes.",
                                    "日本語のテキスト 한국어",
                                    "ΟΔΟΣ İstanbul",
                                    std::string(120, 'x'),
                                    "family: 👨\u200d👩"};
  // The golden's texts too where ../shared is there; the texts above run without it.
  if (!test::shared_dir().empty()) {
    for (const json& line : GoldenSet("tiny-bert-brown").jsonl("tokens.jsonl")) {
      texts.push_back(line["text"].get<std::string>());
    }
  }
  std::ostringstream mismatches;
  int mismatch_count = 0;
  for (const std::string& text : texts) {
    const Encoding expected = from_vocab.encode(text);
    const Encoding got = from_json->encode(text);
    if (got.ids != expected.ids || got.type_ids != expected.type_ids) {
      ++mismatch_count;
      mismatches << "text " << json(text).dump() << "\n  vocab.txt:      " << json(expected.ids)
                 << "\n  tokenizer.json: " << json(got.ids) << "\n";
    }
    EXPECT_EQ(from_json->decode(got.ids, true), from_vocab.decode(expected.ids, true));
  }
  EXPECT_EQ(mismatch_count, 0) << mismatch_count << " of " << texts.size() << " texts differ:\n"
                               << mismatches.str();
}

// Character offsets, as BertTokenizerFast gives them. The expected values come from Hugging
// Face's Rust tokenizers (npm tokenizers@0.23.2: a BertNormalizer + BertPreTokenizer + WordPiece
// tokenizer.json built from this vocab.txt, encode(text).getOffsets()), run by hand, not in CI.
TEST(WordPieceOffsets, MatchTheFastTokenizer) {
  const struct {
    std::string text;
    std::vector<CharSpan> offsets;
  } cases[] = {
      {"H\u00e9llo W\u00f6rld, caf\u00e9!",
       {{0, 0}, {0, 5}, {6, 11}, {11, 12}, {13, 17}, {17, 18}, {0, 0}}},
      // "\u0130".lower() is "i" + U+0307: both come from the one capital.
      {"\u0130stanbul \ufb01ne", {{0, 0}, {0, 8}, {9, 10}, {10, 12}, {0, 0}}},
      // Ideographs are words of their own; U+5E02 is not in the vocabulary.
      {"Beijing \u5317\u4eac\u5e02 is big.",
       {{0, 0}, {0, 7}, {8, 9}, {9, 10}, {10, 11}, {12, 14}, {15, 18}, {18, 19}, {0, 0}}},
      // A dropped combining accent between two pieces of one word.
      {"x\u0301y S\u00e3o-Paulo", {{0, 0}, {0, 1}, {2, 3}, {4, 7}, {7, 8}, {8, 13}, {0, 0}}},
      {"zzqxj \u03a9mega \u00c5ngstr\u00f6m",
       {{0, 0},
        {0, 1},
        {1, 2},
        {2, 3},
        {3, 4},
        {4, 5},
        {6, 7},
        {7, 9},
        {9, 11},
        {12, 15},
        {15, 20},
        {0, 0}}},
      {"a\tb\u00a0c  d", {{0, 0}, {0, 1}, {2, 3}, {4, 5}, {7, 8}, {0, 0}}},
      {"Hello [MASK] world!", {{0, 0}, {0, 5}, {6, 12}, {13, 18}, {18, 19}, {0, 0}}},
      // NFD splits each Hangul syllable into jamo, every one spanning its syllable.
      {"\ud55c\uad6d\uc5b4 text",
       {{0, 0}, {0, 1}, {0, 1}, {0, 1}, {1, 2}, {1, 2}, {1, 2}, {2, 3}, {2, 3}, {4, 8}, {0, 0}}},
      // A zero-width space (format character) is dropped.
      {"na\u00efve\u200b r\u00e9sum\u00e9, don't",
       {{0, 0}, {0, 5}, {7, 13}, {13, 14}, {15, 18}, {18, 19}, {19, 20}, {0, 0}}},
      {"\u00c0\u00c9\u00ce \x01 end", {{0, 0}, {0, 2}, {2, 3}, {6, 9}, {0, 0}}},
  };
  const TokenOffsets& offsets = tiny_bert().offsets();
  for (const auto& [text, expected] : cases) {
    const std::vector<CharSpan> got = offsets.token_offsets(text);
    ASSERT_EQ(got.size(), tiny_bert().encode(text).ids.size()) << text;
    for (std::size_t i = 0; i < expected.size() && i < got.size(); ++i) {
      EXPECT_EQ(got[i], expected[i])
          << text << " token " << i << ": got [" << got[i].start << ", " << got[i].end << ")";
    }
    EXPECT_EQ(got.size(), expected.size()) << text;
  }
}

TEST(WordPieceOffsets, UnknownWordSpansTheWholeWord) {
  // "\u5e02" alone and a word over 100 characters are each one [UNK].
  const std::string long_word(101, 'a');
  const std::vector<CharSpan> got = tiny_bert().offsets().token_offsets("\u5e02 " + long_word);
  const std::vector<CharSpan> expected = {{0, 0}, {0, 1}, {2, 103}, {0, 0}};
  EXPECT_EQ(got, expected);
  EXPECT_EQ(tiny_bert().offsets().unk_id(), 100);
}

// Words of entities as the token-classification golden writes them (lines 2 and 28 of
// tiny-bert-tokcls-random/token_classify.jsonl: "##quip" -> "quip", "i ' ll" -> "i'll").
// convert_tokens_to_string is the Rust WordPiece decoder's (these outputs are tokenizers
// 0.23.2's decode of the same tokens): a continuation is glued to the token before it, the first
// token keeps its "##", and each token is cleaned up alone.
TEST(WordPieceOffsets, TokensToStringIsTheRustDecoder) {
  const TokenOffsets& offsets = tiny_bert().offsets();
  const std::vector<std::string> tokens = {"le", "##an", "so", ",", "i", "'", "ll", "."};
  EXPECT_EQ(offsets.tokens_to_string(tokens), "lean so, i ' ll.");
  const std::vector<std::string> starts_inside = {"##quip", "sir"};
  EXPECT_EQ(offsets.tokens_to_string(starts_inside), "##quip sir");
}

// --- Goldens from Hugging Face (need ../shared) -------------------------------------------------

TEST(WordPieceGolden, TokensJsonl) {
  ATTN_REQUIRE_SHARED();
  const std::vector<json> lines = GoldenSet("tiny-bert-brown").jsonl("tokens.jsonl");
  ASSERT_FALSE(lines.empty());
  std::ostringstream mismatches;
  int mismatch_count = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string text = lines[i]["text"];
    const auto expected_ids = lines[i]["ids"].get<std::vector<int>>();
    const auto expected_tokens = lines[i]["tokens"].get<std::vector<std::string>>();
    const std::vector<int> ids = tiny_bert().encode(text).ids;
    const std::vector<std::string> tokens = tokens_of(tiny_bert(), ids);
    if (ids != expected_ids || tokens != expected_tokens) {
      ++mismatch_count;
      mismatches << "line " << i + 1 << ": text " << json(text).dump() << "\n  expected "
                 << json(expected_tokens).dump() << " " << json(expected_ids) << "\n  got      "
                 << json(tokens).dump() << " " << json(ids) << "\n";
    }
  }
  EXPECT_EQ(mismatch_count, 0) << mismatch_count << " of " << lines.size() << " lines differ:\n"
                               << mismatches.str();
}

// llama.cpp's tokenizer test vectors: bert.inp holds strings, each followed by a line
// "__ggml_vocab_test__"; bert.out holds one line per string with the ids (each preceded by a
// space) that Hugging Face gives without [CLS]/[SEP].
TEST(WordPieceGolden, TokenizerVectors) {
  ATTN_REQUIRE_SHARED();
  const GoldenSet golden("tokenizer-vectors");
  const std::string inputs_file = golden.text("bert.inp");
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  for (std::size_t start = 0; start < inputs_file.size();) {
    const std::size_t end = inputs_file.find(separator, start);
    ASSERT_NE(end, std::string::npos) << "bert.inp does not end with the separator line";
    inputs.push_back(inputs_file.substr(start, end - start));
    start = end + separator.size();
  }
  std::vector<std::vector<int>> outputs;
  std::istringstream outputs_file(golden.text("bert.out"));
  for (std::string line; std::getline(outputs_file, line);) {
    std::istringstream fields(line);
    outputs.emplace_back(std::istream_iterator<int>(fields), std::istream_iterator<int>());
  }
  ASSERT_EQ(inputs.size(), outputs.size()) << "bert.inp and bert.out disagree on the case count";
  ASSERT_FALSE(inputs.empty());

  std::ostringstream mismatches;
  int mismatch_count = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<int> with_specials = tiny_bert().encode(inputs[i]).ids;
    const std::vector<int> ids(with_specials.begin() + 1, with_specials.end() - 1);
    if (ids != outputs[i]) {
      ++mismatch_count;
      mismatches << "case " << i + 1 << ": text " << json(inputs[i]).dump() << "\n  expected "
                 << json(outputs[i]) << "\n  got      " << json(ids) << "\n";
    }
  }
  EXPECT_EQ(mismatch_count, 0) << mismatch_count << " of " << inputs.size() << " cases differ:\n"
                               << mismatches.str();
}

TEST(WordPieceGolden, FillMaskInputsAndTokenStrings) {
  ATTN_REQUIRE_SHARED();
  const std::vector<json> lines = GoldenSet("tiny-bert-brown").jsonl("fill_mask.jsonl");
  ASSERT_FALSE(lines.empty());
  std::ostringstream mismatches;
  int mismatch_count = 0;
  int candidate_count = 0;
  for (const json& line : lines) {
    const std::string text = line["text"];
    const auto expected_ids = line["input_ids"].get<std::vector<int>>();
    const std::vector<int> ids = tiny_bert().encode(text).ids;
    if (ids != expected_ids) {
      ++mismatch_count;
      mismatches << "text " << json(text).dump() << "\n  expected " << json(expected_ids)
                 << "\n  got      " << json(ids) << "\n";
    }
    for (const json& mask : line["masks"]) {
      for (const json& candidate : mask["top"]) {
        ++candidate_count;
        const int id = candidate["token_id"];
        const std::string expected = candidate["token_str"];
        const std::string got = tiny_bert().decode(std::vector<int>{id}, false);
        if (got != expected) {
          ++mismatch_count;
          mismatches << "decode([" << id << "]): expected " << json(expected).dump() << ", got "
                     << json(got).dump() << "\n";
        }
      }
    }
  }
  EXPECT_GT(candidate_count, 0);
  EXPECT_EQ(mismatch_count, 0) << mismatch_count << " mismatches in " << lines.size()
                               << " sentences / " << candidate_count << " candidates:\n"
                               << mismatches.str();
}

// The offsets the token-classification golden recorded for its 50 texts.
TEST(WordPieceGolden, TokenClassificationOffsets) {
  ATTN_REQUIRE_SHARED();
  const std::unique_ptr<Tokenizer> tokenizer =
      load_wordpiece_tokenizer(test::shared_dir() / "models/tiny-bert-tokcls-random");
  int checked = 0;
  for (const json& golden : GoldenSet("tiny-bert-tokcls-random").jsonl("token_classify.jsonl")) {
    const std::string text = golden["text"];
    EXPECT_EQ(tokenizer->encode(text).ids, golden["input_ids"].get<std::vector<int>>()) << text;
    std::vector<CharSpan> expected;
    for (const json& span : golden["offsets"]) expected.push_back({span[0], span[1]});
    EXPECT_EQ(tokenizer->offsets().token_offsets(text), expected) << text;
    ++checked;
  }
  EXPECT_EQ(checked, 50);
}

}  // namespace
}  // namespace attn
