#include "src/tokenizer/wordpiece.h"

#include <utf8proc.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/base/unicode.h"
#include "src/io/json_util.h"
#include "src/tokenizer/pipeline/decoders.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Character classes, exactly as transformers' BertTokenizer defines them (the Unicode data itself
// comes from utf8proc).

// BERT's _is_control: every C* category (incl. unassigned Cn and format Cf such as the zero-width
// joiner), except \t \n \r, which BERT treats as whitespace.
bool is_control(char32_t c) {
  if (c == U'\t' || c == U'\n' || c == U'\r') return false;
  switch (unicode_category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
      return true;
    default:
      return false;
  }
}

// BERT's _is_whitespace: the characters _clean_text turns into a plain space.
bool is_bert_whitespace(char32_t c) {
  return c == U' ' || c == U'\t' || c == U'\n' || c == U'\r' ||
         unicode_category(c) == UTF8PROC_CATEGORY_ZS;
}

// BERT's _is_chinese_char: the CJK Unified Ideographs blocks BERT pads with spaces. Hangul,
// Hiragana and Katakana are deliberately not included (they are written with spaces).
bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_ascii(std::u32string_view text) {
  return std::all_of(text.begin(), text.end(), [](char32_t c) { return c < 0x80; });
}

// Text on its way through the basic tokenizer, with the span of the original text each of its
// characters comes from, as the tokenizers library's NormalizedString aligns them: a character
// that becomes several (NFD, "İ".lower()) gives each of them its span, dropped characters take
// theirs with them. BertTokenizerFast's offsets are made of these spans.
struct AlignedText {
  std::u32string chars;
  std::vector<CharSpan> origins;  // one per character

  void append(char32_t c, CharSpan origin) {
    chars.push_back(c);
    origins.push_back(origin);
  }
  // The original span of characters [begin, end), end > begin.
  CharSpan span(std::size_t begin, std::size_t end) const {
    return {origins[begin].start, origins[end - 1].end};
  }
  AlignedText substr(std::size_t begin, std::size_t count) const {
    const std::size_t end = std::min(chars.size(), begin + count);
    return {chars.substr(begin, end - begin),
            std::vector<CharSpan>(origins.begin() + long(begin), origins.begin() + long(end))};
  }
};

// The ids of a text and the span of the original text each comes from.
struct TokenizedText {
  std::vector<int> ids;
  std::vector<CharSpan> offsets;

  void add(int id, CharSpan offset) {
    ids.push_back(id);
    offsets.push_back(offset);
  }
};

// unicodedata.normalize("NFC") of one word (composition never reaches across whitespace). Each
// composed character spans the starter and marks it came from; compositions of two starters
// (Hangul jamo, some vowel signs) span the whole word.
AlignedText nfc(const AlignedText& word) {
  const std::u32string whole = normalize(word.chars, NormalForm::kNfc);
  if (whole == word.chars) return word;
  AlignedText composed;
  for (std::size_t begin = 0, end = 0; begin < word.chars.size(); begin = end) {
    end = begin + 1;
    while (end < word.chars.size() && combining_class(word.chars[end]) != 0) ++end;
    const std::u32string_view segment(word.chars.data() + begin, end - begin);
    for (char32_t c : normalize(segment, NormalForm::kNfc))
      composed.append(c, word.span(begin, end));
  }
  if (composed.chars == whole) return composed;
  composed = {};
  for (char32_t c : whole) composed.append(c, word.span(0, word.chars.size()));
  return composed;
}

