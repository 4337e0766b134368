#include "src/tokenizer/tokenizer_json.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/base/unicode.h"
#include "src/io/json_util.h"
#include "src/tokenizer/pipeline/added_vocabulary.h"
#include "src/tokenizer/pipeline/alignment.h"
#include "src/tokenizer/pipeline/config_node.h"
#include "src/tokenizer/pipeline/decoders.h"
#include "src/tokenizer/pipeline/models.h"
#include "src/tokenizer/pipeline/normalizers.h"
#include "src/tokenizer/pipeline/post_processors.h"
#include "src/tokenizer/pipeline/pre_tokenizers.h"
#include "src/tokenizer/special_tokens.h"
#include "src/tokenizer/tokenizer_files.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using pipeline::ConfigNode;

// What Python transformers' fast tokenizer class adds to the file's pipeline, from
// tokenizer_config.json (special_tokens_map.json for the named tokens it does not give).
struct TransformersSettings {
  std::string config_file;                                         // for errors
  std::optional<std::string> class_name;                           // without "Fast"
  std::array<std::optional<std::string>, kNamedTokenCount> named;  // bos, eos, unk, ... texts
  // Whether each named token takes the whitespace before it: its object's "lstrip" in the files,
  // else what the class gives a token passed as a string (RobertaTokenizerFast's mask token).
  std::array<bool, kNamedTokenCount> named_lstrip{};
  std::vector<std::string> additional_special_tokens;
  // added_tokens.json, for a folder whose tokenizer_config.json has no added_tokens_decoder
  // (the older format) and has one; else empty.
  std::string added_tokens_file;
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  bool clean_up_tokenization_spaces = true;
  nlohmann::json config;  // tokenizer_config.json ({} when absent)
};

std::optional<bool> optional_flag(const json& config, const char* key, const std::string& file) {
  if (!config.contains(key) || config[key].is_null()) return std::nullopt;
  return config_flag(config, key, false, file);
}

TransformersSettings read_transformers_settings(const TokenizerFiles& files,
                                                std::string_view default_class = {}) {
  const json& config = files.config;
  TransformersSettings settings;
  settings.config_file = files.config_file;
  settings.class_name = files.class_name;
  if (!settings.class_name && !default_class.empty()) settings.class_name = default_class;
  // special_tokens_map.json (read only for folders saved before tokenizer_config.json had
  // added_tokens_decoder) wins over the config; a token neither file names is the class's
  // default (an explicit null: none).
  const NamedTokenDefaults defaults =
      settings.class_name ? class_named_token_defaults(*settings.class_name) : NamedTokenDefaults{};
  for (std::size_t i = 0; i < kNamedTokenCount; ++i) {
    const char* key = kNamedTokenKeys[i];
    const auto by_default = defaults.find(static_cast<NamedToken>(i));
    const bool default_lstrip = by_default != defaults.end() && by_default->second.lstrip;
    const auto read = [&](const json& value, const std::string& file) {
      const std::string where = file + ": " + key;
      settings.named[i] = named_token_content(value, where);
      settings.named_lstrip[i] =
          value.is_object() ? config_flag(value, "lstrip", false, where) : default_lstrip;
    };
    if (files.special_tokens_map.contains(key)) {
      read(files.special_tokens_map[key], files.map_file);
    } else if (config.contains(key)) {
      read(config[key], files.config_file);
    } else if (by_default != defaults.end()) {
      settings.named[i] = by_default->second.content;
      settings.named_lstrip[i] = default_lstrip;
    }
  }
  const bool map_has_additional = files.special_tokens_map.contains("additional_special_tokens");
  const json& additional = map_has_additional
                               ? files.special_tokens_map["additional_special_tokens"]
                               : config.value("additional_special_tokens", json());
  const std::string additional_where =
      (map_has_additional ? files.map_file : files.config_file) + ": additional_special_tokens";
  if (!additional.is_null() && !additional.is_array()) {
    throw Error(additional_where + ": expected a list");
  }
  for (const json& token : additional) {
    if (auto content = named_token_content(token, additional_where)) {
      settings.additional_special_tokens.push_back(std::move(*content));
    }
  }
  const fs::path added_tokens_path = files.dir / "added_tokens.json";
  if (!config.contains("added_tokens_decoder") && entry_exists(added_tokens_path)) {
    settings.added_tokens_file = added_tokens_path.string();
  }
  settings.add_bos_token = optional_flag(config, "add_bos_token", settings.config_file);
  settings.add_eos_token = optional_flag(config, "add_eos_token", settings.config_file);
  // transformers 4.40's default, but LlamaTokenizer's and GemmaTokenizer's is false.
  const bool cleans_up_by_default = settings.class_name != "LlamaTokenizer" &&
                                    settings.class_name != "CodeLlamaTokenizer" &&
                                    settings.class_name != "GemmaTokenizer";
  settings.clean_up_tokenization_spaces = config_flag(config, "clean_up_tokenization_spaces",
                                                      cleans_up_by_default, settings.config_file);
  settings.config = config;
  return settings;
}

