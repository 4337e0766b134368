#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "src/base/error.h"
#include "src/base/unicode.h"
#include "src/tokenizer/sentencepiece.h"
#include "src/tokenizer/tokenizer.h"
#include "tests/cli_util.h"
#include "tests/golden.h"
#include "tests/hostile_util.h"
#include "tests/test_paths.h"
#include "tests/tokenizer_test_util.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace attn::test;  // tests/tokenizer_test_util.h, tests/test_paths.h

fs::path llama_dir() { return test::shared_dir() / "models/tiny-llama-brown"; }

const Tokenizer& llama() {
  // Loaded once: every test reads the same files. load_tokenizer must choose SentencePiece.
  static const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(llama_dir());
  return *tokenizer;
}

std::vector<int> without_bos(std::vector<int> ids) {
  if (!ids.empty() && ids.front() == 1) ids.erase(ids.begin());
  return ids;
}

// What generation prints: the prompt's ids are given, the others come one at a time through
// decode_continuation (invalid UTF-8 replaced at the end, as TextStream does).
std::string streamed_text(const Tokenizer& tokenizer, const std::vector<int>& ids,
                          std::size_t prompt_size) {
  std::string bytes;
  for (std::size_t i = prompt_size; i < ids.size(); ++i) {
    bytes += tokenizer.decode_continuation(std::span(ids).first(i), ids[i]);
  }
  return replace_invalid_utf8(bytes);
}

// ---- Goldens (../shared) -----------------------------------------------------------------------

// Every line of tokens.jsonl: ids, tokens, decode(ids, skip_special_tokens=True). All
// mismatches are reported at once.
void expect_matches_tokens_jsonl(const Tokenizer& tokenizer, int& matched) {
  int checked = 0;
  matched = 0;
  std::string mismatches;
  for (const json& golden : GoldenSet("tiny-llama-brown").jsonl("tokens.jsonl")) {
    const std::string text = golden["text"];
    const std::vector<int> expected_ids = golden["ids"];
    const std::vector<std::string> expected_tokens = golden["tokens"];
    const std::string expected_decoded = golden["decoded"];
    ++checked;
    const std::vector<int> ids = tokenizer.encode(text).ids;
    std::vector<std::string> tokens;
    for (int id : ids) tokens.push_back(tokenizer.token_string(id));
    const std::string decoded = tokenizer.decode(expected_ids, true);
    if (ids == expected_ids && tokens == expected_tokens && decoded == expected_decoded) {
      ++matched;
      continue;
    }
    mismatches += "\n  text " + json_quoted(text) + "\n    expected ids [" + join(expected_ids) +
                  "] tokens " + json(expected_tokens).dump() + " decoded " +
                  json_quoted(expected_decoded) + "\n    got      ids [" + join(ids) + "] tokens " +
                  json(tokens).dump(-1, ' ', false, json::error_handler_t::replace) + " decoded " +
                  json_quoted(decoded);
  }
  EXPECT_EQ(checked, 301);
  EXPECT_TRUE(mismatches.empty()) << "tokens.jsonl mismatches:" << mismatches;
}

TEST(SentencePieceGolden, TinyLlamaTokensJsonl) {
  ATTN_REQUIRE_SHARED();
  int matched = 0;
  expect_matches_tokens_jsonl(llama(), matched);
  std::cout << "tokens.jsonl: " << matched << " of 301 lines match\n";
}

TEST(SentencePieceGolden, Llama2TokenizerFolderGivesTheSameTokenizer) {
  ATTN_REQUIRE_SHARED();
  const std::unique_ptr<Tokenizer> tokenizer =
      load_tokenizer(test::shared_dir() / "tokenizers/llama2");
  int matched = 0;
  expect_matches_tokens_jsonl(*tokenizer, matched);
}

