#include "src/tokenizer/special_tokens.h"

#include <algorithm>
#include <charconv>
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

// Python's str.rstrip() (strip_end) or str.lstrip() of valid UTF-8 text, as a view of it.
std::string_view strip_python_space(std::string_view text, bool strip_end) {
  const std::vector<char32_t> chars = decode_utf8(text, "text");
  if (strip_end) {
    std::size_t end = text.size();
    for (std::size_t i = chars.size(); i > 0 && is_python_space(chars[i - 1]); --i) {
      end -= utf8_length(chars[i - 1]);
    }
    return text.substr(0, end);
  }
  std::size_t begin = 0;
  for (std::size_t i = 0; i < chars.size() && is_python_space(chars[i]); ++i) {
    begin += utf8_length(chars[i]);
  }
  return text.substr(begin);
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

SpecialTokens::SpecialTokens(const SpecialTokenConfig& config, const VocabularyLookup& vocabulary) {
  // Of two added tokens with the same text the first is kept; it is special if either is.
  auto add_split_token = [&](const AddedToken& token) {
    if (added_ids_.emplace(token.content, token.id).second) split_tokens_.push_back(token);
  };
  auto mark_special = [&](int id, const std::string& content) {
    special_ids_.insert(id);
    special_texts_.insert(content);
  };
  for (const AddedToken& token : config.added_tokens) {
    add_split_token(token);
    if (token.special) mark_special(added_ids_.at(token.content), token.content);
  }
  // A named or additional special token found in the vocabulary becomes an added token too.
  auto find = [&](const AddedToken& token) -> std::optional<int> {
    if (auto added = added_ids_.find(token.content); added != added_ids_.end()) {
      return added->second;
    }
    const std::optional<int> id = vocabulary(token.content);
    if (id) {
      AddedToken found = token;
      found.id = *id;
      add_split_token(found);
    }
    return id;
  };
  for (std::size_t i = 0; i < kNamedTokenCount; ++i) {
    const std::optional<AddedToken>& named = config.named[i];
    const std::string key = kNamedTokenKeys[i];
    if (!named || named->content.empty()) {
      missing_[i] = config.named_where[i] + ": no " + key + " is configured";
      continue;
    }
    ids_[i] = find(*named);
    if (ids_[i]) {
      mark_special(*ids_[i], named->content);
    } else {
      missing_[i] = config.named_where[i] + ": " + key + " '" + brief_text(named->content) +
                    "' is not in the vocabulary";
    }
  }
  const std::optional<AddedToken>& mask = config.named[index(NamedToken::kMask)];
  if (mask && !mask->content.empty() && !ids_[index(NamedToken::kMask)]) {
    throw Error(missing_[index(NamedToken::kMask)] +
                " (transformers would add it as a new token, for which the model has no "
                "embedding)");
  }
  for (const std::string& content : config.additional_special_tokens) {
    if (content.empty()) continue;
    if (const std::optional<int> id = find(AddedToken{content, -1, true})) {
      mark_special(*id, content);
    }
  }
  for (AddedToken& token : split_tokens_) token.special = special_ids_.contains(token.id);
  std::stable_sort(
      split_tokens_.begin(), split_tokens_.end(),
      [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
}

int SpecialTokens::required_id(NamedToken token) const {
  if (!ids_[index(token)]) throw Error(missing_[index(token)]);
  return *ids_[index(token)];
}

std::optional<int> SpecialTokens::added_token_id(const std::string& content) const {
  const auto found = added_ids_.find(content);
  if (found == added_ids_.end()) return std::nullopt;
  return found->second;
}

std::vector<TextSegment> split_added_tokens(std::string_view text,
                                            std::span<const AddedToken> tokens) {
  std::vector<TextSegment> segments;
  // next_match[i]: where tokens[i] next occurs at or after the current position (npos: never),
  // searched again only once the position passes it.
  std::vector<std::size_t> next_match(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) next_match[i] = text.find(tokens[i].content);
  std::size_t position = 0;
  while (true) {
    std::size_t match_begin = std::string_view::npos;
    const AddedToken* match = nullptr;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (next_match[i] < position) next_match[i] = text.find(tokens[i].content, position);
      if (next_match[i] < match_begin) {
        match_begin = next_match[i];
        match = &tokens[i];
      }
    }
    segments.push_back({text.substr(position, match_begin - position), nullptr});
    if (!match) break;
    segments.push_back({text.substr(match_begin, match->content.size()), match});
    position = match_begin + match->content.size();
  }
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const AddedToken* token = segments[i].token;
    if (!token) continue;
    if (token->rstrip && i + 1 < segments.size()) {
      segments[i + 1].text = strip_python_space(segments[i + 1].text, false);
    }
    if (token->lstrip && i > 0)
      segments[i - 1].text = strip_python_space(segments[i - 1].text, true);
  }
  return segments;
}

std::string decode_token_runs(
    const Tokenizer& tokenizer, std::span<const int> ids, bool skip_special_tokens,
    const std::unordered_set<std::string>& own_texts,
    const std::function<std::string(const std::vector<std::string>&)>& tokens_to_string,
    DecodeJoining joining) {
  std::vector<std::string> sub_texts;
  std::vector<std::string> run;
  for (int id : ids) {
    std::string token = tokenizer.token_string(id);  // refuses an id outside the vocabulary
    if (skip_special_tokens && tokenizer.is_special(id)) continue;
    if (!own_texts.contains(token)) {
      run.push_back(token);
      continue;
    }
    if (!run.empty()) {
      std::string text = tokens_to_string(run);
      if (!text.empty()) sub_texts.push_back(std::move(text));
      run.clear();
    }
    sub_texts.push_back(token);
  }
  if (!run.empty()) sub_texts.push_back(tokens_to_string(run));
  std::string text;
  for (std::size_t i = 0; i < sub_texts.size(); ++i) {
    if (i > 0 && joining.spaces_between_special_tokens) text += ' ';
    text += sub_texts[i];
  }
  // A piece whose text is not UTF-8 (a broken model, or a byte piece without the rest of its
  // character) shows as U+FFFD, as Python's decode with errors="replace" does; the text is then
  // what streaming the same ids shows.
  text = replace_invalid_utf8(text);
  return joining.clean_up_tokenization_spaces ? clean_up_tokenization(std::move(text)) : text;
}

}  // namespace attn