// What PreTrainedTokenizerFast.__init__ adds to the file's added tokens: each entry of
// tokenizer_config.json's added_tokens_decoder (the older added_tokens.json) whose id the file's
// added_tokens do not have, in
// the order of the ids, then each named special token the added tokens do not hold, as
// add_tokens adds them (a token already added by its text stays as the file has it). Special
// when the entry says so or the token is one of the named or additional special tokens; the id
// is the library's to give: the model's id of the same text, else the next one.
void add_config_tokens(json& file_json, const TransformersSettings& settings) {
  if (!file_json.contains("added_tokens")) file_json["added_tokens"] = json::array();
  json& added = file_json["added_tokens"];
  if (!added.is_array()) return;  // the loader names what is wrong with it
  std::set<std::int64_t> file_ids;
  std::set<std::string, std::less<>> contents;
  for (const json& entry : added) {
    if (!entry.is_object()) continue;
    if (entry.contains("id") && entry["id"].is_number_integer())
      file_ids.insert(entry["id"].get<std::int64_t>());
    if (entry.contains("content") && entry["content"].is_string())
      contents.insert(entry["content"].get<std::string>());
  }
  std::set<std::string, std::less<>> special(settings.additional_special_tokens.begin(),
                                             settings.additional_special_tokens.end());
  for (const auto& named : settings.named) {
    if (named) special.insert(*named);
  }
  const std::vector<AddedToken> declared =
      settings.added_tokens_file.empty()
          ? read_added_tokens_decoder(settings.config, settings.config_file)
          : read_added_tokens_json(settings.added_tokens_file, [&](const std::string& content) {
              return special.contains(content);
            });
  const auto add = [&](const AddedToken& token) {
    if (contents.contains(token.content)) return;
    const bool is_special = token.special || special.contains(token.content);
    added.push_back({{"id", 0},
                     {"content", token.content},
                     {"single_word", token.single_word},
                     {"lstrip", token.lstrip},
                     {"rstrip", token.rstrip},
                     {"normalized", token.normalized.value_or(!is_special)},
                     {"special", is_special}});
    contents.insert(token.content);
  };
  for (const AddedToken& token : declared) {
    if (!file_ids.contains(token.id)) add(token);
  }
  for (std::size_t i = 0; i < kNamedTokenCount; ++i) {
    if (settings.named[i]) {
      add(AddedToken{
          .content = *settings.named[i], .special = true, .lstrip = settings.named_lstrip[i]});
    }
  }
}

// What a fast class's __init__ changes in the file's components when its own arguments (from
// tokenizer_config.json, else their defaults) disagree with them: BertTokenizerFast (and
// DistilBERT's, MPNet's) rebuild a BertNormalizer with do_lower_case (default true),
// strip_accents (default none) and tokenize_chinese_chars (default true); GPT2TokenizerFast and
// RobertaTokenizerFast rebuild the pre-tokenizer with add_prefix_space (default false).
void apply_class_arguments(json& file_json, const TransformersSettings& settings) {
  const std::string class_name = settings.class_name.value_or("");
  const json& config = settings.config;
  const auto argument = [&](const char* key, const json& fallback) {
    if (!config.contains(key)) return fallback;
    const json& value = config[key];
    if (!value.is_boolean() && !value.is_null()) {
      throw Error(settings.config_file + ": '" + key + "' must be true, false or null");
    }
    return value;
  };
  if (class_name == "BertTokenizer" || class_name == "DistilBertTokenizer" ||
      class_name == "MPNetTokenizer") {
    json& normalizer = file_json["normalizer"];
    if (!normalizer.is_object()) return;
    const std::pair<const char*, json> fields[] = {
        {"lowercase", argument("do_lower_case", true)},
        {"strip_accents", argument("strip_accents", nullptr)},
        {"handle_chinese_chars", argument("tokenize_chinese_chars", true)}};
    bool differs = false;
    for (const auto& [field, value] : fields) {
      differs = differs || normalizer.value(field, value) != value;
    }
    if (differs) {
      for (const auto& [field, value] : fields) normalizer[field] = value;
    }
  }
  if (class_name == "GPT2Tokenizer" || class_name == "RobertaTokenizer") {
    json& pre_tokenizer = file_json["pre_tokenizer"];
    const json add_prefix_space = argument("add_prefix_space", false);
    if (pre_tokenizer.is_object() && pre_tokenizer.contains("add_prefix_space")) {
      pre_tokenizer["add_prefix_space"] = add_prefix_space;
    }
  }
}

