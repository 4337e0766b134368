#include "src/tokenizer/tokenizer_files.h"

#include <string_view>
#include <utility>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/io/json_util.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// AutoTokenizer's slow class for the model types attn knows (TOKENIZER_MAPPING_NAMES), including
// some whose tokenizer files attn must refuse rather than misread.
constexpr std::pair<std::string_view, std::string_view> kClassOfModelType[] = {
    {"albert", "AlbertTokenizer"},
    {"bert", "BertTokenizer"},
    {"camembert", "CamembertTokenizer"},
    {"distilbert", "DistilBertTokenizer"},
    {"gemma2", "GemmaTokenizer"},
    {"gemma3_text", "GemmaTokenizer"},
    {"gpt2", "GPT2Tokenizer"},
    {"llama", "LlamaTokenizer"},
    {"marian", "MarianTokenizer"},
    {"mistral", "LlamaTokenizer"},
    {"roberta", "RobertaTokenizer"},
    {"t5", "T5Tokenizer"},
    {"xlm-roberta", "XLMRobertaTokenizer"}};

json read_optional_object(const fs::path& path) {
  if (!entry_exists(path)) return json::object();
  json value = read_json_file(path, kMaxConfigBytes);
  if (!value.is_object()) throw Error(path.string() + ": expected a JSON object");
  return value;
}

std::optional<std::string> class_of_model_type(const fs::path& dir) {
  // config.json itself is checked by the model loader; here it only may tell the family.
  const fs::path model_config_path = dir / "config.json";
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

}  // namespace

TokenizerFiles read_tokenizer_files(const fs::path& dir) {
  TokenizerFiles files;
  files.dir = dir;
  files.config_file = (dir / "tokenizer_config.json").string();
  files.map_file = (dir / "special_tokens_map.json").string();
  files.config = read_optional_object(files.config_file);
  if (!files.config.contains("added_tokens_decoder")) {
    files.special_tokens_map = read_optional_object(files.map_file);
  }
  if (files.config.contains("tokenizer_class") && !files.config["tokenizer_class"].is_null()) {
    const json& name = files.config["tokenizer_class"];
    if (!name.is_string()) {
      throw Error(files.config_file + ": tokenizer_class is " + brief_json(name) +
                  ", not a class name");
    }
    std::string class_name = name.get<std::string>();
    if (class_name.ends_with("Fast")) class_name.resize(class_name.size() - 4);
    files.class_name = std::move(class_name);
  } else {
    files.class_name = class_of_model_type(dir);
  }
  return files;
}

}  // namespace attn