// llama.cpp's vectors: llama-spm.inp holds the strings, each followed by
// "\n__ggml_vocab_test__\n"; llama-spm.out one line of space-separated ids per string, without
// the BOS. Decoding gives the text back, except for whitespace at its start: LlamaTokenizer
// takes the first piece's "▁" for the dummy prefix.
TEST(SentencePieceGolden, LlamaTokenizerVectors) {
  ATTN_REQUIRE_SHARED();
  const auto [texts, expected] =
      read_tokenizer_vectors(GoldenSet("tokenizer-vectors"), "llama-spm");
  ASSERT_EQ(texts.size(), expected.size());
  EXPECT_EQ(texts.size(), 46u);

  int matched = 0;
  std::string mismatches;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const std::vector<int> with_bos = llama().encode(texts[i]).ids;
    ASSERT_FALSE(with_bos.empty());
    EXPECT_EQ(with_bos.front(), 1) << "no BOS for " << json_quoted(texts[i]);
    const std::vector<int> ids = without_bos(with_bos);
    const std::string decoded = llama().decode(with_bos, true);
    const bool starts_with_space = !texts[i].empty() && std::isspace(texts[i][0]);
    if (ids == expected[i] && (starts_with_space || decoded == texts[i])) {
      ++matched;
      continue;
    }
    mismatches += "\n  case " + std::to_string(i) + " text " + json_quoted(texts[i]) +
                  "\n    expected [" + join(expected[i]) + "]\n    got      [" + join(ids) +
                  "] decoding to " + json_quoted(decoded);
  }
  std::cout << "llama-spm vectors: " << matched << " of " << texts.size() << " match\n";
  EXPECT_TRUE(mismatches.empty()) << "llama-spm vector mismatches:" << mismatches;
}

// Streaming every golden line from every split point prints exactly what decoding the whole
// sequence adds to decoding the prompt: the lines have byte-fallback pieces of emoji and CJK
// characters, a lone "▁" first, runs of "▁▁", and word-initial pieces.
TEST(SentencePieceGolden, StreamingEqualsWholeDecode) {
  ATTN_REQUIRE_SHARED();
  int byte_fallback_lines = 0;
  int splits = 0;
  for (const json& golden : GoldenSet("tiny-llama-brown").jsonl("tokens.jsonl")) {
    const std::vector<int> ids = golden["ids"];
    for (int id : ids) {
      if (llama().token_string(id).starts_with("<0x")) {
        ++byte_fallback_lines;
        break;
      }
    }
    const std::string whole = llama().decode(ids, true);
    for (std::size_t prompt = 0; prompt <= ids.size(); ++prompt) {
      // A prompt that ends inside a character of byte pieces decodes to U+FFFD there.
      const std::string prompt_text = llama().decode(std::span(ids).first(prompt), true);
      if (!whole.starts_with(prompt_text)) continue;
      ++splits;
      EXPECT_EQ(streamed_text(llama(), ids, prompt), whole.substr(prompt_text.size()))
          << json_quoted(golden["text"]) << " streamed after " << prompt << " tokens";
    }
  }
  EXPECT_GT(byte_fallback_lines, 5);
  EXPECT_GT(splits, 4000);
}

// ---- Behaviour -------------------------------------------------------------------------------

TEST(SentencePieceTokenizer, StreamsAMultiByteCharacterOfBytePiecesWhole) {
  ATTN_REQUIRE_SHARED();
  // "▁" "<0xF0>" "<0x9F>" "<0x98>" "<0x80>" "▁the": the emoji arrives in four parts, none of
  // which is a character, and "▁the" after it gets its space.
  const std::vector<int> ids = llama().encode("😀 the").ids;
  ASSERT_EQ(llama().token_string(ids[2]), "<0xF0>");
  std::vector<std::string> parts;
  for (std::size_t i = 1; i < ids.size(); ++i) {
    parts.push_back(llama().decode_continuation(std::span(ids).first(i), ids[i]));
  }
  EXPECT_EQ(parts, (std::vector<std::string>{"", "\xF0", "\x9F", "\x98", "\x80", " the"}));
  EXPECT_EQ(streamed_text(llama(), ids, 1), llama().decode(ids, true));
  // A word-initial piece right after the prompt's BOS has no space; later ones have.
  const std::vector<int> words = llama().encode("The jury said").ids;
  EXPECT_EQ(llama().decode_continuation(std::span(words).first(1), words[1]), "The");
  EXPECT_EQ(llama().decode_continuation(std::span(words).first(2), words[2]),
            " " + llama().token_string(words[2]).substr(std::string_view("▁").size()));
  // Special tokens print nothing, as decode(skip_special_tokens=True) shows nothing for them.
  EXPECT_EQ(llama().decode_continuation(words, 2), "");
}

