#include "src/tokenizer/tokenizer.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/base/unicode.h"
#include "src/io/json_util.h"
#include "src/tokenizer/bpe.h"
#include "src/tokenizer/marian.h"
#include "src/tokenizer/sentencepiece.h"
#include "src/tokenizer/tokenizer_files.h"
#include "src/tokenizer/tokenizer_json.h"
#include "src/tokenizer/wordpiece.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::unique_ptr<Tokenizer> load_tokenizer_files(const fs::path& model_dir) {
  // AutoTokenizer loads the fast tokenizer, tokenizer.json, whenever a folder has one.
  if (entry_exists(model_dir / "tokenizer.json")) return load_tokenizer_json(model_dir);
  if (entry_exists(model_dir / kMarianSourceModel)) return load_marian_tokenizer(model_dir);
  if (sentencepiece_model_file(model_dir)) return load_sentencepiece_tokenizer(model_dir);
  if (entry_exists(model_dir / "vocab.json") && entry_exists(model_dir / "merges.txt")) {
    return load_bpe_tokenizer(model_dir);
  }
  if (entry_exists(model_dir / "vocab.txt")) return load_wordpiece_tokenizer(model_dir);
  throw Error(model_dir.string() +
              ": no tokenizer files (looked for tokenizer.json, source.spm, tokenizer.model, "
              "spiece.model, sentencepiece.bpe.model, vocab.json + merges.txt and vocab.txt)");
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const fs::path& model_dir) {
  try {
    return load_tokenizer_files(model_dir);
  } catch (const nlohmann::json::exception& error) {
    // The loaders check every value's type before reading it; this is the last resort that keeps
    // a case they missed a one-line error rather than a crash.
    throw Error(model_dir.string() + ": tokenizer files: unexpected JSON value (" +
                brief_text(error.what(), 200) + ")");
  }
}

std::optional<std::string> declared_tokenizer_class(const fs::path& model_dir) {
  return read_tokenizer_files(model_dir).class_name;
}

bool config_flag(const json& config, const char* key, bool fallback, const std::string& file) {
  if (!config.contains(key) || config[key].is_null()) return fallback;
  if (!config[key].is_boolean()) throw Error(file + ": '" + key + "' must be true or false");
  return config[key].get<bool>();
}

std::optional<std::string> named_token_content(const json& value, const std::string& where) {
  if (value.is_null()) return std::nullopt;
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string()) {
    return value["content"].get<std::string>();
  }
  throw Error(where + ": expected a string, an object with \"content\", or null");
}

std::string decode_difference(const Tokenizer& tokenizer, std::span<const int> previous_ids,
                              int id) {
  std::vector<int> ids(previous_ids.begin(), previous_ids.end());
  const std::string before = tokenizer.decode(ids, true);
  ids.push_back(id);
  const std::string after = tokenizer.decode(ids, true);
  const auto common = std::mismatch(before.begin(), before.end(), after.begin(), after.end());
  return after.substr(static_cast<std::size_t>(common.second - after.begin()));
}

std::string clean_up_tokenization(std::string text) {
  static constexpr std::pair<std::string_view, std::string_view> kReplacements[] = {
      {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kReplacements) text = python_replace(text, from, to);
  return text;
}

}  // namespace attn