// Whether `byte` continues a UTF-8 character (10xxxxxx) rather than starting one.
bool is_continuation_byte(char byte) { return (static_cast<unsigned char>(byte) & 0xC0) == 0x80; }

// Converts byte offsets into a text to code point offsets as the library's
// BytesToCharOffsetConverter does: a start or end inside a character counts as that character,
// an end at the text's end as one past its last character; a start at the end is left in bytes.
class ByteToCharOffsets {
 public:
  // `text` is valid UTF-8.
  explicit ByteToCharOffsets(std::string_view text) : size_(text.size()) {
    // In ASCII text, the common case, a byte is a character: no table.
    if (pipeline::is_ascii(text)) return;
    char_of_byte_.resize(text.size());
    // A byte belongs to the character of the last lead byte (any but 10xxxxxx) up to it.
    int index = -1;
    for (std::size_t pos = 0; pos < text.size(); ++pos) {
      index += !is_continuation_byte(text[pos]);
      char_of_byte_[pos] = index;
    }
  }

  CharSpan convert(pipeline::ByteSpan span) const {
    if (char_of_byte_.empty()) {
      return {static_cast<int>(span.start), static_cast<int>(span.end)};
    }
    const std::size_t size = size_;
    if (span.start >= size) return {static_cast<int>(span.start), static_cast<int>(span.end)};
    const int start = char_of_byte_[span.start];
    if (span.end < size) return {start, char_of_byte_[span.end]};
    return {start, span.end > 0 ? char_of_byte_[span.end - 1] + 1 : start + 1};
  }

 private:
  std::size_t size_;               // of the text, in bytes
  std::vector<int> char_of_byte_;  // byte -> index of the character it belongs to; empty: ASCII
};

// Where each byte of `text` comes from before any normalizer: the character it belongs to,
// [start, end) in bytes of the whole input, of which `text` begins at byte `shift`.
// `text` is valid UTF-8.
void character_origin(std::string_view text, std::size_t shift,
                      std::vector<pipeline::ByteSpan>& origin) {
  origin.resize(text.size());
  if (pipeline::is_ascii(text)) {
    for (std::size_t pos = 0; pos < text.size(); ++pos) {
      origin[pos] = {static_cast<std::uint32_t>(shift + pos),
                     static_cast<std::uint32_t>(shift + pos + 1)};
    }
    return;
  }
  // Each byte's character starts at the last lead byte (any but 10xxxxxx) up to it and ends at
  // the first lead byte after it: one pass forward for the starts, one backward for the ends.
  auto start = static_cast<std::uint32_t>(shift);
  for (std::size_t pos = 0; pos < text.size(); ++pos) {
    if (!is_continuation_byte(text[pos])) start = static_cast<std::uint32_t>(shift + pos);
    origin[pos].start = start;
  }
  auto end = static_cast<std::uint32_t>(shift + text.size());
  for (std::size_t pos = text.size(); pos-- > 0;) {
    origin[pos].end = end;
    if (!is_continuation_byte(text[pos])) end = static_cast<std::uint32_t>(shift + pos);
  }
}

// The span of the original input that normalized bytes [start, end) come from, as the
// library's convert_offsets gives it: from the first byte's origin to the last byte's. An empty
// range stays where it is, relative to the piece's start.
pipeline::ByteSpan original_span(std::span<const pipeline::ByteSpan> origin, std::size_t start,
                                 std::size_t end) {
  const std::uint32_t shift = origin.empty() ? 0 : origin.front().start;
  if (start >= end || end > origin.size()) {
    return {shift + static_cast<std::uint32_t>(start), shift + static_cast<std::uint32_t>(end)};
  }
  return {origin[start].start, origin[end - 1].end};
}