// BasicTokenizer._run_strip_accents: NFD (each character decomposed, then the marks of each run
// put in canonical order), then drop nonspacing marks (Mn).
AlignedText strip_accents(const AlignedText& word) {
  AlignedText decomposed;
  for (std::size_t i = 0; i < word.chars.size(); ++i) {
    for (char32_t c : normalize(std::u32string_view(&word.chars[i], 1), NormalForm::kNfd)) {
      decomposed.append(c, word.origins[i]);
    }
  }
  std::vector<std::size_t> order(decomposed.chars.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto by_class = [&](std::size_t a, std::size_t b) {
    return combining_class(decomposed.chars[a]) < combining_class(decomposed.chars[b]);
  };
  for (std::size_t begin = 0, end = 0; begin < order.size(); begin = end + 1) {
    end = begin;
    while (end < order.size() && combining_class(decomposed.chars[end]) != 0) ++end;
    std::stable_sort(order.begin() + long(begin), order.begin() + long(end), by_class);
  }
  AlignedText stripped;
  for (std::size_t i : order) {
    if (unicode_category(decomposed.chars[i]) != UTF8PROC_CATEGORY_MN) {
      stripped.append(decomposed.chars[i], decomposed.origins[i]);
    }
  }
  return stripped;
}

// Python's str.strip().
std::string strip_python_whitespace(std::string_view text) {
  const std::vector<char32_t> code_points = decode_utf8(text, "decoded text");
  return encode_utf8(python_strip(std::u32string_view(code_points.data(), code_points.size())));
}

// Python's str.replace(): every non-overlapping occurrence, left to right.
std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  for (std::size_t hit = text.find(from); hit != std::string_view::npos;
       hit = text.find(from, pos)) {
    out.append(text, pos, hit - pos);
    out.append(to);
    pos = hit + from.size();
  }
  out.append(text, pos);
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out.append(separator);
    out.append(parts[i]);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Settings from the model folder.

// Lets the token -> id maps be searched with a string_view, so WordPiece's many candidate
// lookups allocate nothing.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const {
    return std::hash<std::string_view>{}(text);
  }
};
using TokenIds = std::unordered_map<std::string, int, StringHash, std::equal_to<>>;

struct ConfigAddedToken {  // an added token as the config files declare it
  std::string content;
  bool special = false;
};

// Names of the special-token attributes transformers reads from tokenizer_config.json and
// special_tokens_map.json, with BertTokenizer's defaults.
constexpr std::pair<std::string_view, std::string_view> kSpecialTokenDefaults[] = {
    {"unk_token", "[UNK]"},
    {"sep_token", "[SEP]"},
    {"pad_token", "[PAD]"},
    {"cls_token", "[CLS]"},
    {"mask_token", "[MASK]"}};

// BertTokenizer's WordpieceTokenizer: longer words are [UNK], and a piece inside a word is looked
// up with this prefix (which convert_tokens_to_string removes with the space before it). The slow
// tokenizer's files cannot change either.
constexpr std::size_t kMaxInputCharsPerWord = 100;
constexpr std::string_view kContinuingSubwordPrefix = "##";
constexpr std::string_view kSpacedContinuingSubwordPrefix = " ##";

// Everything the model folder says about the tokenizer; the defaults are BertTokenizer's.
struct WordPieceSettings {
  fs::path vocab_file;             // named in error messages about the vocabulary
  std::vector<std::string> vocab;  // id -> token
  bool do_lower_case = true;
  std::optional<bool> strip_accents;  // unset: strip exactly when lowercasing
  bool tokenize_chinese_chars = true;
  std::vector<std::string> never_split;
  bool clean_up_tokenization_spaces = true;
  // unk_token, sep_token, ... -> token; an attribute set to null in the config is absent.
  std::map<std::string, std::string, std::less<>> special_tokens{std::begin(kSpecialTokenDefaults),
                                                                 std::end(kSpecialTokenDefaults)};
  std::vector<std::string> additional_special_tokens;
  std::map<int, ConfigAddedToken> added_tokens;  // by id
  // MPNetTokenizer: pairs are cls A sep sep B sep, every type id 0 (BERT's: cls A sep B sep, B's
  // types 1).
  bool mpnet_pairs = false;
};

bool bool_field(const json& value, const fs::path& file, std::string_view field) {
  if (!value.is_boolean()) {
    throw Error(file.string() + ": '" + std::string(field) + "' must be true or false");
  }
  return value.get<bool>();
}

std::string string_field(const json& value, const fs::path& file, std::string_view field) {
  if (!value.is_string()) {
    throw Error(file.string() + ": '" + std::string(field) + "' must be a string");
  }
  return value.get<std::string>();
}

// A token in a config is either a plain string or a serialized AddedToken {"content": ...}.
std::string token_field(const json& value, const fs::path& file, std::string_view field) {
  if (value.is_object() && value.contains("content")) {
    return string_field(value["content"], file, std::string(field) + ".content");
  }
  return string_field(value, file, field);
}

std::vector<std::string> token_list_field(const json& value, const fs::path& file,
                                          std::string_view field) {
  if (!value.is_array()) {
    throw Error(file.string() + ": '" + std::string(field) + "' must be a list");
  }
  std::vector<std::string> tokens;
  for (const json& item : value) tokens.push_back(token_field(item, file, field));
  return tokens;
}

