#include "src/tokenizer/special_tokens.h"

#include <algorithm>
#include <charconv>
#include <unordered_set>
#include <utility>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/base/unicode.h"
#include "src/io/json_util.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool token_flag(const json& token, const char* key, const std::string& where) {
  if (!token.contains(key)) return false;
  if (!token[key].is_boolean()) throw Error(where + ": '" + key + "' must be true or false");
  return token[key].get<bool>();
}

// The named tokens and additional_special_tokens of tokenizer_config.json or
// special_tokens_map.json, over what `config` holds so far.
void read_named_tokens(const json& file_json, const std::string& file,
                       const NamedTokenDefaults& defaults, SpecialTokenConfig& config) {
  for (std::size_t i = 0; i < kNamedTokenCount; ++i) {
    const char* key = kNamedTokenKeys[i];
    if (!file_json.contains(key)) continue;
    const json& value = file_json[key];
    const std::string where = file + ": " + key;
    const std::optional<std::string> content = named_token_content(value, where);
    config.named_where[i] = file;
    if (!content) {
      config.named[i].reset();
      continue;
    }
    // A plain string is wrapped by the class's constructor, with the class's flags.
    const auto by_default = defaults.find(static_cast<NamedToken>(i));
    AddedToken token = by_default == defaults.end() ? AddedToken{} : by_default->second;
    token.content = *content;
    token.id = -1;
    token.special = true;
    if (value.is_object()) {
      token.lstrip = token_flag(value, "lstrip", where);
      token.rstrip = token_flag(value, "rstrip", where);
    }
    config.named[i] = std::move(token);
  }
  if (file_json.contains("additional_special_tokens")) {
    const json& tokens = file_json["additional_special_tokens"];
    if (tokens.is_null()) return;
    if (!tokens.is_array()) throw Error(file + ": 'additional_special_tokens' must be a list");
    config.additional_special_tokens.clear();
    for (const json& token : tokens) {
      std::optional<std::string> content =
          named_token_content(token, file + ": additional_special_tokens");
      if (content) config.additional_special_tokens.push_back(std::move(*content));
    }
  }
}

}  // namespace