// MarianTokenizer.language_code_re, ">>.+<<", matched at the start of `text`: where the match
// ends (past the last "<<" of the first line, with at least one character after the ">>"), or 0.
std::size_t leading_language_code(std::string_view text) {
  if (!text.starts_with(">>")) return 0;
  const std::size_t close = text.substr(0, text.find('\n')).rfind("<<");
  return close != std::string_view::npos && close >= 3 ? close + 2 : 0;
}

// Whether a decoder description is of `type` or a Sequence holding one.
bool has_decoder_type(const json& decoder, std::string_view type) {
  if (!decoder.is_object()) return false;
  if (decoder.value("type", "") == type) return true;
  if (decoder.contains("decoders") && decoder["decoders"].is_array()) {
    for (const json& step : decoder["decoders"]) {
      if (has_decoder_type(step, type)) return true;
    }
  }
  return false;
}

class JsonTokenizer final : public Tokenizer, public TokenOffsets {
 public:
  JsonTokenizer(const json& file_json, std::string file, TransformersSettings settings)
      : file_(file), settings_(std::move(settings)) {
    const ConfigNode root(file_json, file);
    if (!file_json.is_object()) root.fail("expected a JSON object");
    if (root.has("normalizer")) normalizer_ = pipeline::make_normalizer(root.at("normalizer"));
    if (root.has("pre_tokenizer")) {
      pre_tokenizer_ = pipeline::make_pre_tokenizer(root.at("pre_tokenizer"));
    }
    model_ = pipeline::make_model(root.at("model"));
    if (root.has("added_tokens")) {
      added_ = pipeline::AddedVocabulary(root.at("added_tokens"), *model_, normalizer_.get());
    }
    if (root.has("post_processor")) {
      post_processor_ = pipeline::make_post_processor(root.at("post_processor"));
    }
    if (root.has("decoder")) {
      decoder_ = pipeline::make_decoder(root.at("decoder"));
      byte_fallback_ = has_decoder_type(file_json["decoder"], "ByteFallback");
    }
    for (std::size_t i = 0; i < kNamedTokenCount; ++i) {
      if (settings_.named[i]) named_ids_[i] = token_to_id(*settings_.named[i]);
    }
    replace_post_processor_of_class();
    splits_language_codes_ = settings_.class_name == "MarianTokenizer";
    // getattr(tokenizer._tokenizer.model, "continuing_subword_prefix", None): WordPiece's ("##"
    // when the file leaves it out), a BPE's when it has one; Unigram and WordLevel have none.
    const json& model = file_json["model"];
    const bool word_piece = model.value("type", "") == "WordPiece";
    const json prefix = model.value("continuing_subword_prefix", word_piece ? json("##") : json());
    word_aware_ = prefix.is_string() && !prefix.get<std::string>().empty();
  }

  Encoding encode(std::string_view text, std::optional<std::string_view> pair) const override {
    Encoding first{encode_sequence(text, "text", nullptr, nullptr), {}};
    first.type_ids.assign(first.ids.size(), 0);
    std::optional<Encoding> second;
    if (pair) {
      second = Encoding{encode_sequence(*pair, "pair", nullptr, nullptr), {}};
      second->type_ids.assign(second->ids.size(), 0);
    }
    if (!post_processor_)
      return pipeline::default_post_process(std::move(first), std::move(second));
    return checked(post_processor_->process(std::move(first), std::move(second), true));
  }

  std::vector<int> encode_plain(std::string_view text) const override {
    Encoding plain{encode_sequence(text, "text", nullptr, nullptr), {}};
    plain.type_ids.assign(plain.ids.size(), 0);
    if (!post_processor_) return plain.ids;
    return checked(post_processor_->process(std::move(plain), std::nullopt, false)).ids;
  }

  std::string decode(std::span<const int> ids, bool skip_special_tokens) const override {
    std::string text = decode_raw(ids, skip_special_tokens);
    if (settings_.clean_up_tokenization_spaces) text = clean_up_tokenization(std::move(text));
    return text;
  }