TEST(SentencePieceTokenizer, SplitsOutLiteralSpecialTokens) {
  ATTN_REQUIRE_SHARED();
  const Tokenizer& tokenizer = llama();
  // legacy: every piece of text between special tokens gets its own dummy prefix.
  std::vector<int> expected = tokenizer.encode("Hello").ids;
  expected.push_back(2);
  const std::vector<int> world = without_bos(tokenizer.encode("world").ids);
  expected.insert(expected.end(), world.begin(), world.end());
  EXPECT_EQ(tokenizer.encode("Hello</s>world").ids, expected);
  EXPECT_EQ(tokenizer.encode("<s>").ids, (std::vector<int>{1, 1}));
  EXPECT_EQ(tokenizer.encode("").ids, (std::vector<int>{1}));
  EXPECT_EQ(tokenizer.eos_id(), 2);
  EXPECT_TRUE(tokenizer.is_special(0));
  EXPECT_TRUE(tokenizer.is_special(1));
  EXPECT_FALSE(tokenizer.is_special(3));
  EXPECT_EQ(tokenizer.mask_id(), std::nullopt);
  EXPECT_EQ(tokenizer.vocab_size(), 32000);
  EXPECT_EQ(tokenizer.token_string(13), "<0x0A>");
}

TEST(SentencePieceTokenizer, DecodesSpecialTokensAsLlamaTokenizerDoes) {
  ATTN_REQUIRE_SHARED();
  // LlamaTokenizer(legacy=True).decode([1, 15043, 2]) is "<s> Hello</s>": a space before a
  // special token that follows text, none after the first one.
  const std::vector<int> ids = {1, 15043, 2};
  ASSERT_EQ(llama().token_string(15043), "▁Hello");
  EXPECT_EQ(llama().decode(ids, false), "<s> Hello</s>");
  EXPECT_EQ(llama().decode(ids, true), "Hello");
  // An id the tokenizer has no token for decodes to nothing, as the tokenizers library's
  // decode skips it (attn's commands refuse such ids before decoding).
  EXPECT_EQ(llama().decode(std::vector<int>{32000}, true), "");
  EXPECT_EQ(llama().token_string(-1), "");
  EXPECT_TRUE(Contains(error_message([] { llama().encode("ok \xff"); }), "UTF-8"));
}

TEST(SentencePieceTokenizer, PairsGetABosEach) {
  ATTN_REQUIRE_SHARED();
  const Encoding pair = llama().encode("a", "b");
  std::vector<int> expected = llama().encode("a").ids;
  const std::vector<int> second = llama().encode("b").ids;
  expected.insert(expected.end(), second.begin(), second.end());
  EXPECT_EQ(pair.ids, expected);
  EXPECT_EQ(pair.type_ids, (std::vector<int>{0, 0, 1, 1}));
}

// A copy of the Llama tokenizer files with tokenizer_config.json edited.
class EditedLlamaTokenizer {
 public:
  explicit EditedLlamaTokenizer(const std::function<void(json&)>& edit) {
    for (const char* file : {"tokenizer.model", "special_tokens_map.json"}) {
      fs::copy_file(llama_dir() / file, dir_.path() / file);
    }
    json config = json::parse(test::read_file(llama_dir() / "tokenizer_config.json"));
    edit(config);
    test::write_file(dir_.path() / "tokenizer_config.json", config.dump());
  }
  const fs::path& path() const { return dir_.path(); }

 private:
  test::TempDir dir_;
};

// legacy: false is LlamaTokenizerFast's Metaspace pre-tokenizer with prepend_scheme "first",
// which adds the prefix "▁" only to a text that does not start with a space already (the slow
// class adds it always): texts that start with a space are left out.
TEST(SentencePieceTokenizer, NonLegacyEncodesPlainTextTheSame) {
  ATTN_REQUIRE_SHARED();
  EditedLlamaTokenizer edited([](json& config) { config["legacy"] = false; });
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(edited.path());
  std::string mismatches;
  for (const json& golden : GoldenSet("tiny-llama-brown").jsonl("tokens.jsonl")) {
    const std::string text = golden["text"];
    if (text.find("<s>") != std::string::npos || text.find("</s>") != std::string::npos ||
        text.find("<unk>") != std::string::npos || text.starts_with(' ')) {
      continue;
    }
    if (tokenizer->encode(text).ids != golden["ids"].get<std::vector<int>>()) {
      mismatches += "\n  " + json_quoted(text);
    }
  }
  EXPECT_TRUE(mismatches.empty()) << "legacy: false differs on plain text:" << mismatches;
  // legacy: false gives no dummy prefix to text after a special token: the example of
  // LlamaTokenizer's documentation, where 869 is "▁." and 29889 ".".
  EXPECT_EQ(llama().encode("Hello <s>.").ids, (std::vector<int>{1, 15043, 29871, 1, 869}));
  EXPECT_EQ(tokenizer->encode("Hello <s>.").ids, (std::vector<int>{1, 15043, 29871, 1, 29889}));
}

