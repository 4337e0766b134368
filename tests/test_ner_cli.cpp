// attn ner from the command line against the token-classification pipeline's golden
// (../shared/golden/tiny-bert-tokcls-random/token_classify.jsonl): the pipeline's fields for each
// --aggregation, the marked plain output, and the refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli_util.h"
#include "tests/golden.h"
#include "tests/tokenizer_test_util.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kModel = "tiny-bert-tokcls-random";

// Lines of the golden away from its near ties (15, 20, 49).
constexpr int kLines[] = {0, 1, 2, 3};

std::vector<json> golden_lines() { return GoldenSet(kModel).jsonl("token_classify.jsonl"); }

TEST(NerCli, JsonHasThePipelineFieldsForEachAggregation) {
  ATTN_REQUIRE_SHARED();
  const std::vector<json> lines = golden_lines();
  for (const char* aggregation : {"none", "simple", "first", "average", "max"}) {
    for (int n : kLines) {
      const std::string text = lines[std::size_t(n)]["text"];
      const CommandResult result = run_attn({"ner", "-m", shared_model_dir(kModel).string(),
                                             "--json", "--aggregation", aggregation, "-p", text});
      ASSERT_EQ(result.exit_status, 0) << describe(result);
      const json out = json::parse(result.out);
      EXPECT_EQ(out["text"], text);
      const json& want = lines[std::size_t(n)][std::string("pipeline_") + aggregation];
      ASSERT_EQ(out["entities"].size(), want.size()) << aggregation << " line " << n;
      for (std::size_t i = 0; i < want.size(); ++i) {
        const json& got = out["entities"][i];
        std::vector<std::string> got_keys, want_keys;
        for (const auto& [key, value] : got.items()) got_keys.push_back(key);
        for (const auto& [key, value] : want[i].items()) want_keys.push_back(key);
        std::sort(want_keys.begin(), want_keys.end());
        std::vector<std::string> sorted_got = got_keys;
        std::sort(sorted_got.begin(), sorted_got.end());
        EXPECT_EQ(sorted_got, want_keys) << aggregation << " line " << n;
        for (const auto& [key, value] : want[i].items()) {
          if (key == "score") {
            // Scores through attn's own logits: tolerance::kScoreOnOwnLogits (tests/tolerances.h).
            EXPECT_NEAR(got[key].get<double>(), value.get<double>(), tolerance::kScoreOnOwnLogits);
          } else if (key == "word" && std::string_view(aggregation) != "none") {
            EXPECT_EQ(golden_stand_in_word(got[key]), value) << aggregation << " line " << n;
          } else {
            EXPECT_EQ(got[key], value) << aggregation << " line " << n << " " << key;
          }
        }
      }
    }
  }
}

// Entities marked in the text from the golden's own offsets, then one line each.
TEST(NerCli, PlainOutputMarksTheEntities) {
  ATTN_REQUIRE_SHARED();
  const json line = golden_lines()[0];
  const std::string text = line["text"];  // ASCII: offsets are byte offsets too
  std::string marked;
  std::size_t done = 0;
  for (const json& entity : line["pipeline_first"]) {
    const std::size_t start = entity["start"], end = entity["end"];
    marked += text.substr(done, start - done) + "[" + text.substr(start, end - start) + "](" +
              entity["entity_group"].get<std::string>() + ")";
    done = end;
  }
  marked += text.substr(done);
  const CommandResult result =
      run_attn({"ner", "-m", shared_model_dir(kModel).string(), "--aggregation", "first", text});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  std::istringstream out(result.out);
  std::string first_line;
  std::getline(out, first_line);
  EXPECT_EQ(first_line, marked);
  int entity_lines = 0;
  for (std::string row; std::getline(out, row);) {
    ASSERT_LT(std::size_t(entity_lines), line["pipeline_first"].size()) << result.out;
    const json& entity = line["pipeline_first"][std::size_t(entity_lines)];
    EXPECT_TRUE(row.starts_with(entity["entity_group"].get<std::string>() + "\t")) << row;
    std::string span_and_word = "\t";
    span_and_word += std::to_string(entity["start"].get<int>());
    span_and_word += '-';
    span_and_word += std::to_string(entity["end"].get<int>());
    span_and_word += '\t';
    span_and_word += entity["word"].get<std::string>();
    EXPECT_TRUE(row.ends_with(span_and_word)) << row;
    ++entity_lines;
  }
  EXPECT_EQ(std::size_t(entity_lines), line["pipeline_first"].size());
}