  std::string decode_continuation(std::span<const int> previous_ids, int id) const override {
    // ByteFallback turns a run of byte tokens ("<0xE2>") into text only as a whole, so the text
    // before a byte token can change when it comes: a byte token adds its raw byte, and the
    // caller holds back incomplete UTF-8 (as for the slow tokenizers).
    if (byte_fallback_) {
      if (const std::optional<char> byte = fallback_byte(id)) return std::string(1, *byte);
    }
    // Every other decoder of the library is local: a token's text depends on its neighbours
    // only (Metaspace and Strip on whether it comes first; ByteLevel on the bytes of the same
    // character). Decoding the last few tokens with and without the new one, from the same
    // first token, gives what the new one adds without decoding the whole text.
    std::vector<int> ids = decode_window(previous_ids);
    std::string before = decode(ids, true);
    ids.push_back(id);
    std::string after = decode(ids, true);
    held_back_replacement_chars(before);
    held_back_replacement_chars(after);
    const auto common = std::mismatch(before.begin(), before.end(), after.begin(), after.end());
    return after.substr(static_cast<std::size_t>(common.second - after.begin()));
  }

  std::string decode_held_back(std::span<const int> ids) const override {
    std::string text = decode(decode_window(ids), true);
    std::string held = text;
    held.erase(0, held.size() - held_back_replacement_chars(text));
    return held;
  }

  std::string token_string(int id) const override { return std::string(token_view(id)); }

  int vocab_size() const override { return std::max(model_->vocab_size(), added_.id_limit()); }

  const TokenOffsets& offsets() const override { return *this; }

  // encode(text) with each token's offsets, as the library's encode_char_offsets gives them.
  Encoding encode_with_offsets(std::string_view text) const override {
    // One buffer per thread, rather than a vector grown anew for every text.
    thread_local std::vector<pipeline::ByteSpan> byte_spans;
    byte_spans.clear();
    const auto trim = post_processor_ ? post_processor_->offset_trim() : std::nullopt;
    std::vector<TokenText> token_texts;
    Encoding encoding{encode_sequence(text, "text", &byte_spans, trim ? &token_texts : nullptr),
                      {}};
    encoding.type_ids.assign(encoding.ids.size(), 0);
    const ByteToCharOffsets converter(text);
    encoding.offsets.reserve(byte_spans.size());
    for (const pipeline::ByteSpan& span : byte_spans) {
      encoding.offsets.push_back(converter.convert(span));
    }
    if (!post_processor_) return encoding;
    if (trim) {
      // The library trims by each token's text in its encoding: the vocabulary's, except where
      // encode_sequence found another.
      std::vector<std::string_view> tokens;
      tokens.reserve(encoding.ids.size());
      for (const int id : encoding.ids) tokens.push_back(token_view(id));
      for (const TokenText& token : token_texts) tokens[token.index] = token.text;
      pipeline::trim_byte_level_offsets(tokens, encoding.offsets, trim->add_prefix_space);
    }
    return checked(post_processor_->process(std::move(encoding), std::nullopt, true));
  }

  // The fast tokenizer's convert_tokens_to_string: the decoder alone, without clean-up.
  std::string tokens_to_string(std::span<const std::string> tokens) const override {
    std::vector<std::string> decoded(tokens.begin(), tokens.end());
    return join_decoded(decoded);
  }

  int unk_id() const override { return named_id(NamedToken::kUnk).value_or(-1); }
  bool word_aware() const override { return word_aware_; }

  std::optional<int> eos_id() const override { return named_id(NamedToken::kEos); }
  std::optional<int> mask_id() const override { return named_id(NamedToken::kMask); }
  bool is_special(int id) const override {
    if (added_.is_special(id)) return true;
    return std::find(named_ids_.begin(), named_ids_.end(), id) != named_ids_.end();
  }

 private:
  // An added token's text, else the model's token; empty for an id with neither.
  std::string_view token_view(int id) const {
    if (const pipeline::AddedTokenEntry* added = added_.token(id)) return added->content;
    const std::string* token = model_->id_to_token(id);
    return token ? std::string_view(*token) : std::string_view();
  }

  std::optional<int> named_id(NamedToken token) const {
    return named_ids_[static_cast<std::size_t>(token)];
  }

  std::optional<int> token_to_id(const std::string& content) const {
    if (const auto id = added_.id_of(content)) return id;
    return model_->token_to_id(content);
  }

