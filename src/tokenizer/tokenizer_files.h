#pragma once

// What a model folder says about its tokenizer besides the vocabulary: tokenizer_config.json,
// special_tokens_map.json and the tokenizer class they declare, read once by
// read_tokenizer_files and passed to every reader (the tokenizers, chat templates).

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace attn {

struct TokenizerFiles {
  std::filesystem::path dir;
  std::string config_file;                           // dir/tokenizer_config.json, named in errors
  nlohmann::json config = nlohmann::json::object();  // {} when the folder has none
  std::string map_file;                              // dir/special_tokens_map.json, named in errors
  // {} when absent, and when tokenizer_config.json has added_tokens_decoder: transformers reads
  // special_tokens_map.json only for folders saved before the config had it.
  nlohmann::json special_tokens_map = nlohmann::json::object();
  // The class transformers' AutoTokenizer builds: tokenizer_config.json's tokenizer_class
  // without "Fast", else the class of config.json's model_type; unset when neither says.
  std::optional<std::string> class_name;
};

// The one place tokenizer_config.json and special_tokens_map.json are opened; each must be a JSON
// object when it is read, and tokenizer_class a string or null.
TokenizerFiles read_tokenizer_files(const std::filesystem::path& dir);

}  // namespace attn