// The special-token attributes shared by tokenizer_config.json and special_tokens_map.json.
void read_special_tokens(const json& config, const fs::path& file, WordPieceSettings& settings) {
  for (const auto& [name, default_token] : kSpecialTokenDefaults) {
    auto it = config.find(name);
    if (it == config.end()) continue;
    if (it->is_null()) {
      settings.special_tokens.erase(std::string(name));
    } else {
      settings.special_tokens[std::string(name)] = token_field(*it, file, name);
    }
  }
  if (auto it = config.find("additional_special_tokens"); it != config.end() && !it->is_null()) {
    settings.additional_special_tokens = token_list_field(*it, file, "additional_special_tokens");
  }
}

// tokenizer_config.json as BertTokenizer.__init__ reads it (fields it does not mention keep their
// defaults).
void read_tokenizer_config(const fs::path& file, WordPieceSettings& settings) {
  const json config = read_json_file(file, kMaxConfigBytes);
  if (!config.is_object()) throw Error(file.string() + ": expected a JSON object");
  if (auto it = config.find("do_basic_tokenize");
      it != config.end() && !bool_field(*it, file, "do_basic_tokenize")) {
    throw Error(file.string() + ": do_basic_tokenize=false is not supported");
  }
  if (auto it = config.find("do_lower_case"); it != config.end()) {
    settings.do_lower_case = bool_field(*it, file, "do_lower_case");
  }
  if (auto it = config.find("strip_accents"); it != config.end()) {
    settings.strip_accents =
        it->is_null() ? std::nullopt : std::optional(bool_field(*it, file, "strip_accents"));
  }
  if (auto it = config.find("tokenize_chinese_chars"); it != config.end()) {
    settings.tokenize_chinese_chars = bool_field(*it, file, "tokenize_chinese_chars");
  }
  if (auto it = config.find("never_split"); it != config.end() && !it->is_null()) {
    settings.never_split = token_list_field(*it, file, "never_split");
  }
  if (auto it = config.find("clean_up_tokenization_spaces"); it != config.end()) {
    settings.clean_up_tokenization_spaces = bool_field(*it, file, "clean_up_tokenization_spaces");
  }
  read_special_tokens(config, file, settings);
  if (auto it = config.find("added_tokens_decoder"); it != config.end()) {
    if (!it->is_object()) throw Error(file.string() + ": 'added_tokens_decoder' must be an object");
    // Ids are below the number of vocabulary entries and added tokens, as in real files; a
    // larger one would be outside the model's embedding.
    const std::size_t id_limit = settings.vocab.size() + settings.added_tokens.size() + it->size();
    for (const auto& [key, token] : it->items()) {
      int id = -1;
      auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (error != std::errc() || end != key.data() + key.size() || id < 0) {
        throw Error(file.string() + ": added_tokens_decoder key '" + brief_text(key) +
                    "' is not a token id");
      }
      const std::string field = "added_tokens_decoder." + brief_text(key);
      if (static_cast<std::size_t>(id) >= id_limit) {
        throw Error(file.string() + ": '" + field + "': id " + std::to_string(id) +
                    " is out of range for " + std::to_string(settings.vocab.size()) +
                    " vocabulary entries and " + std::to_string(id_limit - settings.vocab.size()) +
                    " added tokens");
      }
      if (!token.is_object()) throw Error(file.string() + ": '" + field + "' must be an object");
      ConfigAddedToken added{token_field(token, file, field), false};
      if (auto special = token.find("special"); special != token.end()) {
        added.special = bool_field(*special, file, field + ".special");
      }
      settings.added_tokens[id] = std::move(added);
    }
  }
}

// The optional companions of vocab.txt. special_tokens_map.json wins over
// tokenizer_config.json, as in transformers' from_pretrained.
void read_optional_configs(const fs::path& model_dir, WordPieceSettings& settings) {
  if (entry_exists(model_dir / "tokenizer_config.json")) {
    read_tokenizer_config(model_dir / "tokenizer_config.json", settings);
  }
  if (entry_exists(model_dir / "special_tokens_map.json")) {
    const fs::path file = model_dir / "special_tokens_map.json";
    const json map = read_json_file(file, kMaxConfigBytes);
    if (!map.is_object()) throw Error(file.string() + ": expected a JSON object");
    read_special_tokens(map, file, settings);
  }
}