  // The ids a post-processor's template names are the file's word: one past the vocabulary
  // would feed the model an embedding row that does not exist.
  Encoding checked(Encoding encoding) const {
    for (const int id : encoding.ids) {
      if (id < 0 || id >= vocab_size()) {
        throw Error(file_ + ": post_processor adds id " + std::to_string(id) +
                    ", which is not in the vocabulary (" + std::to_string(vocab_size()) + " ids)");
      }
    }
    return encoding;
  }

  // The last few of `ids`, from which decode_continuation decodes: eight, and more when they
  // would start inside a run of byte tokens, which ByteFallback decodes only as a whole.
  std::vector<int> decode_window(std::span<const int> ids) const {
    constexpr std::size_t kWindow = 8;
    std::size_t start = ids.size() - std::min(ids.size(), kWindow);
    while (byte_fallback_ && start > 0 && fallback_byte(ids[start])) --start;
    return {ids.begin() + std::ptrdiff_t(start), ids.end()};
  }

  // The byte a byte token ("<0xE2>") stands for, as ByteFallback reads it; nullopt for others.
  std::optional<char> fallback_byte(int id) const {
    if (added_.token(id)) return std::nullopt;
    const std::string* token = model_->id_to_token(id);
    if (!token || token->size() != 6 || !token->starts_with("<0x") || !token->ends_with('>')) {
      return std::nullopt;
    }
    unsigned value = 0;
    const char* digits = token->data() + 3;
    const auto [end, error] = std::from_chars(digits, digits + 2, value, 16);
    if (error != std::errc() || end != digits + 2) return std::nullopt;
    return static_cast<char>(value);
  }

  // A character still missing bytes decodes as U+FFFD: one for ByteLevel's lossy conversion, one
  // per byte token for ByteFallback, so at most three (a character has at most four bytes). Up to
  // three trailing U+FFFD are held back until the next token shows whether they complete a
  // character; a run of invalid bytes is shown once it is no longer at the end. Returns the
  // bytes taken off.
  static std::size_t held_back_replacement_chars(std::string& text) {
    constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
    constexpr int kMaxIncompleteBytes = 3;
    std::size_t removed = 0;
    for (int i = 0; i < kMaxIncompleteBytes && text.ends_with(kReplacement); ++i) {
      text.resize(text.size() - kReplacement.size());
      removed += kReplacement.size();
    }
    return removed;
  }

  // LlamaTokenizerFast and GemmaTokenizerFast replace the file's post-processor in their
  // __init__ (update_post_processor): BOS before each sequence when add_bos_token (default
  // true), EOS after it when add_eos_token (default false); the pair's tokens have type 1.
  // DeepSeek-V3's file adds no BOS, while transformers, reading its tokenizer_config.json,
  // does.
  void replace_post_processor_of_class() {
    if (settings_.class_name != "LlamaTokenizer" && settings_.class_name != "CodeLlamaTokenizer" &&
        settings_.class_name != "GemmaTokenizer") {
      return;
    }
    const bool add_bos = settings_.add_bos_token.value_or(true);
    const bool add_eos = settings_.add_eos_token.value_or(false);
    const auto& bos = settings_.named[static_cast<std::size_t>(NamedToken::kBos)];
    const auto& eos = settings_.named[static_cast<std::size_t>(NamedToken::kEos)];
    json special_tokens = json::object();
    const auto special = [&](const std::optional<std::string>& content, NamedToken named,
                             const char* key, int type_id) {
      if (!content) {
        throw Error(settings_.config_file + ": " + key + " is true but " +
                    kNamedTokenKeys[static_cast<std::size_t>(named)] + " is not set");
      }
      const std::optional<int> id = named_id(named);
      if (!id) {
        throw Error(settings_.config_file + ": " +
                    kNamedTokenKeys[static_cast<std::size_t>(named)] + " " + brief_text(*content) +
                    " is not in the vocabulary");
      }
      special_tokens[*content] = {{"id", *content}, {"ids", {*id}}, {"tokens", {*content}}};
      return json{{"SpecialToken", {{"id", *content}, {"type_id", type_id}}}};
    };
    const auto sequence = [](const char* name, int type_id) {
      return json{{"Sequence", {{"id", name}, {"type_id", type_id}}}};
    };
    json single = json::array();
    if (add_bos) single.push_back(special(bos, NamedToken::kBos, "add_bos_token", 0));
    single.push_back(sequence("A", 0));
    if (add_eos) single.push_back(special(eos, NamedToken::kEos, "add_eos_token", 0));
    json pair = single;
    if (add_bos) pair.push_back(special(bos, NamedToken::kBos, "add_bos_token", 1));
    pair.push_back(sequence("B", 1));
    if (add_eos) pair.push_back(special(eos, NamedToken::kEos, "add_eos_token", 1));
    const json settings = {{"type", "TemplateProcessing"},
                           {"single", single},
                           {"pair", pair},
                           {"special_tokens", special_tokens}};
    post_processor_ = pipeline::make_post_processor(ConfigNode(
        settings, settings_.config_file, *settings_.class_name + "Fast's post-processor"));
  }