// The same model with a tokenizer.json (BertNormalizer + BertPreTokenizer + WordPiece over the
// same vocab.txt) in place of vocab.txt.
fs::path copy_with_tokenizer_json(const TempDir& dir) {
  const fs::path model = dir.path() / "model";
  fs::copy(shared_model_dir(kModel), model);
  json vocab = json::object();
  std::ifstream lines(model / "vocab.txt");
  int id = 0;
  for (std::string token; std::getline(lines, token);) vocab[token] = id++;
  json added = json::array();
  for (const char* token : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
    added.push_back({{"id", vocab[token]},
                     {"content", token},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  const json tokenizer = {{"version", "1.0"},
                          {"added_tokens", added},
                          {"normalizer",
                           {{"type", "BertNormalizer"},
                            {"clean_text", true},
                            {"handle_chinese_chars", true},
                            {"strip_accents", nullptr},
                            {"lowercase", true}}},
                          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
                          {"post_processor",
                           {{"type", "BertProcessing"},
                            {"sep", {"[SEP]", vocab["[SEP]"]}},
                            {"cls", {"[CLS]", vocab["[CLS]"]}}}},
                          {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
                          {"model",
                           {{"type", "WordPiece"},
                            {"unk_token", "[UNK]"},
                            {"continuing_subword_prefix", "##"},
                            {"max_input_chars_per_word", 100},
                            {"vocab", vocab}}}};
  std::ofstream(model / "tokenizer.json") << tokenizer.dump();
  fs::remove(model / "vocab.txt");
  return model;
}

// A tokenizer.json of the same pipeline in place of vocab.txt: every aggregation gives what the
// vocab.txt folder gives.
TEST(NerCli, TokenizerJsonGivesWhatVocabTxtGives) {
  ATTN_REQUIRE_SHARED();
  TempDir dir;
  const fs::path model = copy_with_tokenizer_json(dir);
  const std::vector<json> lines = golden_lines();
  for (const char* aggregation : {"none", "simple", "first", "average", "max"}) {
    for (int n : kLines) {
      const std::string text = lines[std::size_t(n)]["text"];
      const CommandResult json_only = run_attn(
          {"ner", "-m", model.string(), "--json", "--aggregation", aggregation, "-q", text});
      const CommandResult vocab_only =
          run_attn({"ner", "-m", shared_model_dir(kModel).string(), "--json", "--aggregation",
                    aggregation, "-q", text});
      ASSERT_EQ(json_only.exit_status, 0) << describe(json_only);
      EXPECT_EQ(json_only.out, vocab_only.out) << aggregation << " line " << n;
    }
  }
}

// A tokenizer without a continuing-subword prefix (here Marian's SentencePiece models, converted
// into the pipeline like every other): the pipeline tells a word's pieces by the spaces around
// them ("fallback heuristic") and warns for first, average and max. Here the model's weights
// with tiny-marian-random's tokenizer files, its vocabulary cut to the model's size (the <pad> it
// needs moved into it).
TEST(NerCli, TokenizerWithoutSubwordPrefixTellsWordsBySpaces) {
  ATTN_REQUIRE_SHARED();
  TempDir dir;
  const fs::path model = dir.path() / "model";
  fs::copy(shared_model_dir(kModel), model);
  for (const char* file : {"vocab.txt", "tokenizer_config.json", "special_tokens_map.json"}) {
    fs::remove(model / file);
  }
  const fs::path marian = shared_model_dir("tiny-marian-random");
  for (const char* file : {"source.spm", "target.spm", "special_tokens_map.json"}) {
    fs::copy_file(marian / file, model / file);
  }
  const int model_vocabulary = json::parse(read_file(model / "config.json"))["vocab_size"];
  const json marian_vocab = json::parse(read_file(marian / "vocab.json"));
  json vocab = json::object();
  for (const auto& [token, id] : marian_vocab.items()) {
    if (id.get<int>() < model_vocabulary - 1) vocab[token] = id;
  }
  vocab["<pad>"] = model_vocabulary - 1;
  write_file(model / "vocab.json", vocab.dump());
  json config = json::parse(read_file(marian / "tokenizer_config.json"));
  for (auto& [id, token] : config["added_tokens_decoder"].items()) {
    if (token["content"] == "<pad>") {
      json pad = token;
      config["added_tokens_decoder"].erase(id);
      config["added_tokens_decoder"][std::to_string(model_vocabulary - 1)] = pad;
      break;
    }
  }
  write_file(model / "tokenizer_config.json", config.dump());

  // "Xanthippe" and "Pemberton" are each several pieces of the model (checked below).
  const std::string text = "Xanthippe met Pemberton quickly.";
  const CommandResult tokens =
      run_attn({"ner", "-m", model.string(), "--json", "--aggregation", "none", "-q", text});
  ASSERT_EQ(tokens.exit_status, 0) << describe(tokens);
  const json pieces = json::parse(tokens.out)["entities"];
  ASSERT_GT(pieces.size(), 6u) << tokens.out;
  for (const json& piece : pieces) {
    EXPECT_LT(piece["start"].get<int>(), piece["end"].get<int>()) << tokens.out;
  }
  // A SentencePiece token's span starts at the space its "▁" stands for.
  const auto is_word_start = [&](int start) {
    return start == 0 || text[start - 1] == ' ' || text[start] == ' ';
  };
  const auto is_word_end = [&](int end) { return end == int(text.size()) || text[end] == ' '; };
  EXPECT_FALSE(std::all_of(pieces.begin(), pieces.end(),
                           [&](const json& piece) {
                             return is_word_start(piece["start"]) && is_word_end(piece["end"]);
                           }))
      << "every piece is a whole word: " << tokens.out;

  // Words (not pieces) take one label: every entity starts and ends where a word does.
  for (const char* aggregation : {"first", "average", "max"}) {
    const CommandResult words =
        run_attn({"ner", "-m", model.string(), "--json", "--aggregation", aggregation, text});
    ASSERT_EQ(words.exit_status, 0) << describe(words);
    EXPECT_TRUE(Contains(words.err, "does not mark the pieces inside a word")) << words.err;
    const json entities = json::parse(words.out)["entities"];
    for (const json& entity : entities) {
      EXPECT_TRUE(is_word_start(entity["start"])) << aggregation << ": " << words.out;
      EXPECT_TRUE(is_word_end(entity["end"])) << aggregation << ": " << words.out;
    }
  }
  const CommandResult simple =
      run_attn({"ner", "-m", model.string(), "--json", "--aggregation", "simple", text});
  ASSERT_EQ(simple.exit_status, 0) << describe(simple);
  EXPECT_FALSE(Contains(simple.err, "does not mark")) << simple.err;
}

TEST(NerCli, SequenceClassifierIsRefused) {
  ATTN_REQUIRE_SHARED();
  const CommandResult result =
      run_attn({"ner", "-m", shared_model_dir("tiny-bert-seqcls-random").string(), "text"});
  EXPECT_NE(result.exit_status, 0) << describe(result);
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_TRUE(Contains(result.err, "ner")) << result.err;
}

TEST(NerCli, LongTextNeedsTruncate) {
  ATTN_REQUIRE_SHARED();
  std::string text;
  for (int i = 0; i < 600; ++i) text += "word ";
  const CommandResult refused = run_attn({"ner", "-m", shared_model_dir(kModel).string(), text});
  EXPECT_EQ(refused.exit_status, 1) << describe(refused);
  EXPECT_TRUE(Contains(refused.err, "--truncate")) << refused.err;
  const CommandResult cut = run_attn(
      {"ner", "-m", shared_model_dir(kModel).string(), "--json", "--truncate", "-q", text});
  ASSERT_EQ(cut.exit_status, 0) << describe(cut);
  const json entities = json::parse(cut.out);
  for (const json& entity : entities["entities"]) {
    EXPECT_LE(entity["end"].get<int>(), 600 * 5);
  }
}

}  // namespace
}  // namespace attn::test
