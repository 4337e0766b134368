#pragma once

// Small helpers shared by the tokenizer suites.

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "src/base/error.h"
#include "src/tokenizer/pipeline/decoders.h"
#include "src/tokenizer/tokenizer.h"
#include "tests/cli_util.h"
#include "tests/golden.h"
#include "tests/test_paths.h"

namespace attn::test {

// Text quoted as JSON so that whitespace and control characters are visible in failures.
inline std::string json_quoted(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// token_classify.jsonl's `word` of an entity group: the golden's pipeline ran with a stand-in
// for the fast WordPiece decoder (../shared/golden/README.md) that drops the "##" of a group's
// first token and cleans up the joined text as a whole, where the Rust decoder, which
// BertTokenizerFast and attn run, keeps that "##" and cleans up each token alone ("i ' ll" stays;
// tokenizers 0.23.2 decodes ["##quip", "sir"] to "##quip sir" and ["i", "'", "ll"] to
// "i ' ll"). This maps attn's word onto the stand-in's.
inline std::string golden_stand_in_word(std::string word) {
  if (word.starts_with("##")) word.erase(0, 2);
  return pipeline::wordpiece_cleanup(std::move(word));
}

// "1 2 3", the layout of the tokenizer test vectors' .out files.
inline std::string join(const std::vector<int>& ids) {
  std::string joined;
  for (int id : ids) {
    if (!joined.empty()) joined += ' ';
    joined += std::to_string(id);
  }
  return joined;
}

// The message of the attn::Error that `action` throws (a test failure if it throws none).
inline std::string error_message(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected attn::Error";
  return "";
}

inline ::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << json_quoted(text) << " does not contain " << json_quoted(part);
}

// llama.cpp's tokenizer test vectors (the golden set "tokenizer-vectors"): NAME.inp holds the
// strings, each followed by "\n__ggml_vocab_test__\n"; NAME.out one line of space-separated
// ids per string.
struct TokenizerVectors {
  std::vector<std::string> texts;
  std::vector<std::vector<int>> expected;
};

inline TokenizerVectors read_tokenizer_vectors(const GoldenSet& golden, const std::string& name) {
  TokenizerVectors vectors;
  const std::string inputs = golden.text(name + ".inp");
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::size_t begin = 0;
  for (std::size_t end; (end = inputs.find(separator, begin)) != std::string::npos;) {
    vectors.texts.push_back(inputs.substr(begin, end - begin));
    begin = end + separator.size();
  }
  EXPECT_EQ(begin, inputs.size()) << name << ".inp does not end with the separator";
  std::istringstream outputs(golden.text(name + ".out"));
  for (std::string line; std::getline(outputs, line);) {
    std::istringstream numbers(line);
    vectors.expected.emplace_back();
    for (int id; numbers >> id;) vectors.expected.back().push_back(id);
  }
  return vectors;
}

// ---- The test models of ../shared/models (their goldens: GoldenSet, tests/golden.h) -----------

inline std::filesystem::path shared_model_dir(const std::string& model) {
  return shared_dir() / "models" / model;
}

// The tokenizer of a test model, loaded once per model: every test reads the same files.
inline const Tokenizer& shared_tokenizer(const std::string& model) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> loaded;
  std::unique_ptr<Tokenizer>& tokenizer = loaded[model];
  if (!tokenizer) tokenizer = load_tokenizer(shared_model_dir(model));
  return *tokenizer;
}

// convert_ids_to_tokens: the token string of each id.
inline std::vector<std::string> tokens_of(const Tokenizer& tokenizer, const std::vector<int>& ids) {
  std::vector<std::string> tokens;
  for (int id : ids) tokens.push_back(tokenizer.token_string(id));
  return tokens;
}

inline nlohmann::json golden_meta(const std::string& model) {
  return GoldenSet(model).json("meta.json");
}

// A golden line's decoded text, and what attn's decode() gives for it.
struct Decoded {
  std::string expected;
  std::string got;
};