  // A token whose text in the library's encoding is not its vocabulary entry: the token at
  // `index` of a sequence.
  struct TokenText {
    std::size_t index;
    std::string text;
  };

  // One sequence without special tokens: added tokens cut out of the raw text, each stretch
  // between them normalized, normalized added tokens cut out of that, pre-tokenized, and
  // tokenized by the model. When `offsets` is not null it receives each id's [start, end) in
  // bytes of `text`: the origin of the first and the last byte the token came from; and when
  // `texts` is not null too, the tokens whose text in the library's encoding is what they
  // matched rather than their vocabulary entry: every added token (with the spaces its lstrip
  // and rstrip took) and the model's id_named_by_text.
  // `what` names the text in the error for bytes that are not UTF-8.
  std::vector<int> encode_sequence(std::string_view text, std::string_view what,
                                   std::vector<pipeline::ByteSpan>* offsets,
                                   std::vector<TokenText>* texts) const {
    if (!is_valid_utf8(text)) decode_utf8(text, what);  // throws, naming the first bad byte
    std::vector<int> ids;
    std::vector<pipeline::Piece> pieces;
    std::vector<pipeline::Piece> next;
    std::vector<pipeline::ByteSpan> spans;  // the model's, in bytes of one piece
    pipeline::Piece normalized;
    std::vector<pipeline::ByteSpan> normalized_origin;  // with offsets: one per normalized byte
    if (offsets) pipeline::OriginArena::reset();
    const int named_by_text = texts ? model_->id_named_by_text().value_or(-1) : -1;
    for (const pipeline::TextSplit& split : added_.split_raw(text)) {
      const auto split_start = static_cast<std::size_t>(split.text.data() - text.data());
      if (split.added_token_id >= 0) {
        ids.push_back(split.added_token_id);
        if (offsets) {
          offsets->push_back({static_cast<std::uint32_t>(split_start),
                              static_cast<std::uint32_t>(split_start + split.text.size())});
          if (texts) texts->push_back({ids.size() - 1, std::string(split.text)});
        }
        continue;
      }
      std::string_view stretch = split.text;
      std::size_t stretch_start = split_start;
      if (const std::size_t code_end =
              splits_language_codes_ ? leading_language_code(stretch) : 0) {
        // MarianTokenizer.remove_language_code: the code at the start of a stretch of text is a
        // token of its own (the converted normalizer takes every code out of the text).
        ids.push_back(token_to_id(std::string(stretch.substr(0, code_end))).value_or(unk_id()));
        if (offsets) {
          offsets->push_back({static_cast<std::uint32_t>(stretch_start),
                              static_cast<std::uint32_t>(stretch_start + code_end)});
        }
        stretch.remove_prefix(code_end);
        stretch_start += code_end;
      }
      if (stretch.empty()) continue;
      normalized.text.assign(stretch);
      normalized.at_input_start = stretch_start == 0;
      if (offsets) {
        character_origin(stretch, stretch_start, normalized_origin);
        if (normalizer_) {
          normalizer_->normalize_aligned(normalized.text, normalized_origin,
                                         static_cast<std::uint32_t>(stretch_start));
        }
        normalized.origin = normalized_origin;
      } else if (normalizer_) {
        normalizer_->normalize(normalized.text);
      }
      for (const pipeline::TextSplit& part : added_.split_normalized(normalized.text)) {
        const auto part_start = static_cast<std::size_t>(part.text.data() - normalized.text.data());
        const std::size_t part_end = part_start + part.text.size();
        if (part.added_token_id >= 0) {
          ids.push_back(part.added_token_id);
          if (offsets) offsets->push_back(original_span(normalized.origin, part_start, part_end));
          if (offsets && texts) texts->push_back({ids.size() - 1, std::string(part.text)});
          continue;
        }
        if (part.text.empty()) continue;
        pieces.clear();
        pieces.push_back(normalized.slice(part_start, part_end));
        if (pre_tokenizer_) {
          next.clear();
          for (const pipeline::Piece& piece : pieces) pre_tokenizer_->pre_tokenize(piece, next);
          std::swap(pieces, next);
        }
        for (const pipeline::Piece& piece : pieces) {
          if (piece.text.empty()) continue;
          if (!offsets) {
            model_->tokenize(piece.text, ids, nullptr);
            continue;
          }
          spans.clear();
          const std::size_t first_id = ids.size();
          model_->tokenize(piece.text, ids, &spans);
          for (std::size_t i = 0; i < spans.size(); ++i) {
            const pipeline::ByteSpan span = spans[i];
            offsets->push_back(original_span(piece.origin, span.start, span.end));
            if (texts && ids[first_id + i] == named_by_text) {
              texts->push_back(
                  {first_id + i, piece.text.substr(span.start, span.end - span.start)});
            }
          }
        }
      }
    }
    return ids;
  }