// vocab.txt as transformers' load_vocab reads it: one token per line (Python's universal newlines:
// \n, \r\n or \r end a line), the line number is the id.
std::vector<std::string> read_vocab_txt(const fs::path& file) {
  const std::string content = read_model_file(file, kMaxTokenizerBytes);
  std::vector<std::string> vocab;
  std::size_t start = 0;
  while (start < content.size()) {
    std::size_t end = content.find_first_of("\r\n", start);
    if (end == std::string::npos) end = content.size();
    vocab.push_back(content.substr(start, end - start));
    if (!is_valid_utf8(vocab.back())) {
      throw Error(file.string() + ": line " + std::to_string(vocab.size()) + " is not valid UTF-8");
    }
    start = end + 1;
    if (end + 1 < content.size() && content[end] == '\r' && content[end + 1] == '\n') ++start;
  }
  return vocab;
}

// ---------------------------------------------------------------------------------------------
// The tokenizer.

class WordPieceTokenizer final : public Tokenizer, public TokenOffsets {
 public:
  explicit WordPieceTokenizer(WordPieceSettings settings);

  Encoding encode(std::string_view text, std::optional<std::string_view> pair) const override;
  std::vector<int> encode_plain(std::string_view text) const override {
    return tokenize(text, "text").ids;
  }
  std::string decode(std::span<const int> ids, bool skip_special_tokens) const override;
  std::string token_string(int id) const override;
  // The vocabulary and the added tokens past its end.
  int vocab_size() const override { return vocab_size_; }
  std::optional<int> eos_id() const override { return std::nullopt; }
  std::optional<int> mask_id() const override { return mask_id_; }
  bool is_special(int id) const override { return special_ids_.contains(id); }
  std::string decode_continuation(std::span<const int> previous_ids, int id) const override;

  const TokenOffsets* offsets() const override { return this; }
  Encoding encode_with_offsets(std::string_view text) const override;
  std::string tokens_to_string(std::span<const std::string> tokens) const override;
  int unk_id() const override { return unk_id_; }

 private:
  // A string that transformers cuts out of the text before any other processing (its
  // tokens_trie): every added token and every special token.
  struct SplitToken {
    std::u32string text;
    int id;
  };

  // HF tokenize() + convert_tokens_to_ids(), without [CLS]/[SEP], with each token's offsets.
  TokenizedText tokenize(std::string_view text, std::string_view what) const;
  const SplitToken* match_split_token(std::u32string_view text, std::size_t pos) const;
  AlignedText lowercase_outside_split_tokens(const AlignedText& text) const;
  void append_basic_tokens(const AlignedText& chunk, TokenizedText& tokens) const;
  void append_word(AlignedText word, TokenizedText& tokens) const;
  void append_word_pieces(const AlignedText& word, TokenizedText& tokens) const;
  // HF convert_tokens_to_ids: added tokens first, then the vocabulary.
  std::optional<int> find_token_id(std::string_view token) const;
  // HF convert_tokens_to_string: WordPiece continuations glued to their word.
  std::string join_word_pieces(const std::vector<std::string>& tokens) const;

  std::vector<std::string> vocab_;
  int vocab_size_;
  // Vocabulary membership is what WordPiece matches against; the value is the id transformers
  // would report, which is the added token's id when an added token has the same text.
  TokenIds vocab_ids_;
  TokenIds added_token_ids_;
  std::unordered_map<int, std::string> added_tokens_by_id_;
  std::size_t longest_token_chars_ = 0;  // no longer candidate can be in the vocabulary

  bool do_lower_case_;
  bool mpnet_pairs_;  // WordPieceSettings::mpnet_pairs
  bool strip_accents_;
  bool tokenize_chinese_chars_;
  bool clean_up_tokenization_spaces_;

  std::vector<SplitToken> split_tokens_;                 // longest first, so the longest match wins
  std::vector<std::u32string> never_split_;              // config never_split
  std::vector<std::u32string> unsplittable_words_;       // never_split + special tokens
  std::unordered_set<std::string> legacy_added_tokens_;  // decoded as separate pieces
  std::unordered_set<int> special_ids_;
  std::string unk_token_;
  int unk_id_;
  int cls_id_;
  int sep_id_;
  int mask_id_;
};