std::vector<AddedToken> read_added_tokens_decoder(const json& config, const std::string& file) {
  std::vector<AddedToken> tokens;
  if (!config.contains("added_tokens_decoder")) return tokens;
  const json& decoder = config["added_tokens_decoder"];
  if (!decoder.is_object()) throw Error(file + ": added_tokens_decoder is not an object");
  for (const auto& [id_text, token] : decoder.items()) {
    const std::string where = file + ": added_tokens_decoder[\"" + brief_text(id_text) + "\"]";
    if (!token.is_object() || !token.contains("content") || !token["content"].is_string()) {
      throw Error(where + ": expected an object with a string \"content\"");
    }
    std::int64_t id = -1;
    const auto [end, status] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
    if (status != std::errc() || end != id_text.data() + id_text.size()) {
      throw Error(where + ": the key is not a token id");
    }
    if (id < 0 || id > kMaxTokenId) {
      throw Error(where + ": id " + std::to_string(id) + " is out of range");
    }
    AddedToken added{token["content"].get<std::string>(), static_cast<int>(id),
                     token_flag(token, "special", where), token_flag(token, "lstrip", where),
                     token_flag(token, "rstrip", where)};
    if (token.contains("normalized")) added.normalized = token_flag(token, "normalized", where);
    added.single_word = token_flag(token, "single_word", where);
    if (added.content.empty()) throw Error(where + ": the token is empty");
    tokens.push_back(std::move(added));
  }
  // The object's keys come sorted as text ("10" before "9").
  std::sort(tokens.begin(), tokens.end(),
            [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  return tokens;
}

AddedToken special_token(std::string content, bool lstrip) {
  return {std::move(content), -1, true, lstrip, false};
}

NamedTokenDefaults class_named_token_defaults(std::string_view class_name) {
  using enum NamedToken;
  if (class_name == "GPT2Tokenizer") {
    return {{kBos, special_token("<|endoftext|>")},
            {kEos, special_token("<|endoftext|>")},
            {kUnk, special_token("<|endoftext|>")}};
  }
  if (class_name == "Qwen2Tokenizer") {
    return {{kEos, special_token("<|endoftext|>")},
            {kUnk, special_token("<|endoftext|>")},
            {kPad, special_token("<|endoftext|>")}};
  }
  if (class_name == "RobertaTokenizer" || class_name == "XLMRobertaTokenizer") {
    return {{kBos, special_token("<s>")},
            {kEos, special_token("</s>")},
            {kSep, special_token("</s>")},
            {kCls, special_token("<s>")},
            {kUnk, special_token("<unk>")},
            {kPad, special_token("<pad>")},
            // The mask token takes the space before it, as a word would.
            {kMask, special_token("<mask>", /*lstrip=*/true)}};
  }
  if (class_name == "BertTokenizer" || class_name == "DistilBertTokenizer") {
    return {{kUnk, special_token("[UNK]")},
            {kSep, special_token("[SEP]")},
            {kPad, special_token("[PAD]")},
            {kCls, special_token("[CLS]")},
            {kMask, special_token("[MASK]")}};
  }
  if (class_name == "AlbertTokenizer") {
    return {{kBos, special_token("[CLS]")},
            {kEos, special_token("[SEP]")},
            {kUnk, special_token("<unk>")},
            {kSep, special_token("[SEP]")},
            {kPad, special_token("<pad>")},
            {kCls, special_token("[CLS]")},
            {kMask, special_token("[MASK]", /*lstrip=*/true)}};
  }
  if (class_name == "LlamaTokenizer") {
    return {{kBos, special_token("<s>")},
            {kEos, special_token("</s>")},
            {kUnk, special_token("<unk>")}};
  }
  if (class_name == "GemmaTokenizer") {
    return {{kBos, special_token("<bos>")},
            {kEos, special_token("<eos>")},
            {kUnk, special_token("<unk>")},
            {kPad, special_token("<pad>")}};
  }
  if (class_name == "T5Tokenizer" || class_name == "MarianTokenizer") {
    return {{kEos, special_token("</s>")},
            {kUnk, special_token("<unk>")},
            {kPad, special_token("<pad>")}};
  }
  return {};
}

std::vector<AddedToken> read_added_tokens_json(
    const fs::path& path, const std::function<bool(const std::string&)>& is_special) {
  const std::string file = path.string();
  const json tokens = read_json_file(path, kMaxConfigBytes);
  if (!tokens.is_object()) throw Error(file + ": expected an object mapping tokens to ids");
  std::vector<AddedToken> added;
  for (const auto& [content, id] : tokens.items()) {
    const std::string where = file + ": \"" + brief_text(content) + "\"";
    if (content.empty()) throw Error(file + ": an added token is empty");
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() > kMaxTokenId) {
      throw Error(where + ": id " + brief_json(id) + " is not a token id");
    }
    const bool special = is_special(content);
    added.push_back(
        {.content = content, .id = id.get<int>(), .special = special, .normalized = !special});
  }
  std::sort(added.begin(), added.end(),
            [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  return added;
}

SpecialTokenConfig read_special_token_config(const TokenizerFiles& files,
                                             const NamedTokenDefaults& defaults,
                                             std::string_view class_name) {
  const json& tokenizer_config = files.config;
  SpecialTokenConfig config;
  for (const auto& [token, by_default] : defaults) {
    config.named[static_cast<std::size_t>(token)] = by_default;
  }
  config.named_where.fill(files.dir.string() + " (" + std::string(class_name) + "'s default)");
  config.added_tokens = read_added_tokens_decoder(tokenizer_config, files.config_file);
  read_named_tokens(tokenizer_config, files.config_file, defaults, config);
  // special_tokens_map.json, read only for folders without added_tokens_decoder, wins.
  read_named_tokens(files.special_tokens_map, files.map_file, defaults, config);
  const fs::path added_path = files.dir / "added_tokens.json";
  if (!tokenizer_config.contains("added_tokens_decoder") && entry_exists(added_path)) {
    std::unordered_set<std::string> special(config.additional_special_tokens.begin(),
                                            config.additional_special_tokens.end());
    for (const std::optional<AddedToken>& named : config.named) {
      if (named) special.insert(named->content);
    }
    config.added_tokens = read_added_tokens_json(
        added_path, [&](const std::string& content) { return special.contains(content); });
  }
  return config;
}

}  // namespace attn