TEST(SentencePieceTokenizer, AddedTokensAndAddEos) {
  ATTN_REQUIRE_SHARED();
  EditedLlamaTokenizer edited([](json& config) {
    config["add_eos_token"] = true;
    config["added_tokens_decoder"]["32000"] = {{"content", "<|user|>"}, {"special", false}};
  });
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(edited.path());
  EXPECT_EQ(tokenizer->vocab_size(), 32001);
  const std::vector<int> ids = tokenizer->encode("<|user|>Hi").ids;
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 32000);
  EXPECT_EQ(ids.back(), 2);
  EXPECT_FALSE(tokenizer->is_special(32000));
  // A non-special added token is written as it is, the run after it decoded on its own.
  EXPECT_EQ(tokenizer->decode(ids, true), "<|user|>Hi");
  EXPECT_EQ(streamed_text(*tokenizer, ids, 0), "<|user|>Hi");
}

// ---- Choosing the tokenizer by the files a folder ships -----------------------------------------

// A scratch folder holding copies of the named files of `source`.
std::unique_ptr<test::TempDir> folder_with(const fs::path& source,
                                           std::initializer_list<const char*> files) {
  auto dir = std::make_unique<test::TempDir>();
  for (const char* file : files) fs::copy_file(source / file, dir->path() / file);
  return dir;
}

TEST(TokenizerChoice, TokenizerModelIsSentencePiece) {
  ATTN_REQUIRE_SHARED();
  const auto dir = folder_with(llama_dir(), {"tokenizer.model"});
  EXPECT_EQ(load_tokenizer(dir->path())->token_string(15043), "▁Hello");
}

TEST(TokenizerChoice, VocabJsonAndMergesAreByteLevelBpe) {
  const auto dir =
      folder_with(test::shipped_model("tiny-gpt2-brown"), {"vocab.json", "merges.txt"});
  EXPECT_EQ(load_tokenizer(dir->path())->encode("Hello world").ids, (std::vector<int>{15496, 995}));
}

TEST(TokenizerChoice, BpeTokenizerJsonIsByteLevelBpe) {
  const auto dir = folder_with(test::shipped_model("tiny-gpt2-brown"), {"tokenizer.json"});
  EXPECT_EQ(load_tokenizer(dir->path())->token_string(995), "Ġworld");
}

TEST(TokenizerChoice, VocabTxtIsWordPiece) {
  const auto dir = folder_with(test::shipped_model("tiny-bert-brown"), {"vocab.txt"});
  const Encoding encoding = load_tokenizer(dir->path())->encode("Hello");
  EXPECT_EQ(encoding.ids.front(), 101);  // [CLS]
}

TEST(TokenizerChoice, WordPieceTokenizerJsonIsWordPiece) {
  // The shipped file leaves model.type out, as older tokenizers versions wrote it: the library
  // tells the model by its fields.
  const auto dir = folder_with(test::shipped_model("tiny-bert-brown"), {"tokenizer.json"});
  const std::vector<int> hello_world = {101, 7592, 2088, 102};  // [CLS] hello world [SEP]
  EXPECT_EQ(load_tokenizer(dir->path())->encode("Hello world").ids, hello_world);
  const fs::path file = dir->path() / "tokenizer.json";
  json tokenizer = json::parse(test::read_file(file));
  tokenizer["model"]["type"] = "WordPiece";
  test::write_file(file, tokenizer.dump());
  EXPECT_EQ(load_tokenizer(dir->path())->encode("Hello world").ids, hello_world);
}