WordPieceTokenizer::WordPieceTokenizer(WordPieceSettings settings)
    : vocab_(std::move(settings.vocab)),
      vocab_size_(static_cast<int>(vocab_.size())),
      do_lower_case_(settings.do_lower_case),
      mpnet_pairs_(settings.mpnet_pairs),
      strip_accents_(settings.strip_accents.value_or(settings.do_lower_case)),
      tokenize_chinese_chars_(settings.tokenize_chinese_chars),
      clean_up_tokenization_spaces_(settings.clean_up_tokenization_spaces) {
  const std::string file = settings.vocab_file.string();
  if (vocab_.empty()) throw Error(file + ": the vocabulary is empty");
  vocab_ids_.reserve(vocab_.size());
  for (std::size_t id = 0; id < vocab_.size(); ++id) {
    auto [it, inserted] = vocab_ids_.emplace(vocab_[id], static_cast<int>(id));
    if (!inserted) {
      throw Error(file + ": duplicate token '" + brief_text(vocab_[id]) + "' on lines " +
                  std::to_string(it->second + 1) + " and " + std::to_string(id + 1));
    }
    longest_token_chars_ = std::max(longest_token_chars_, decode_utf8(vocab_[id], file).size());
  }
  for (const auto& [id, token] : settings.added_tokens) {
    if (static_cast<std::size_t>(id) < vocab_.size() &&
        vocab_[static_cast<std::size_t>(id)] != token.content) {
      throw Error(file + ": id " + std::to_string(id) + " is '" +
                  brief_text(vocab_[static_cast<std::size_t>(id)]) +
                  "' but the added token with that id is '" + brief_text(token.content) + "'");
    }
    vocab_size_ = std::max(vocab_size_, id + 1);
    added_token_ids_[token.content] = id;
    added_tokens_by_id_[id] = token.content;
    if (auto it = vocab_ids_.find(token.content); it != vocab_ids_.end()) it->second = id;
  }

  // Special tokens: transformers' all_special_tokens (named attributes + additional ones).
  auto resolve = [&](std::string_view attribute, const std::string& token) {
    std::optional<int> id = find_token_id(token);
    if (!id) {
      throw Error(file + ": " + std::string(attribute) + " '" + brief_text(token) +
                  "' is not in the vocabulary");
    }
    special_ids_.insert(*id);
    return *id;
  };
  std::unordered_set<std::string> special_tokens;
  auto required = [&](std::string_view attribute) {
    auto it = settings.special_tokens.find(attribute);
    if (it == settings.special_tokens.end()) {
      throw Error(file + ": no " + std::string(attribute) + " is configured");
    }
    return it->second;
  };
  unk_token_ = required("unk_token");
  for (const auto& [attribute, token] : settings.special_tokens) {
    const int id = resolve(attribute, token);
    if (attribute == "unk_token") unk_id_ = id;
    if (attribute == "cls_token") cls_id_ = id;
    if (attribute == "sep_token") sep_id_ = id;
    if (attribute == "mask_token") mask_id_ = id;
    special_tokens.insert(token);
  }
  required("cls_token");
  required("sep_token");
  required("mask_token");
  for (const std::string& token : settings.additional_special_tokens) {
    const int id = resolve("additional_special_tokens entry", token);
    special_tokens.insert(token);
    // transformers decodes additional special tokens beyond the base vocabulary separately.
    if (static_cast<std::size_t>(id) >= vocab_.size()) legacy_added_tokens_.insert(token);
  }

  std::unordered_set<std::string> split_texts = special_tokens;
  for (const auto& [id, token] : settings.added_tokens) {
    split_texts.insert(token.content);
    if (!special_tokens.contains(token.content)) legacy_added_tokens_.insert(token.content);
  }
  for (const std::string& text : split_texts) {
    if (text.empty()) continue;
    const std::vector<char32_t> code_points = decode_utf8(text, file);
    split_tokens_.push_back(
        {std::u32string(code_points.begin(), code_points.end()), *find_token_id(text)});
  }
  std::sort(split_tokens_.begin(), split_tokens_.end(),
            [](const SplitToken& a, const SplitToken& b) { return a.text.size() > b.text.size(); });

  for (const std::string& word : settings.never_split) {
    const std::vector<char32_t> code_points = decode_utf8(word, file);
    never_split_.emplace_back(code_points.begin(), code_points.end());
  }
  unsplittable_words_ = never_split_;
  for (const std::string& token : special_tokens) {
    const std::vector<char32_t> code_points = decode_utf8(token, file);
    unsplittable_words_.emplace_back(code_points.begin(), code_points.end());
  }
}