// By meta.json's decoded_rule; nullopt when the folder has no decoded text (WordPiece).
inline std::optional<Decoded> decoded_by_rule(const Tokenizer& tokenizer,
                                              const nlohmann::json& rule,
                                              const nlohmann::json& golden) {
  if (rule.is_null()) return std::nullopt;
  const std::vector<int> ids = golden["ids"];
  const std::string decoded = golden["decoded"];
  if (rule == "decode(ids, skip_special_tokens=True)") {
    return Decoded{decoded, tokenizer.decode(ids, true)};
  }
  if (rule == "decode(ids, clean_up_tokenization_spaces=False)") {
    // attn's decode() cleans up as the folder's tokenizer_config.json says (true for the RoBERTa
    // folder); transformers' clean-up is the last step of its decode(), applied to exactly the
    // text the golden holds.
    return Decoded{clean_up_tokenization(decoded), tokenizer.decode(ids, false)};
  }
  ADD_FAILURE() << "unknown decoded_rule " << rule.dump();
  return std::nullopt;
}

// Every line of a test model's tokens.jsonl: the ids of encode(text), the token strings of the
// golden ids, and the decoded text by meta.json's decoded_rule. All mismatches are reported at
// once, and the count of lines that match is printed.
inline void expect_tokens_jsonl_match(const std::string& model) {
  using nlohmann::json;
  const Tokenizer& tokenizer = shared_tokenizer(model);
  const json rule = golden_meta(model)["decoded_rule"];
  int checked = 0;
  int matched = 0;
  std::string mismatches;
  for (const json& golden : GoldenSet(model).jsonl("tokens.jsonl")) {
    ++checked;
    const std::string text = golden["text"];
    const std::vector<int> expected_ids = golden["ids"];
    const std::vector<std::string> expected_tokens = golden["tokens"];
    const std::vector<int> ids = tokenizer.encode(text).ids;
    const std::vector<std::string> tokens = tokens_of(tokenizer, expected_ids);
    const Decoded decoded = decoded_by_rule(tokenizer, rule, golden).value_or(Decoded{});
    if (ids == expected_ids && tokens == expected_tokens && decoded.got == decoded.expected) {
      ++matched;
      continue;
    }
    mismatches += "\n  text " + json_quoted(text) + "\n    expected ids [" + join(expected_ids) +
                  "] tokens " + json(expected_tokens).dump() + " decoded " +
                  json_quoted(decoded.expected) + "\n    got      ids [" + join(ids) + "] tokens " +
                  json(tokens).dump(-1, ' ', false, json::error_handler_t::replace) + " decoded " +
                  json_quoted(decoded.got);
  }
  std::cout << model << " tokens.jsonl: " << matched << " of " << checked << " lines match\n";
  EXPECT_EQ(checked, 301);
  EXPECT_TRUE(mismatches.empty()) << "tokens.jsonl mismatches:" << mismatches;
}

// What generation would print, token by token (decode_continuation), equals decoding the whole
// sequence, for the ids of every line of a test model's tokens.jsonl.
inline void expect_streaming_matches_decode(const std::string& model) {
  const Tokenizer& tokenizer = shared_tokenizer(model);
  for (const nlohmann::json& golden : GoldenSet(model).jsonl("tokens.jsonl")) {
    const std::vector<int> ids = golden["ids"];
    std::string streamed;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      streamed += tokenizer.decode_continuation(std::span(ids).first(i), ids[i]);
    }
    EXPECT_EQ(streamed, tokenizer.decode(ids, true))
        << model << ": " << json_quoted(golden["text"].get<std::string>());
  }
}

// A scratch copy of a test model's tokenizer files (all but model.safetensors), with `edit`
// applied to one of its JSON files.
class EditedFolder {
 public:
  EditedFolder(const std::string& model, const std::string& edited_file,
               const std::function<void(nlohmann::json&)>& edit) {
    for (const auto& entry : std::filesystem::directory_iterator(shared_model_dir(model))) {
      if (entry.path().filename() == "model.safetensors") continue;
      std::filesystem::copy_file(entry.path(), dir_.path() / entry.path().filename());
      std::filesystem::permissions(dir_.path() / entry.path().filename(),
                                   std::filesystem::perms::owner_write,
                                   std::filesystem::perm_options::add);
    }
    const std::filesystem::path file = dir_.path() / edited_file;
    nlohmann::json content = nlohmann::json::parse(read_file(file));
    edit(content);
    write_file(file, content.dump());
  }
  const std::filesystem::path& path() const { return dir_.path(); }

 private:
  TempDir dir_;
};

}  // namespace attn::test