TEST(TokenizerChoice, TokenizerJsonModelMustHaveTheFieldsOfItsType) {
  const auto dir = folder_with(test::shipped_model("tiny-bert-brown"), {"tokenizer.json"});
  const fs::path file = dir->path() / "tokenizer.json";
  json tokenizer = json::parse(test::read_file(file));
  tokenizer["model"]["type"] = "Unigram";
  test::write_file(file, tokenizer.dump());
  EXPECT_TRUE(Contains(error_message([&] { load_tokenizer(dir->path()); }),
                       file.string() + ": model.vocab: expected an array of [piece, score]"));
  tokenizer["model"]["type"] = "Word2Vec";
  test::write_file(file, tokenizer.dump());
  EXPECT_TRUE(Contains(error_message([&] { load_tokenizer(dir->path()); }),
                       file.string() + ": model.type: model type \"Word2Vec\" is not implemented"));
  // Without a type and without the fields of BPE, WordPiece and Unigram, the library reads a
  // WordLevel model, which needs an unk_token.
  tokenizer["model"] = {{"vocab", tokenizer["model"]["vocab"]}};
  test::write_file(file, tokenizer.dump());
  EXPECT_TRUE(Contains(error_message([&] { load_tokenizer(dir->path()); }),
                       file.string() + ": model.unk_token is missing"));
}

TEST(TokenizerChoice, FolderWithoutTokenizerFilesNamesThoseLookedFor) {
  const auto dir = folder_with(test::shipped_model("tiny-gpt2-brown"), {"config.json"});
  EXPECT_TRUE(Contains(error_message([&] { load_tokenizer(dir->path()); }),
                       dir->path().string() +
                           ": no tokenizer files (looked for tokenizer.json, source.spm, "
                           "tokenizer.model, spiece.model, sentencepiece.bpe.model, vocab.json + "
                           "merges.txt and vocab.txt)"));
}

// ---- Broken tokenizer.model: one line, exit 1, nothing modified ---------------------------------

class BrokenTokenizerModelTest : public test::HostileTest {
 protected:
  // `attn tokenize -m COPY x` on a copy of the shipped GPT-2 folder with `model_bytes` as its
  // tokenizer.model, which comes first among the tokenizer files once tokenizer.json is gone.
  void expect_refused(const std::string& model_bytes, const std::string& reason) {
    const fs::path model = copy_model_without_tokenizer_json("tiny-gpt2-brown");
    test::write_file(model / "tokenizer.model", model_bytes);
    test::expect_clean_failure(
        run({"tokenize", "-m", model.string(), "x"}), test::kBadInput,
        {(model / "tokenizer.model").string() + ": not a SentencePiece model (" + reason});
  }
};

TEST_F(BrokenTokenizerModelTest, Empty) { expect_refused("", "empty file"); }

TEST_F(BrokenTokenizerModelTest, RandomBytes) {
  std::mt19937 random(8);
  std::string bytes(5000, '\0');
  for (char& byte : bytes) byte = static_cast<char>(random());
  expect_refused(bytes, "the file is not a valid protocol buffer");
}

TEST_F(BrokenTokenizerModelTest, TruncatedInsideAPiece) {
  ATTN_REQUIRE_SHARED();
  const std::string bytes = test::read_file(llama_dir() / "tokenizer.model");
  expect_refused(bytes.substr(0, bytes.size() / 2), "the file is not a valid protocol buffer");
}

TEST_F(BrokenTokenizerModelTest, TruncatedBeforeItsNormalizerSettings) {
  ATTN_REQUIRE_SHARED();
  // The last 20 bytes of the Llama model are its normalizer_spec; without them the file still
  // parses, and would run with other normalization.
  const std::string bytes = test::read_file(llama_dir() / "tokenizer.model");
  expect_refused(bytes.substr(0, bytes.size() - 20), "no normalizer settings");
}

TEST_F(BrokenTokenizerModelTest, TruncatedAfterItsPieces) {
  ATTN_REQUIRE_SHARED();
  // Pieces only: libsentencepiece would refuse the byte pieces, byte_fallback (in the trainer
  // settings) being then off; attn names what is missing first.
  const std::string bytes = test::read_file(llama_dir() / "tokenizer.model");
  expect_refused(bytes.substr(0, 499437), "no trainer settings: is the file cut short?");
}