std::optional<int> WordPieceTokenizer::find_token_id(std::string_view token) const {
  if (auto it = added_token_ids_.find(token); it != added_token_ids_.end()) return it->second;
  if (auto it = vocab_ids_.find(token); it != vocab_ids_.end()) return it->second;
  return std::nullopt;
}

const WordPieceTokenizer::SplitToken* WordPieceTokenizer::match_split_token(
    std::u32string_view text, std::size_t pos) const {
  const std::u32string_view rest = text.substr(pos);
  for (const SplitToken& token : split_tokens_) {
    if (rest.starts_with(token.text)) return &token;
  }
  return nullptr;
}

// transformers (PreTrainedTokenizer.tokenize with do_lower_case) lowercases the raw text before
// anything else, one character at a time and leaving special tokens alone, so "[MASK]" stays a
// special token while "[Mask]" becomes plain text. Lowercasing per character means Greek capital
// sigma always becomes σ, never the word-final ς of Python's whole-string lower().
AlignedText WordPieceTokenizer::lowercase_outside_split_tokens(const AlignedText& text) const {
  AlignedText lowered;
  std::u32string lowered_char;
  std::size_t pos = 0;
  while (pos < text.chars.size()) {
    if (const SplitToken* token = match_split_token(text.chars, pos)) {
      for (std::size_t end = pos + token->text.size(); pos < end; ++pos) {
        lowered.append(text.chars[pos], text.origins[pos]);
      }
    } else {
      lowered_char.clear();
      append_python_lower(lowered_char, text.chars[pos]);
      for (char32_t c : lowered_char) lowered.append(c, text.origins[pos]);
      ++pos;
    }
  }
  return lowered;
}

TokenizedText WordPieceTokenizer::tokenize(std::string_view text, std::string_view what) const {
  const std::vector<char32_t> code_points = decode_utf8(text, what);
  AlignedText chars;
  for (std::size_t i = 0; i < code_points.size(); ++i) {
    chars.append(code_points[i], {int(i), int(i + 1)});
  }
  if (do_lower_case_) chars = lowercase_outside_split_tokens(chars);

  TokenizedText tokens;
  std::size_t chunk_start = 0;
  std::size_t pos = 0;
  while (pos < chars.chars.size()) {
    if (const SplitToken* token = match_split_token(chars.chars, pos)) {
      append_basic_tokens(chars.substr(chunk_start, pos - chunk_start), tokens);
      tokens.add(token->id, chars.span(pos, pos + token->text.size()));
      pos += token->text.size();
      chunk_start = pos;
    } else {
      ++pos;
    }
  }
  append_basic_tokens(chars.substr(chunk_start, chars.chars.size() - chunk_start), tokens);
  return tokens;
}

// BasicTokenizer.tokenize: clean, pad CJK ideographs, split on whitespace, NFC (word by word:
// the same as the whole text at once, as nothing composes across whitespace). (Its lowercasing
// already happened in lowercase_outside_split_tokens; lowering twice changes nothing.)
void WordPieceTokenizer::append_basic_tokens(const AlignedText& chunk,
                                             TokenizedText& tokens) const {
  AlignedText cleaned;
  for (std::size_t i = 0; i < chunk.chars.size(); ++i) {
    const char32_t c = chunk.chars[i];
    const CharSpan origin = chunk.origins[i];
    if (c == 0 || c == 0xFFFD || is_control(c)) continue;
    if (is_bert_whitespace(c)) {
      cleaned.append(U' ', origin);
    } else if (tokenize_chinese_chars_ && is_chinese_char(c)) {
      cleaned.append(U' ', origin);
      cleaned.append(c, origin);
      cleaned.append(U' ', origin);
    } else {
      cleaned.append(c, origin);
    }
  }

  // str.split(): U+2028/U+2029, which _clean_text leaves alone, separate words too.
  const std::u32string_view text = cleaned.chars;
  std::size_t pos = 0;
  while (pos < text.size()) {
    while (pos < text.size() && is_python_space(text[pos])) ++pos;
    std::size_t end = pos;
    while (end < text.size() && !is_python_space(text[end])) ++end;
    if (end > pos) {
      AlignedText word = cleaned.substr(pos, end - pos);
      if (!is_ascii(word.chars)) word = nfc(word);
      append_word(std::move(word), tokens);
    }
    pos = end;
  }
}

