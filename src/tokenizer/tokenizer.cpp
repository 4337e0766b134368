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
#include "src/io/json_util.h"
#include "src/tokenizer/bpe.h"
#include "src/tokenizer/marian.h"
#include "src/tokenizer/sentencepiece.h"
#include "src/tokenizer/tokenizer_json.h"
#include "src/tokenizer/unicode.h"
#include "src/tokenizer/wordpiece.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Finds the kind of model in tokenizer.json, reading no further than its "model" object:
// model.type when given ("type" comes first in it, before the vocabulary), otherwise what the
// fields tell, as the tokenizers library does for files that leave the type out (BPE has merges,
// WordPiece a continuing_subword_prefix / max_input_chars_per_word). "model" comes after the
// small parts of the file (added tokens, normalizer, ...). The loader that the type chooses
// reads and checks the whole file.
class ModelTypeReader final : public json::json_sax_t {
 public:
  explicit ModelTypeReader(std::string file) : file_(std::move(file)) {}

  std::optional<std::string> model_type() const {
    if (type_) return type_;
    if (has_merges_) return "BPE";
    if (has_word_piece_fields_) return "WordPiece";
    return std::nullopt;
  }

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool string(string_t& text) override {
    if (depth_ == 2 && in_model_ && key_ == "type") {
      type_ = text;
      return false;  // found: stop parsing
    }
    return true;
  }
  bool start_object(std::size_t) override { return open(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& name) override {
    key_ = name;
    if (depth_ == 1) model_key_ = name == "model";
    if (depth_ == 2 && in_model_) {
      has_merges_ = has_merges_ || name == "merges";
      has_word_piece_fields_ = has_word_piece_fields_ || name == "continuing_subword_prefix" ||
                               name == "max_input_chars_per_word";
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const json::exception& error) override {
    throw Error(invalid_json_message(file_, {}, error));
  }

 private:
  bool open() {
    ++depth_;
    if (depth_ == 2) in_model_ = model_key_;
    return true;
  }
  bool close() {
    // The end of the model object: everything there is to know has been seen.
    if (depth_-- == 2 && in_model_) return false;
    return true;
  }

  std::string file_;
  int depth_ = 0;
  bool model_key_ = false;  // the current top-level key is "model"
  bool in_model_ = false;   // the object being read is the top-level "model"
  std::string key_;
  std::optional<std::string> type_;
  bool has_merges_ = false;
  bool has_word_piece_fields_ = false;
};

std::string tokenizer_json_model_type(const fs::path& path) {
  const std::string file = path.string();
  const std::string text = read_model_file(path, kMaxTokenizerBytes);
  check_json_depth(text, file);
  ModelTypeReader reader(file);
  json::sax_parse(text, &reader);
  if (!reader.model_type()) {
    throw Error(file + ": model.type is missing and the model's fields do not tell the kind of " +
                "tokenizer");
  }
  return *reader.model_type();
}

std::unique_ptr<Tokenizer> load_tokenizer_files(const fs::path& model_dir) {
  // AutoTokenizer loads the fast tokenizer, tokenizer.json, whenever a folder has one.
  if (entry_exists(model_dir / "tokenizer.json")) return load_tokenizer_json(model_dir);
  if (entry_exists(model_dir / kMarianSourceModel)) return load_marian_tokenizer(model_dir);
  if (sentencepiece_model_file(model_dir)) return load_sentencepiece_tokenizer(model_dir);
  if (entry_exists(model_dir / "vocab.json") && entry_exists(model_dir / "merges.txt")) {
    return load_bpe_tokenizer(model_dir);
  }
  if (entry_exists(model_dir / "vocab.txt")) return load_wordpiece_tokenizer(model_dir);
  const fs::path tokenizer_json = model_dir / "tokenizer.json";
  if (entry_exists(tokenizer_json)) {
    const std::string type = tokenizer_json_model_type(tokenizer_json);
    if (type == "BPE") return load_bpe_tokenizer(model_dir);
    if (type == "WordPiece") return load_wordpiece_tokenizer(model_dir);
    throw Error(tokenizer_json.string() + ": model.type is \"" + brief_text(type) +
                "\"; attn reads \"BPE\" and \"WordPiece\" tokenizers from tokenizer.json");
  }
  throw Error(model_dir.string() +
              ": no tokenizer files (looked for source.spm, tokenizer.model, spiece.model, "
              "sentencepiece.bpe.model, vocab.json + merges.txt, vocab.txt and tokenizer.json)");
}

// AutoTokenizer's slow class for the model types attn knows (TOKENIZER_MAPPING_NAMES), including
// some whose tokenizer files attn must refuse rather than misread.
constexpr std::pair<std::string_view, std::string_view> kClassOfModelType[] = {
    {"albert", "AlbertTokenizer"},
    {"bert", "BertTokenizer"},
    {"camembert", "CamembertTokenizer"},
    {"distilbert", "DistilBertTokenizer"},
    {"gpt2", "GPT2Tokenizer"},
    {"llama", "LlamaTokenizer"},
    {"marian", "MarianTokenizer"},
    {"mistral", "LlamaTokenizer"},
    {"roberta", "RobertaTokenizer"},
    {"t5", "T5Tokenizer"},
    {"xlm-roberta", "XLMRobertaTokenizer"}};

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
  const fs::path config_path = model_dir / "tokenizer_config.json";
  if (entry_exists(config_path)) {
    const json config = read_json_file(config_path, kMaxConfigBytes);
    if (!config.is_object()) throw Error(config_path.string() + ": expected a JSON object");
    if (config.contains("tokenizer_class") && !config["tokenizer_class"].is_null()) {
      const json& name = config["tokenizer_class"];
      if (!name.is_string()) {
        throw Error(config_path.string() + ": tokenizer_class is " + brief_json(name) +
                    ", not a class name");
      }
      std::string class_name = name.get<std::string>();
      if (class_name.ends_with("Fast")) class_name.resize(class_name.size() - 4);
      return class_name;
    }
  }
  // config.json itself is checked by the model loader; here it only may tell the family.
  const fs::path model_config_path = model_dir / "config.json";
  if (!entry_exists(model_config_path)) return std::nullopt;
  const json model_config = read_json_file(model_config_path, kMaxConfigBytes);
  if (!model_config.is_object() || !model_config.contains("model_type") ||
      !model_config["model_type"].is_string()) {
    return std::nullopt;
  }
  const std::string model_type = model_config["model_type"].get<std::string>();
  for (const auto& [type, class_name] : kClassOfModelType) {
    if (type == model_type) return std::string(class_name);
  }
  return std::nullopt;
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