  // The library's decode: each id's token (an added token's text first; an id with no token,
  // such as the padding rows of Qwen's embeddings, gives nothing), special tokens dropped when
  // asked, then the decoder (without one: the tokens joined by spaces).
  std::string decode_raw(std::span<const int> ids, bool skip_special_tokens) const {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (const int id : ids) {
      if (const pipeline::AddedTokenEntry* added = added_.token(id)) {
        if (!(skip_special_tokens && added->special)) tokens.push_back(added->content);
        continue;
      }
      if (const std::string* token = model_->id_to_token(id)) tokens.push_back(*token);
    }
    return join_decoded(tokens);
  }

  // The decoder's text for `tokens` (without one: the tokens joined by spaces).
  std::string join_decoded(std::vector<std::string>& tokens) const {
    std::string text;
    if (!decoder_) {
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (i > 0) text += ' ';
        text += tokens[i];
      }
      return text;
    }
    decoder_->decode_chain(tokens);
    for (const std::string& token : tokens) text += token;
    return text;
  }

  std::string file_;  // tokenizer.json, for errors
  TransformersSettings settings_;
  std::unique_ptr<pipeline::Normalizer> normalizer_;
  std::unique_ptr<pipeline::PreTokenizer> pre_tokenizer_;
  std::unique_ptr<pipeline::Model> model_;
  pipeline::AddedVocabulary added_;
  std::unique_ptr<pipeline::PostProcessor> post_processor_;
  std::unique_ptr<pipeline::Decoder> decoder_;
  bool byte_fallback_ = false;          // the decoder has a ByteFallback step
  bool splits_language_codes_ = false;  // MarianTokenizer's ">>fra<<" codes
  bool word_aware_ = false;             // the model has a continuing-subword prefix
  std::array<std::optional<int>, kNamedTokenCount> named_ids_;
};

// The tokenizer of a tokenizer.json description (`file` names it in errors) with what the
// transformers class changes in it.
std::unique_ptr<Tokenizer> with_transformers_settings(json file_json, const std::string& file,
                                                      TransformersSettings settings) {
  if (file_json.is_object()) {
    apply_class_arguments(file_json, settings);
    add_config_tokens(file_json, settings);
  }
  return std::make_unique<JsonTokenizer>(file_json, file, std::move(settings));
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer_json(const fs::path& model_dir) {
  const fs::path path = model_dir / "tokenizer.json";
  const std::string file = path.string();
  const std::string text = read_model_file(path, kMaxTokenizerJsonBytes);
  check_json_depth(text, file);
  json file_json = parse_json(text, file);
  return with_transformers_settings(std::move(file_json), file,
                                    read_transformers_settings(read_tokenizer_files(model_dir)));
}

std::unique_ptr<Tokenizer> load_converted_tokenizer(const TokenizerFiles& files,
                                                    const fs::path& main_file,
                                                    std::string_view default_class,
                                                    const SlowFilesConverter& convert) {
  TransformersSettings settings = read_transformers_settings(files, default_class);
  json file_json = convert(settings.named);
  return with_transformers_settings(std::move(file_json), main_file.string(), std::move(settings));
}

}  // namespace attn