// One whitespace-separated word: strip accents, split off punctuation, then WordPiece.
void WordPieceTokenizer::append_word(AlignedText word, TokenizedText& tokens) const {
  if (std::find(unsplittable_words_.begin(), unsplittable_words_.end(), word.chars) !=
      unsplittable_words_.end()) {
    // BertTokenizer keeps never_split words whole; special tokens still go through WordPiece,
    // which finds them in the vocabulary.
    const bool in_never_split =
        std::find(never_split_.begin(), never_split_.end(), word.chars) != never_split_.end();
    if (in_never_split) {
      tokens.add(find_token_id(encode_utf8(word.chars)).value_or(unk_id_),
                 word.span(0, word.chars.size()));
    } else {
      append_word_pieces(word, tokens);
    }
    return;
  }
  if (strip_accents_ && !is_ascii(word.chars)) word = strip_accents(word);
  std::size_t start = 0;
  for (std::size_t i = 0; i < word.chars.size(); ++i) {
    if (!is_bert_punctuation(word.chars[i])) continue;
    if (i > start) append_word_pieces(word.substr(start, i - start), tokens);
    append_word_pieces(word.substr(i, 1), tokens);
    start = i + 1;
  }
  if (start < word.chars.size()) {
    append_word_pieces(word.substr(start, word.chars.size() - start), tokens);
  }
}

// WordpieceTokenizer.tokenize: greedy longest-match-first; a word that is too long or that cannot
// be covered completely becomes a single [UNK], spanning the whole word.
void WordPieceTokenizer::append_word_pieces(const AlignedText& aligned_word,
                                            TokenizedText& tokens) const {
  const std::u32string_view word = aligned_word.chars;
  const CharSpan whole_word = aligned_word.span(0, word.size());
  if (word.size() > kMaxInputCharsPerWord) {
    tokens.add(unk_id_, whole_word);
    return;
  }
  std::string utf8;
  std::vector<std::size_t> offsets;  // byte offset of each code point, plus the end
  offsets.reserve(word.size() + 1);
  for (char32_t c : word) {
    offsets.push_back(utf8.size());
    append_utf8(utf8, c);
  }
  offsets.push_back(utf8.size());

  const std::size_t first_piece = tokens.ids.size();
  std::string candidate;
  std::size_t start = 0;
  while (start < word.size()) {
    std::size_t end = std::min(word.size(), start + longest_token_chars_);
    std::optional<int> piece_id;
    for (; end > start; --end) {
      const std::string_view piece(utf8.data() + offsets[start], offsets[end] - offsets[start]);
      auto it = vocab_ids_.end();
      if (start == 0) {
        it = vocab_ids_.find(piece);
      } else {
        candidate.assign(kContinuingSubwordPrefix).append(piece);
        it = vocab_ids_.find(candidate);
      }
      if (it != vocab_ids_.end()) {
        piece_id = it->second;
        break;
      }
    }
    if (!piece_id) {
      tokens.ids.resize(first_piece);
      tokens.offsets.resize(first_piece);
      tokens.add(unk_id_, whole_word);
      return;
    }
    tokens.add(*piece_id, aligned_word.span(start, end));
    start = end;
  }
}

Encoding WordPieceTokenizer::encode(std::string_view text,
                                    std::optional<std::string_view> pair) const {
  const std::vector<int> first = tokenize(text, "text").ids;
  Encoding encoding;
  encoding.ids.push_back(cls_id_);
  encoding.ids.insert(encoding.ids.end(), first.begin(), first.end());
  encoding.ids.push_back(sep_id_);
  encoding.type_ids.assign(encoding.ids.size(), 0);
  if (pair) {
    const std::vector<int> second = tokenize(*pair, "pair").ids;
    if (mpnet_pairs_) encoding.ids.push_back(sep_id_);
    encoding.ids.insert(encoding.ids.end(), second.begin(), second.end());
    encoding.ids.push_back(sep_id_);
    encoding.type_ids.resize(encoding.ids.size(), mpnet_pairs_ ? 0 : 1);
  }
  return encoding;
}

Encoding WordPieceTokenizer::encode_with_offsets(std::string_view text) const {
  TokenizedText tokens = tokenize(text, "text");
  Encoding encoding;
  encoding.ids.push_back(cls_id_);
  encoding.ids.insert(encoding.ids.end(), tokens.ids.begin(), tokens.ids.end());
  encoding.ids.push_back(sep_id_);
  encoding.type_ids.assign(encoding.ids.size(), 0);
  encoding.offsets.push_back(CharSpan{});  // [CLS]
  encoding.offsets.insert(encoding.offsets.end(), tokens.offsets.begin(), tokens.offsets.end());
  encoding.offsets.push_back(CharSpan{});  // [SEP]
  return encoding;
}