// A ModelProto of `pieces` ({text, type}) with empty trainer and normalizer settings.
std::string model_proto(const std::vector<std::pair<std::string, int>>& pieces) {
  const auto length_delimited = [](int number, const std::string& payload) {
    std::string out(1, static_cast<char>(number << 3 | 2));
    for (std::size_t length = payload.size();; length >>= 7) {
      out += static_cast<char>((length & 0x7F) | (length >= 0x80 ? 0x80 : 0));
      if (length < 0x80) break;
    }
    return out + payload;
  };
  std::string proto;
  for (const auto& [text, type] : pieces) {
    proto += length_delimited(
        1, length_delimited(1, text) + std::string("\x18") + static_cast<char>(type));
  }
  return proto + length_delimited(2, "") + length_delimited(3, "");
}

// libsentencepiece's checks of the pieces (ModelInterface::InitializePieces), which attn makes
// itself: types 1 normal, 2 unknown, 3 control, 6 byte.
TEST_F(BrokenTokenizerModelTest, PieceGivenTwice) {
  expect_refused(model_proto({{"<unk>", 2}, {"a", 1}, {"a", 1}}), "piece 2 (a) is given twice");
}
TEST_F(BrokenTokenizerModelTest, NoUnknownPiece) {
  expect_refused(model_proto({{"a", 1}}), "it has no unknown piece");
}
TEST_F(BrokenTokenizerModelTest, TwoUnknownPieces) {
  expect_refused(model_proto({{"<unk>", 2}, {"<u>", 2}}), "piece 1 is a second unknown piece");
}
TEST_F(BrokenTokenizerModelTest, EmptyPiece) {
  expect_refused(model_proto({{"<unk>", 2}, {"", 1}}), "piece 1 is empty");
}
TEST_F(BrokenTokenizerModelTest, BytePieceWithoutByteFallback) {
  expect_refused(model_proto({{"<unk>", 2}, {"<0x41>", 6}}),
                 "byte piece <0x41> although byte_fallback is false");
}
TEST_F(BrokenTokenizerModelTest, UnknownPieceType) {
  expect_refused(model_proto({{"<unk>", 2}, {"a", 9}}), "piece 1 has type 9");
}

// The same text as a normal and as a control piece is allowed, as the library allows it.
TEST_F(BrokenTokenizerModelTest, NormalAndControlPieceOfTheSameText) {
  const fs::path model = copy_model_without_tokenizer_json("tiny-gpt2-brown");
  test::write_file(model / "tokenizer.model", model_proto({{"<unk>", 2}, {"a", 1}, {"a", 3}}));
  test::write_file(model / "tokenizer_config.json", R"({"tokenizer_class": "LlamaTokenizer"})");
  EXPECT_EQ(run({"tokenize", "-m", model.string(), "a"}).exit_status, 0);
}

TEST_F(BrokenTokenizerModelTest, PieceStartingWithANulByte) {
  // Found by fuzz_sentencepiece: a 128-byte model whose third piece is "\0\x96\x81t", on which
  // libsentencepiece's trie builder threw (an empty key to it); it is not UTF-8.
  const std::string bytes(
      "\x0A\x0E\x0A\x05\x3C\x75\x6E\x6B\x3E\x15\x00\x00\x00\x00\x18\x02\x15\x00\x00\x00\x00\x18"
      "\x06\x0A\x09\x0A\x02\x68\x65\x15\x00\x00\x00\x80\x0A\x0B\x0A\x04\x00\x96\x81\x74\x15\x00"
      "\x00\x80\xBF\x0A\x0D\x0A\x06\xE2\x96\x81\x74\x68\x65\x15\x00\x00\x00\xC0\x0A\x09\x0A\x02"
      "\x61\x74\x15\x00\x00\x40\xC0\x0A\x09\x0A\x02\x73\x74\x15\x04\x00\x80\xC0\x0A\x09\x0A\x02"
      "\x41\x74\x15\x00\x00\xA0\xC0\x0A\x09\x0A\x02\x49\x74\x15\x00\x00\xC0\xC0\x0A\x09\x0A\x02"
      "\x61\x64\x15\x00\x00\xE0\xC0\x0A\x09\x0A\x02\x61\x69\x15\x00\x00\x00\xC1",
      128);
  expect_refused(bytes, "piece 2 (");
}

}  // namespace
}  // namespace attn
