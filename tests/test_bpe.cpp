#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "src/base/error.h"
#include "src/base/unicode.h"
#include "src/tokenizer/bpe.h"
#include "src/tokenizer/tokenizer.h"
#include "tests/golden.h"
#include "tests/test_paths.h"
#include "tests/tokenizer_test_util.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace attn::test;  // tests/tokenizer_test_util.h, tests/test_paths.h

const Tokenizer& shipped_gpt2() {
  // Loaded once: every test reads the same files.
  static const std::unique_ptr<Tokenizer> tokenizer =
      load_bpe_tokenizer(test::shipped_model("tiny-gpt2-brown"));
  return *tokenizer;
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A fresh directory under the system temp dir, removed at the end of the test.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name)
      : path_(fs::temp_directory_path() /
              ("attn_test_bpe_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// The shipped model's fast tokenizer: its tokenizer.json, run by the tokenizer.json pipeline, with
// the tokenizer_config.json that names its special tokens (eos), without the slow files. The
// slow and the fast tokenizer of one model must agree.
const Tokenizer& shipped_gpt2_from_tokenizer_json() {
  static const std::unique_ptr<Tokenizer> tokenizer = [] {
    ScratchDir dir("tokenizer_json_only");
    for (const char* file : {"tokenizer.json", "tokenizer_config.json"}) {
      fs::copy_file(test::shipped_model("tiny-gpt2-brown") / file, dir.path() / file);
    }
    return load_tokenizer(dir.path());
  }();
  return *tokenizer;
}

TEST(BpeTokenizer, EncodesHelloWorld) {
  const Encoding encoding = shipped_gpt2().encode("Hello world");
  EXPECT_EQ(encoding.ids, (std::vector<int>{15496, 995}));
  EXPECT_EQ(encoding.type_ids, (std::vector<int>{0, 0}));
  EXPECT_EQ(shipped_gpt2().token_string(995), "Ġworld");
}

TEST(BpeTokenizer, EncodesEmptyTextAsNothing) {
  EXPECT_TRUE(shipped_gpt2().encode("").ids.empty());
}

TEST(BpeTokenizer, LeavesLastSpaceOfARunForTheNextWord) {
  // "\s+(?!\S)": two spaces then a word -> one "Ġ" and "ĠHello"; trailing spaces stay together.
  EXPECT_EQ(shipped_gpt2().encode("  Hello").ids, (std::vector<int>{220, 18435}));
  EXPECT_EQ(shipped_gpt2().encode("a  ").ids, (std::vector<int>{64, 220, 220}));
}

TEST(BpeTokenizer, SplitsOutLiteralEndOfText) {
  const Tokenizer& tokenizer = shipped_gpt2();
  const std::vector<int> ids = tokenizer.encode("Hello<|endoftext|>world").ids;
  EXPECT_EQ(ids, (std::vector<int>{15496, 50256, 6894}));
  EXPECT_EQ(tokenizer.eos_id(), 50256);
  EXPECT_TRUE(tokenizer.is_special(50256));
  EXPECT_FALSE(tokenizer.is_special(15496));
  EXPECT_EQ(tokenizer.mask_id(), std::nullopt);
  EXPECT_EQ(tokenizer.token_string(50256), "<|endoftext|>");
  EXPECT_EQ(tokenizer.decode(ids, false), "Hello<|endoftext|>world");
  EXPECT_EQ(tokenizer.decode(ids, true), "Helloworld");
}

TEST(BpeTokenizer, DecodesBackToTheSameBytes) {
  const std::string text = "Tabs\tand\nnewlines,  ünïcödé, 中文, emoji 🍕 and  spaces  ";
  const Tokenizer& tokenizer = shipped_gpt2();
  EXPECT_EQ(tokenizer.decode(tokenizer.encode(text).ids, false), text);
}

// Decoded bytes that are not UTF-8 become U+FFFD as Python's errors="replace" does: one per
// maximal subpart of a valid sequence, one per byte that cannot start one.
TEST(ReplaceInvalidUtf8, OneReplacementPerMaximalSubpart) {
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(replace_invalid_utf8("a\xE2\x82\xAC b"), "a\xE2\x82\xAC b");  // valid: kept
  EXPECT_EQ(replace_invalid_utf8("a\xE2\x82 b"), "a" + r + " b");         // 2 of 3 bytes: one
  EXPECT_EQ(replace_invalid_utf8("\xF0\x9F\x98"), r);                     // 3 of 4, at the end
  EXPECT_EQ(replace_invalid_utf8("\x80\x80"), r + r);                     // lone continuations
  EXPECT_EQ(replace_invalid_utf8("\xC0\xAF"), r + r);                     // overlong lead
  EXPECT_EQ(replace_invalid_utf8("\xE0\x80\x41"), r + r + "A");           // E0 needs A0..BF next
  EXPECT_EQ(replace_invalid_utf8("\xED\xA0\x80"), r + r + r);             // a surrogate
  EXPECT_EQ(replace_invalid_utf8("\xF4\x90\x80\x80"), r + r + r + r);     // past U+10FFFF
  EXPECT_EQ(replace_invalid_utf8("\xE2\x82\xE2\x82\xAC"), r + "\xE2\x82\xAC");
}

// An id past the vocabulary has no token, as in the fast tokenizer (convert_ids_to_tokens gives
// None): the converted files give what the model's tokenizer.json gives. attn tokenize refuses
// such an id before decoding it (tests/test_tokenize_cli.cpp).
TEST(BpeTokenizer, DescribesItsVocabulary) {
  EXPECT_EQ(shipped_gpt2().vocab_size(), 50257);
  EXPECT_EQ(shipped_gpt2().token_string(262), "Ġthe");
  const Tokenizer& from_json = shipped_gpt2_from_tokenizer_json();
  EXPECT_EQ(shipped_gpt2().token_string(50257), from_json.token_string(50257));
  for (const std::vector<int>& ids : {std::vector<int>{-1}, std::vector<int>{262, 50257}}) {
    EXPECT_EQ(shipped_gpt2().decode(ids, false), from_json.decode(ids, false));
  }
}

// GPT2TokenizerFast takes pairs (its ByteLevel post-processor joins them, the second with type
// id 1), as the model's tokenizer.json does.
TEST(BpeTokenizer, RejectsInvalidUtf8AndJoinsPairsAsTheFastTokenizer) {
  EXPECT_TRUE(Contains(error_message([] { shipped_gpt2().encode("ok \xff"); }), "UTF-8"));
  const Encoding pair = shipped_gpt2().encode("Hello", " world");
  const Encoding expected = shipped_gpt2_from_tokenizer_json().encode("Hello", " world");
  EXPECT_EQ(pair.ids, expected.ids);
  EXPECT_EQ(pair.type_ids, expected.type_ids);
}

TEST(BpeTokenizer, TokenizerJsonGivesTheSameTokenizer) {
  const Tokenizer& from_vocab = shipped_gpt2();
  const Tokenizer& from_json = shipped_gpt2_from_tokenizer_json();
  EXPECT_EQ(from_json.vocab_size(), from_vocab.vocab_size());
  EXPECT_EQ(from_json.eos_id(), from_vocab.eos_id());
  EXPECT_TRUE(from_json.is_special(50256));
  for (const std::string text :
       {"Hello world", "Hello<|endoftext|>world", "It's   a test...\n\n  ok?", "日本語 ℕ ∑"}) {
    EXPECT_EQ(from_json.encode(text).ids, from_vocab.encode(text).ids) << json_quoted(text);
  }
}

TEST(BpeTokenizer, TokenizerJsonMergesMayBeStrings) {
  // Older tokenizer.json files spell each merge "left right" instead of ["left", "right"].
  ScratchDir dir("string_merges");
  json tokenizer =
      json::parse(read_file(test::shipped_model("tiny-gpt2-brown") / "tokenizer.json"));
  for (json& merge : tokenizer["model"]["merges"]) {
    merge = merge[0].get<std::string>() + " " + merge[1].get<std::string>();
  }
  write_file(dir.path() / "tokenizer.json", tokenizer.dump());
  const std::unique_ptr<Tokenizer> from_strings = load_tokenizer(dir.path());
  for (const std::string text : {"Hello world", "It's   a test...\n\n  ok?", "日本語 ℕ ∑"}) {
    EXPECT_EQ(from_strings->encode(text).ids, shipped_gpt2().encode(text).ids) << json_quoted(text);
  }
}

TEST(BpeTokenizer, EncodesFromSeveralThreadsAtOnce) {
  // The threads share one word cache while filling it with new words; a second instance, with
  // its own cache, gives the expected ids.
  const Tokenizer& reference = shipped_gpt2_from_tokenizer_json();
  const std::vector<std::string> texts = {"The quick brown fox", "jumps over the lazy dog's back",
                                          "  3.14159 ünïcödé  ", "Hello<|endoftext|>world"};
  std::atomic<int> mismatches = 0;
  std::vector<std::thread> threads;
  for (int thread = 0; thread < 4; ++thread) {
    threads.emplace_back([&] {
      for (int round = 0; round < 100; ++round) {
        for (const std::string& text : texts) {
          const std::string varied = text + " word" + std::to_string(round) + "x";
          if (shipped_gpt2().encode(varied).ids != reference.encode(varied).ids) ++mismatches;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(mismatches, 0);
}

TEST(BpeTokenizerLoading, MissingFolderNamesThePath) {
  const fs::path missing = "/nonexistent/attn-model";
  EXPECT_TRUE(Contains(error_message([&] { load_bpe_tokenizer(missing); }), missing.string()));
}

TEST(BpeTokenizerLoading, FolderWithoutTokenizerFiles) {
  ScratchDir dir("empty");
  EXPECT_TRUE(
      Contains(error_message([&] { load_bpe_tokenizer(dir.path()); }),
               dir.path().string() + ": no GPT-2 tokenizer files (need vocab.json + merges.txt)"));
}

// A folder with the shipped vocab.json and the given merges.txt.
std::string merges_error(const std::string& name, const std::string& merges) {
  ScratchDir dir(name);
  fs::copy_file(test::shipped_model("tiny-gpt2-brown") / "vocab.json", dir.path() / "vocab.json");
  write_file(dir.path() / "merges.txt", merges);
  return error_message([&] { load_bpe_tokenizer(dir.path()); });
}

TEST(BpeTokenizerLoading, BadMergesLinesNameFileLineAndProblem) {
  const std::string three_pieces = merges_error("three", "#version: 0.2\nĠ t\nh e x\n");
  EXPECT_TRUE(Contains(three_pieces, "merges.txt line 3"));
  EXPECT_TRUE(Contains(three_pieces, "expected two tokens"));
  EXPECT_TRUE(Contains(merges_error("unknown", "#version: 0.2\nĠ zzqqxx\n"),
                       "merge piece 'zzqqxx' is not in the vocabulary"));
}

TEST(BpeTokenizerLoading, MalformedJsonNamesTheFile) {
  ScratchDir dir("malformed");
  write_file(dir.path() / "vocab.json", "{\"a\": 0,");
  write_file(dir.path() / "merges.txt", "#version: 0.2\n");
  const std::string message = error_message([&] { load_bpe_tokenizer(dir.path()); });
  EXPECT_TRUE(Contains(message, (dir.path() / "vocab.json").string()));
  EXPECT_TRUE(Contains(message, "not valid JSON"));
}

TEST(BpeTokenizerLoading, TokenizerJsonWithBadMergeNamesTheEntry) {
  ScratchDir dir("bad_json_merge");
  json tokenizer =
      json::parse(read_file(test::shipped_model("tiny-gpt2-brown") / "tokenizer.json"));
  tokenizer["model"]["merges"][5] = json::array({"h"});
  write_file(dir.path() / "tokenizer.json", tokenizer.dump());
  EXPECT_TRUE(Contains(error_message([&] { load_tokenizer(dir.path()); }),
                       (dir.path() / "tokenizer.json").string() +
                           ": model.merges[5]: expected a [\"left\", \"right\"] pair, found "
                           "[\"h\"]"));
}

// ---- Goldens (../shared) -----------------------------------------------------------------------

// Checks every line of tokens.jsonl and reports all mismatches at once.
void expect_matches_tokens_jsonl(const Tokenizer& tokenizer) {
  int checked = 0;
  std::string mismatches;
  for (const json& golden : GoldenSet("tiny-gpt2-brown").jsonl("tokens.jsonl")) {
    const std::string text = golden["text"];
    const std::vector<int> expected_ids = golden["ids"];
    const std::vector<std::string> expected_tokens = golden["tokens"];
    const std::string expected_decoded = golden["decoded"];
    ++checked;

    const std::vector<int> ids = tokenizer.encode(text).ids;
    std::vector<std::string> tokens;
    for (int id : ids) tokens.push_back(tokenizer.token_string(id));
    const std::string decoded = tokenizer.decode(expected_ids, false);
    if (ids != expected_ids || tokens != expected_tokens || decoded != expected_decoded) {
      mismatches += "\n  text " + json_quoted(text) + "\n    expected ids [" + join(expected_ids) +
                    "] tokens " + json(expected_tokens).dump() + " decoded " +
                    json_quoted(expected_decoded) + "\n    got      ids [" + join(ids) +
                    "] tokens " +
                    json(tokens).dump(-1, ' ', false, json::error_handler_t::replace) +
                    " decoded " + json_quoted(decoded);
    }
  }
  EXPECT_EQ(checked, 301);
  EXPECT_TRUE(mismatches.empty()) << "tokens.jsonl mismatches:" << mismatches;
}

// llama.cpp's vectors: NAME.inp holds the strings, each followed by "\n__ggml_vocab_test__\n";
// NAME.out holds one line of space-separated ids per string.
void expect_matches_gpt2_vectors(const Tokenizer& tokenizer) {
  const auto [texts, expected] = read_tokenizer_vectors(GoldenSet("tokenizer-vectors"), "gpt2");
  ASSERT_EQ(texts.size(), expected.size());
  EXPECT_EQ(texts.size(), 46u);

  std::string mismatches;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const std::vector<int> ids = tokenizer.encode(texts[i]).ids;
    const std::string decoded = tokenizer.decode(ids, false);
    if (ids != expected[i] || decoded != texts[i]) {
      mismatches += "\n  case " + std::to_string(i) + " text " + json_quoted(texts[i]) +
                    "\n    expected [" + join(expected[i]) + "]\n    got      [" + join(ids) +
                    "] decoding to " + json_quoted(decoded);
    }
  }
  EXPECT_TRUE(mismatches.empty()) << "gpt2 vector mismatches:" << mismatches;
}

TEST(BpeGolden, TinyGpt2TokensJsonl) {
  ATTN_REQUIRE_SHARED();
  expect_matches_tokens_jsonl(shipped_gpt2());
}

TEST(BpeGolden, Gpt2TokenizerVectors) {
  ATTN_REQUIRE_SHARED();
  expect_matches_gpt2_vectors(shipped_gpt2());
}

TEST(BpeGolden, TokenizerJsonMatchesGoldens) {
  ATTN_REQUIRE_SHARED();
  expect_matches_tokens_jsonl(shipped_gpt2_from_tokenizer_json());
  expect_matches_gpt2_vectors(shipped_gpt2_from_tokenizer_json());
}

}  // namespace
}  // namespace attn