// BertTokenizerFast's convert_tokens_to_string as the token-classification golden records it
// (its stand-in for the fast WordPiece decoder with cleanup): every continuation loses its "##",
// the first token's too, any other token after the first gets a space before it, and the joined
// text is cleaned up ("i ' ll" -> "i'll"). (tokenizers 0.23.2's own decoder keeps a leading "##"
// and cleans up each token alone.)
std::string WordPieceTokenizer::tokens_to_string(std::span<const std::string> tokens) const {
  std::string text;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string& token = tokens[i];
    if (token.starts_with(kContinuingSubwordPrefix)) {
      text.append(token, kContinuingSubwordPrefix.size());
    } else {
      text.append(i > 0 ? " " : "").append(token);
    }
  }
  return pipeline::wordpiece_cleanup(std::move(text));
}

std::string WordPieceTokenizer::token_string(int id) const {
  if (auto it = added_tokens_by_id_.find(id); it != added_tokens_by_id_.end()) return it->second;
  if (id >= 0 && static_cast<std::size_t>(id) < vocab_.size()) {
    return vocab_[static_cast<std::size_t>(id)];
  }
  return unk_token_;  // as transformers' convert_ids_to_tokens
}

std::string WordPieceTokenizer::join_word_pieces(const std::vector<std::string>& tokens) const {
  return strip_python_whitespace(
      replace_all(join(tokens, " "), kSpacedContinuingSubwordPrefix, ""));
}

// PreTrainedTokenizer._decode: runs of ordinary tokens are joined WordPiece-style, added tokens
// that are not special stand alone, the pieces are joined with spaces and then cleaned up.
std::string WordPieceTokenizer::decode(std::span<const int> ids, bool skip_special_tokens) const {
  std::vector<std::string> sub_texts;
  std::vector<std::string> run;
  for (int id : ids) {
    if (skip_special_tokens && is_special(id)) continue;
    std::string token = token_string(id);
    if (!legacy_added_tokens_.contains(token)) {
      run.push_back(std::move(token));
      continue;
    }
    if (!run.empty()) {
      std::string joined = join_word_pieces(run);
      if (!joined.empty()) sub_texts.push_back(std::move(joined));
      run.clear();
    }
    sub_texts.push_back(std::move(token));
  }
  if (!run.empty()) sub_texts.push_back(join_word_pieces(run));
  std::string text = join(sub_texts, " ");
  return clean_up_tokenization_spaces_ ? clean_up_tokenization(std::move(text)) : text;
}

// Decoding joins the tokens with spaces (gluing "##" continuations to their word) and cleans up
// the space before punctuation, so what a token adds depends on the last token shown before it.
// Not exact for the one clean-up rule that looks past the token (" ' " -> "'").
std::string WordPieceTokenizer::decode_continuation(std::span<const int> previous_ids,
                                                    int id) const {
  std::vector<int> context;
  const auto last_shown = std::find_if(previous_ids.rbegin(), previous_ids.rend(),
                                       [&](int previous) { return !is_special(previous); });
  if (last_shown != previous_ids.rend()) context.push_back(*last_shown);
  const std::string before = decode(context, true);
  context.push_back(id);
  const std::string after = decode(context, true);
  const auto common = std::mismatch(before.begin(), before.end(), after.begin(), after.end());
  return after.substr(static_cast<std::size_t>(common.second - after.begin()));
}

}  // namespace

std::unique_ptr<Tokenizer> load_wordpiece_tokenizer(const fs::path& model_dir) {
  WordPieceSettings settings;
  settings.vocab_file = model_dir / "vocab.txt";
  if (!entry_exists(settings.vocab_file)) {
    throw Error(model_dir.string() + ": no BERT vocabulary found (expected vocab.txt)");
  }
  settings.vocab = read_vocab_txt(settings.vocab_file);
  read_optional_configs(model_dir, settings);
  settings.mpnet_pairs = declared_tokenizer_class(model_dir) == "MPNetTokenizer";
  return std::make_unique<WordPieceTokenizer>(std::move(settings));
}

}  // namespace attn
