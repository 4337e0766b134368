#include "src/tokenizer/bpe.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/base/unicode.h"
#include "src/io/json_util.h"
#include "src/tokenizer/pipeline/regex.h"
#include "src/tokenizer/special_tokens.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The word cache is cleared when it grows past this, so that long-running use on varied text
// cannot grow memory without bound.
constexpr std::size_t kMaxCachedWords = std::size_t{1} << 17;

// ---- Byte-level alphabet ----------------------------------------------------------------------

// GPT-2 (bytes_to_unicode) runs BPE on printable stand-ins for bytes so that vocabulary entries
// are readable strings: printable Latin-1 bytes stand for themselves, the other 68 (controls,
// space, DEL, NBSP, soft hyphen) for U+0100 onwards in byte order.
constexpr bool is_printable_latin1(int byte) {
  return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
         (byte >= 0xAE && byte <= 0xFF);
}

std::array<char32_t, 256> make_byte_stand_ins() {
  std::array<char32_t, 256> stand_ins{};
  char32_t next_unprintable = 0x100;
  for (int byte = 0; byte < 256; ++byte) {
    stand_ins[byte] = is_printable_latin1(byte) ? static_cast<char32_t>(byte) : next_unprintable++;
  }
  return stand_ins;
}

const std::array<char32_t, 256>& byte_stand_ins() {
  static const std::array<char32_t, 256> stand_ins = make_byte_stand_ins();
  return stand_ins;
}

// The byte a stand-in code point represents, or nullopt for code points outside the alphabet.
std::optional<char> byte_of_stand_in(char32_t code_point) {
  constexpr char32_t kLastStandIn = 0x100 + 67;
  static const std::array<std::int16_t, kLastStandIn + 1> bytes = [] {
    std::array<std::int16_t, kLastStandIn + 1> table;
    table.fill(-1);
    for (int byte = 0; byte < 256; ++byte) table[byte_stand_ins()[byte]] = std::int16_t(byte);
    return table;
  }();
  if (code_point > kLastStandIn || bytes[code_point] < 0) return std::nullopt;
  return static_cast<char>(bytes[code_point]);
}

// The raw bytes a vocabulary string stands for. Code points outside the byte alphabet (possible
// only in added tokens) are kept as their UTF-8.
std::string token_to_bytes(std::string_view token) {
  std::string bytes;
  for (char32_t code_point : decode_utf8(token, "vocabulary entry")) {
    if (auto byte = byte_of_stand_in(code_point)) {
      bytes.push_back(*byte);
    } else {
      append_utf8(bytes, code_point);
    }
  }
  return bytes;
}

// ---- Pre-tokenization ---------------------------------------------------------------------------

// The character classes GPT-2's pre-tokenization pattern distinguishes.
enum class CharClass { kLetter, kNumber, kSpace, kOther };

CharClass classify(char32_t c) {
  // \s of Python's `regex` module on str, which the slow tokenizer uses, is the same White_Space
  // property as Rust's (unlike Python's `re` / str.isspace, it excludes U+001C..U+001F).
  if (is_rust_whitespace(c)) return CharClass::kSpace;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return CharClass::kLetter;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return CharClass::kNumber;
    default:
      return CharClass::kOther;
  }
}

// Length of the contraction ('s 't 're 've 'm 'll 'd; case-sensitive, as in GPT-2) that `text`
// starts with, or 0.
std::size_t contraction_length(std::u32string_view text) {
  if (text.size() < 2 || text[0] != U'\'') return 0;
  switch (text[1]) {
    case U's':
    case U't':
    case U'm':
    case U'd':
      return 2;
    case U'r':
    case U'v':
      return text.size() > 2 && text[2] == U'e' ? 3 : 0;
    case U'l':
      return text.size() > 2 && text[2] == U'l' ? 3 : 0;
    default:
      return 0;
  }
}

// Splits `text` into the words of GPT-2's pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// and calls on_word(begin, end) for each in order; the words cover the text exactly.
template <typename OnWord>
void split_words(std::u32string_view text, OnWord&& on_word) {
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = begin + contraction_length(text.substr(begin));
    if (end == begin) {
      // One plain space joins the run of letters, digits or other symbols right after it.
      std::size_t run_begin = begin;
      if (text[begin] == U' ' && begin + 1 < text.size() &&
          classify(text[begin + 1]) != CharClass::kSpace) {
        run_begin = begin + 1;
      }
      const CharClass run_class = classify(text[run_begin]);
      end = run_begin + 1;
      while (end < text.size() && classify(text[end]) == run_class) ++end;
      // \s+(?!\S): a whitespace run followed by a word leaves its last character, so that a
      // final space can join that word. A lone whitespace character still matches \s+.
      if (run_class == CharClass::kSpace && end < text.size() && end - begin > 1) --end;
    }
    on_word(begin, end);
    begin = end;
  }
}

// ---- Model files --------------------------------------------------------------------------------

struct Merge {
  int rank;
  int merged_id;
};

std::uint64_t pair_key(int left_id, int right_id) {
  return (std::uint64_t{static_cast<std::uint32_t>(left_id)} << 32) |
         static_cast<std::uint32_t>(right_id);
}

// Everything a BpeTokenizer is built from, read and validated by the loader.
struct BpeModel {
  std::vector<std::string> tokens;  // by id, added tokens' text included; empty for unused ids
  std::unordered_map<std::uint64_t, Merge> merges;
  std::array<int, 256> byte_token_ids{};
};

// A vocabulary entry as the file gives it, before its id is checked against the size of the
// vocabulary (known only once the whole file is read).
struct VocabEntry {
  std::string token;
  std::int64_t id;
};

// A merge as merges.txt spells it, before its pieces are looked up in the vocabulary.
struct MergeRule {
  std::string left;
  std::string right;
};

// Fills the id -> token table. Real files number their tokens and added tokens 0, 1, 2, ...
// (ids below id_limit, the number of both); a larger id is refused before the table is sized
// by it, so that a corrupt id cannot make attn allocate gigabytes.
void fill_vocabulary(BpeModel& model, std::vector<VocabEntry>&& entries, std::size_t id_limit,
                     const std::string& file) {
  model.tokens.resize(std::min(entries.size(), id_limit));
  for (VocabEntry& entry : entries) {
    if (entry.token.empty()) throw Error(file + ": the vocabulary has an empty token");
    if (entry.id < 0 || static_cast<std::size_t>(entry.id) >= id_limit) {
      throw Error(file + ": token '" + brief_text(entry.token) + "' has id " +
                  std::to_string(entry.id) + ", out of range for " +
                  std::to_string(entries.size()) + " tokens and " +
                  std::to_string(id_limit - entries.size()) + " added tokens");
    }
    const auto index = static_cast<std::size_t>(entry.id);
    if (index >= model.tokens.size()) model.tokens.resize(index + 1);
    if (!model.tokens[index].empty()) {
      throw Error(file + ": id " + std::to_string(entry.id) + " is given to both '" +
                  brief_text(model.tokens[index]) + "' and '" + brief_text(entry.token) + "'");
    }
    model.tokens[index] = std::move(entry.token);
  }
}

// Added tokens take ids below the same limit as the vocabulary (see fill_vocabulary).
void check_added_token_ids(const std::vector<AddedToken>& added_tokens, std::size_t id_limit,
                           const std::string& file) {
  for (const AddedToken& token : added_tokens) {
    if (static_cast<std::size_t>(token.id) >= id_limit) {
      throw Error(file + ": added token '" + brief_text(token.content) + "' has id " +
                  std::to_string(token.id) + ", out of range for a vocabulary of " +
                  std::to_string(id_limit) + " tokens with the added ones");
    }
  }
}

// Token string -> id. An open-addressing table of ids that compares against the id -> token
// table: one flat probe array instead of a node per token keeps the 150k lookups that resolving
// the merges takes cheap.
class VocabIndex {
 public:
  VocabIndex(const std::vector<std::string>& tokens, const std::string& file) : tokens_(tokens) {
    std::size_t capacity = 16;
    while (capacity < 2 * tokens.size()) capacity *= 2;
    slots_.assign(capacity, kEmptySlot);
    for (std::size_t id = 0; id < tokens.size(); ++id) {
      if (tokens[id].empty()) continue;
      int& slot = slots_[probe(tokens[id])];
      if (slot != kEmptySlot) {
        throw Error(file + ": token '" + brief_text(tokens[id]) + "' has two ids, " +
                    std::to_string(slot) + " and " + std::to_string(id));
      }
      slot = static_cast<int>(id);
    }
  }

  std::optional<int> find(std::string_view token) const {
    const int id = slots_[probe(token)];
    if (id == kEmptySlot) return std::nullopt;
    return id;
  }

 private:
  static constexpr int kEmptySlot = -1;

  // The slot that holds `token`, or the empty slot where it would go (linear probing).
  std::size_t probe(std::string_view token) const {
    const std::size_t mask = slots_.size() - 1;
    const std::size_t hash = std::hash<std::string_view>{}(token);
    std::size_t slot = hash & mask;
    while (slots_[slot] != kEmptySlot && tokens_[slots_[slot]] != token) slot = (slot + 1) & mask;
    return slot;
  }

  const std::vector<std::string>& tokens_;
  std::vector<int> slots_;
};

// Splits "left right" into its two pieces, or returns nullopt when it is not exactly that.
std::optional<MergeRule> split_merge_line(std::string_view line) {
  const std::size_t space = line.find(' ');
  if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
      line.find(' ', space + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  return MergeRule{std::string(line.substr(0, space)), std::string(line.substr(space + 1))};
}

// Resolves the merges (in rank order) against the vocabulary. location(i) names rule i in errors;
// it is only called on error, which keeps loading 50k merges cheap.
template <typename Location>
void add_merges(BpeModel& model, const VocabIndex& vocab, const std::vector<MergeRule>& rules,
                Location location) {
  model.merges.reserve(rules.size());
  std::string merged;
  for (std::size_t rank = 0; rank < rules.size(); ++rank) {
    const MergeRule& rule = rules[rank];
    auto vocab_id = [&](const std::string& piece, const char* what) {
      const std::optional<int> id = vocab.find(piece);
      if (!id) {
        throw Error(location(rank) + ": merge " + what + " '" + brief_text(piece) +
                    "' is not in the vocabulary");
      }
      return *id;
    };
    merged.assign(rule.left).append(rule.right);
    const int left_id = vocab_id(rule.left, "piece");
    const int right_id = vocab_id(rule.right, "piece");
    const int merged_id = vocab_id(merged, "result");
    // A repeated pair keeps its last rank, as in both the slow and the fast tokenizer.
    model.merges.insert_or_assign(pair_key(left_id, right_id),
                                  Merge{static_cast<int>(rank), merged_id});
  }
}

// Reads vocab.json, a bare {token: id} object, through nlohmann's SAX interface: building the
// whole document (a std::map per object) takes several times longer than the parse itself for a
// 50k-token vocabulary.
class VocabJsonReader final : public json::json_sax_t {
 public:
  explicit VocabJsonReader(std::string file) : file_(std::move(file)) {}

  std::vector<VocabEntry> read(std::string_view text) {
    check_json_depth(text, file_);
    json::sax_parse(text, this);
    return std::move(entries_);
  }

  bool null() override { refuse("null"); }
  bool boolean(bool) override { refuse("a boolean"); }
  bool number_float(number_float_t, const string_t&) override { refuse("a fractional number"); }
  bool binary(binary_t&) override { refuse("binary data"); }
  bool string(string_t&) override { refuse("a string"); }
  bool number_integer(number_integer_t value) override { return id(value); }
  bool number_unsigned(number_unsigned_t value) override {
    return id(static_cast<std::int64_t>(
        std::min<number_unsigned_t>(value, std::numeric_limits<std::int64_t>::max())));
  }

  bool start_object(std::size_t) override {
    if (in_vocab_) refuse("an object");
    in_vocab_ = true;
    return true;
  }
  // Only the vocabulary's own end: an object inside it is refused where it starts.
  bool end_object() override {
    in_vocab_ = false;
    return true;
  }
  bool start_array(std::size_t) override { refuse("an array"); }
  bool end_array() override { return true; }

  bool key(string_t& key) override {
    key_ = std::move(key);
    return true;
  }

  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& error) override {
    throw Error(invalid_json_message(file_, {}, error));
  }

 private:
  bool id(std::int64_t value) {
    if (!in_vocab_) refuse("a number");
    entries_.push_back({std::move(key_), value});
    return true;
  }

  // A value that is not a token's id: the document is not a vocabulary, or one of its values is
  // not an integer.
  [[noreturn]] void refuse(const std::string& what) const {
    if (!in_vocab_) throw Error(file_ + ": expected an object mapping tokens to ids");
    throw Error(file_ + ": token '" + brief_text(key_) + "': the id is " + what +
                ", not an integer");
  }

  std::string file_;
  bool in_vocab_ = false;  // inside the top-level object
  std::string key_;        // the token whose id comes next
  std::vector<VocabEntry> entries_;
};

std::vector<VocabEntry> read_vocab_json(const fs::path& path) {
  return VocabJsonReader(path.string()).read(read_model_file(path, kMaxTokenizerBytes));
}

void read_merges_txt(BpeModel& model, const VocabIndex& vocab, const fs::path& path) {
  const std::string text = read_model_file(path, kMaxTokenizerBytes);
  const auto line_count = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  std::vector<MergeRule> rules;
  rules.reserve(line_count);
  std::vector<int> line_numbers;
  line_numbers.reserve(line_count);
  std::string_view rest = text;
  for (int line_number = 1; !rest.empty(); ++line_number) {
    const std::size_t newline = rest.find('\n');
    std::string_view line = rest.substr(0, newline);
    rest = newline == std::string_view::npos ? std::string_view() : rest.substr(newline + 1);
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.empty() || (line_number == 1 && line.starts_with("#version"))) continue;
    std::optional<MergeRule> rule = split_merge_line(line);
    if (!rule) {
      throw Error(path.string() + " line " + std::to_string(line_number) +
                  ": expected two tokens separated by one space, got '" + brief_text(line) + "'");
    }
    rules.push_back(std::move(*rule));
    line_numbers.push_back(line_number);
  }
  add_merges(model, vocab, rules, [&](std::size_t rank) {
    return path.string() + " line " + std::to_string(line_numbers[rank]);
  });
}

void find_byte_token_ids(BpeModel& model, const VocabIndex& vocab, const std::string& file) {
  for (int byte = 0; byte < 256; ++byte) {
    std::string symbol;
    append_utf8(symbol, byte_stand_ins()[byte]);
    const std::optional<int> id = vocab.find(symbol);
    if (!id) {
      throw Error(file + ": the byte-level symbol '" + symbol + "' (byte " + std::to_string(byte) +
                  ") is not in the vocabulary");
    }
    model.byte_token_ids[byte] = *id;
  }
}

// ---- Tokenizer classes --------------------------------------------------------------------------

// Qwen2Tokenizer's pre-tokenizer (PRETOKENIZE_REGEX): GPT-2's, but digits one by one and a
// letter run may take one leading non-letter.
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// What differs between the transformers classes that run GPT-2's byte-level BPE, chosen by the
// files (declared_tokenizer_class): GPT2Tokenizer, the default, RobertaTokenizer and
// Qwen2Tokenizer.
struct BpeFlavour {
  std::string class_name;
  NamedTokenDefaults named_defaults;
  // None: GPT-2 adds no special tokens (and attn refuses pairs, which GPT-2 models were not
  // trained on).
  std::optional<NamedSequenceTemplate> sequence_template;
  // RoBERTa's decode() is transformers' (invalid UTF-8 replaced by U+FFFD,
  // clean_up_tokenization_spaces as the config says, default true). GPT-2's gives the raw bytes,
  // never cleaned up, which is what generation streams.
  bool decodes_to_text = false;
  // Qwen2Tokenizer: text is NFC-normalized, then split by this pattern instead of GPT-2's.
  const char* split_pattern = nullptr;
  bool clean_up_by_default = true;  // clean_up_tokenization_spaces when the config is silent
};

BpeFlavour bpe_flavour(const fs::path& model_dir) {
  const std::optional<std::string> declared = declared_tokenizer_class(model_dir);
  if (declared == "Qwen2Tokenizer") {
    return {.class_name = "Qwen2Tokenizer",
            .named_defaults = class_named_token_defaults("Qwen2Tokenizer"),
            .sequence_template = std::nullopt,
            .decodes_to_text = true,
            .split_pattern = kQwen2Pattern,
            .clean_up_by_default = false};
  }
  if (declared == "RobertaTokenizer") {
    return {
        .class_name = "RobertaTokenizer",
        .named_defaults = class_named_token_defaults("RobertaTokenizer"),
        // build_inputs_with_special_tokens: cls A sep, pairs cls A sep sep B sep;
        // create_token_type_ids_from_sequences: all 0.
        .sequence_template =
            NamedSequenceTemplate{
                {NamedToken::kCls}, {NamedToken::kSep}, {NamedToken::kSep}, {NamedToken::kSep}, 0},
        .decodes_to_text = true};
  }
  return {.class_name = "GPT2Tokenizer",
          .named_defaults = class_named_token_defaults("GPT2Tokenizer"),
          .sequence_template = std::nullopt,
          .decodes_to_text = false};
}

// How a BpeTokenizer wraps and decodes, from its class and tokenizer_config.json.
struct BpeSettings {
  // prepare_for_tokenization: a space before text that does not start with one.
  bool add_prefix_space = false;
  std::optional<SequenceTemplate> sequence_template;  // none: no special tokens, no pairs
  bool decodes_to_text = false;
  bool clean_up_tokenization_spaces = false;
  // Qwen2Tokenizer: NFC, then words by this pattern (null: GPT-2's split_words).
  std::shared_ptr<const pipeline::Regex> split_pattern;
};

// ---- Tokenizer ----------------------------------------------------------------------------------

class BpeTokenizer final : public Tokenizer {
 public:
  BpeTokenizer(BpeModel model, SpecialTokens special_tokens, BpeSettings settings)
      : model_(std::move(model)),
        special_tokens_(std::move(special_tokens)),
        settings_(std::move(settings)) {
    token_bytes_.reserve(model_.tokens.size());
    for (const std::string& token : model_.tokens) token_bytes_.push_back(token_to_bytes(token));
  }

  Encoding encode(std::string_view text, std::optional<std::string_view> pair) const override {
    if (pair && !settings_.sequence_template) {
      throw Error("GPT-2 tokenizer: sentence pairs are not supported");
    }
    const std::vector<int> first = tokenize(text, "text");
    if (!settings_.sequence_template) return {first, std::vector<int>(first.size(), 0)};
    if (!pair) return settings_.sequence_template->apply(first, std::nullopt);
    const std::vector<int> second = tokenize(*pair, "pair");
    return settings_.sequence_template->apply(first, second);
  }

  std::vector<int> encode_plain(std::string_view text) const override {
    return tokenize(text, "text");
  }

  std::string decode(std::span<const int> ids, bool skip_special_tokens) const override {
    std::string bytes;
    for (int id : ids) {
      check_id(id);
      if (skip_special_tokens && is_special(id)) continue;
      bytes += token_bytes_[id];
    }
    if (!settings_.decodes_to_text) return bytes;
    std::string text = replace_invalid_utf8(bytes);
    return settings_.clean_up_tokenization_spaces ? clean_up_tokenization(std::move(text)) : text;
  }

  // Byte-level BPE decodes each token to its own bytes, whatever came before.
  std::string decode_continuation(std::span<const int>, int id) const override {
    check_id(id);
    return is_special(id) ? "" : token_bytes_[id];
  }

  std::string token_string(int id) const override {
    check_id(id);
    return model_.tokens[id];
  }

  int vocab_size() const override { return static_cast<int>(model_.tokens.size()); }
  std::optional<int> eos_id() const override { return special_tokens_.id(NamedToken::kEos); }
  std::optional<int> mask_id() const override { return special_tokens_.id(NamedToken::kMask); }
  bool is_special(int id) const override { return special_tokens_.is_special(id); }

 private:
  // PreTrainedTokenizer.tokenize + convert_tokens_to_ids, without the special tokens of the
  // template: the prefix space, the added tokens cut out, and every piece between them
  // pre-tokenized and BPE-merged on its own.
  std::vector<int> tokenize(std::string_view text, std::string_view what) const {
    const std::vector<char32_t> characters = decode_utf8(text, what);  // refuses bad UTF-8
    std::string prepared;
    if (settings_.add_prefix_space && !characters.empty() && !is_python_space(characters[0])) {
      prepared = " ";
    }
    prepared += text;
    std::vector<int> ids;
    for (const TextSegment& segment :
         split_added_tokens(prepared, special_tokens_.split_tokens())) {
      if (segment.token) {
        ids.push_back(segment.token->id);
      } else {
        const std::vector<char32_t> code_points = decode_utf8(segment.text, what);
        encode_ordinary_text(std::u32string_view(code_points.data(), code_points.size()), ids);
      }
    }
    return ids;
  }

  void check_id(int id) const {
    if (id < 0 || id >= vocab_size()) {
      throw Error("GPT-2 tokenizer: token id " + std::to_string(id) +
                  " is outside the vocabulary (" + std::to_string(vocab_size()) + " ids)");
    }
  }

  // Text without added tokens: pre-tokenize, then BPE each word's bytes.
  void encode_ordinary_text(std::u32string_view text, std::vector<int>& ids) const {
    if (settings_.split_pattern) {
      std::string utf8;
      for (const char32_t c : text) append_utf8(utf8, c);
      // Qwen2Tokenizer.prepare_for_tokenization: unicodedata.normalize("NFC", text).
      const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> normalized(
          utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>(utf8.c_str())), &std::free);
      const std::string_view nfc(reinterpret_cast<const char*>(normalized.get()));
      std::vector<pipeline::Match> words;
      settings_.split_pattern->find_all(nfc, words);
      for (const auto& [begin, end] : words)
        encode_word(std::string(nfc.substr(begin, end - begin)), ids);
      return;
    }
    std::string word_bytes;
    split_words(text, [&](std::size_t begin, std::size_t end) {
      word_bytes.clear();
      for (std::size_t i = begin; i < end; ++i) append_utf8(word_bytes, text[i]);
      encode_word(word_bytes, ids);
    });
  }

  void encode_word(const std::string& word_bytes, std::vector<int>& ids) const {
    {
      std::lock_guard lock(cache_mutex_);
      auto cached = cache_.find(word_bytes);
      if (cached != cache_.end()) {
        ids.insert(ids.end(), cached->second.begin(), cached->second.end());
        return;
      }
    }
    std::vector<int> word_ids = merge_word(word_bytes);
    ids.insert(ids.end(), word_ids.begin(), word_ids.end());
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() >= kMaxCachedWords) cache_.clear();
    cache_.emplace(word_bytes, std::move(word_ids));
  }

  int merge_rank(int left_id, int right_id) const {
    auto it = model_.merges.find(pair_key(left_id, right_id));
    return it == model_.merges.end() ? INT_MAX : it->second.rank;
  }

  // GPT-2's bpe(): repeatedly take the adjacent pair with the lowest merge rank and merge all its
  // occurrences left to right, until no adjacent pair has a merge. pair_ranks[i] is the rank of
  // (symbols[i], symbols[i + 1]) and is only recomputed next to freshly merged symbols.
  std::vector<int> merge_word(std::string_view word_bytes) const {
    std::vector<int> symbols;
    symbols.reserve(word_bytes.size());
    for (char byte : word_bytes) {
      symbols.push_back(model_.byte_token_ids[static_cast<unsigned char>(byte)]);
    }
    std::vector<int> pair_ranks(symbols.size(), INT_MAX);
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
      pair_ranks[i] = merge_rank(symbols[i], symbols[i + 1]);
    }
    std::vector<char> fresh(symbols.size());
    while (symbols.size() > 1) {
      const auto best = std::min_element(pair_ranks.begin(), pair_ranks.end());
      if (*best == INT_MAX) break;
      const std::size_t best_index = static_cast<std::size_t>(best - pair_ranks.begin());
      const int left = symbols[best_index];
      const int right = symbols[best_index + 1];
      const int merged = model_.merges.at(pair_key(left, right)).merged_id;

      std::size_t kept = 0;
      for (std::size_t read = 0; read < symbols.size(); ++kept) {
        if (read + 1 < symbols.size() && symbols[read] == left && symbols[read + 1] == right) {
          symbols[kept] = merged;
          fresh[kept] = true;
          read += 2;
        } else {
          symbols[kept] = symbols[read];
          pair_ranks[kept] = pair_ranks[read];
          fresh[kept] = false;
          read += 1;
        }
      }
      symbols.resize(kept);
      pair_ranks.resize(kept);
      fresh.resize(kept);
      for (std::size_t i = 0; i + 1 < kept; ++i) {
        if (fresh[i] || fresh[i + 1]) pair_ranks[i] = merge_rank(symbols[i], symbols[i + 1]);
      }
      pair_ranks[kept - 1] = INT_MAX;
    }
    return symbols;
  }

  BpeModel model_;
  SpecialTokens special_tokens_;
  BpeSettings settings_;
  std::vector<std::string> token_bytes_;  // by id: the raw bytes decode() emits
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int>> cache_;  // word bytes -> ids
};

}  // namespace

std::unique_ptr<Tokenizer> load_bpe_tokenizer(const fs::path& model_dir) {
  std::error_code status_error;
  if (!fs::is_directory(model_dir, status_error)) {
    throw Error(model_dir.string() + ": model folder not found" +
                (status_error ? " (" + status_error.message() + ")" : ""));
  }
  const fs::path vocab_path = model_dir / "vocab.json";
  const fs::path merges_path = model_dir / "merges.txt";
  const fs::path config_path = model_dir / "tokenizer_config.json";
  if (!entry_exists(vocab_path) || !entry_exists(merges_path)) {
    throw Error(model_dir.string() + ": no GPT-2 tokenizer files (need vocab.json + merges.txt)");
  }

  json config = json::object();
  if (entry_exists(config_path)) {
    config = read_json_file(config_path, kMaxConfigBytes);
    if (!config.is_object()) throw Error(config_path.string() + ": expected a JSON object");
  }

  const BpeFlavour flavour = bpe_flavour(model_dir);
  SpecialTokenConfig special_config =
      read_special_token_config(model_dir, config, flavour.named_defaults, flavour.class_name);

  BpeModel model;
  const std::string vocab_file = vocab_path.string();
  std::vector<VocabEntry> vocab_entries = read_vocab_json(vocab_path);
  const std::size_t id_limit = vocab_entries.size() + special_config.added_tokens.size();
  fill_vocabulary(model, std::move(vocab_entries), id_limit, vocab_file);
  check_added_token_ids(special_config.added_tokens, id_limit, config_path.string());

  // Valid only until the added tokens' text is written into model.tokens below.
  const VocabIndex vocab(model.tokens, vocab_file);
  read_merges_txt(model, vocab, merges_path);
  find_byte_token_ids(model, vocab, vocab_file);
  SpecialTokens special_tokens(special_config,
                               [&](const std::string& text) { return vocab.find(text); });

  // convert_ids_to_tokens shows an added token's text, even where the vocabulary has another.
  for (const AddedToken& token : special_tokens.split_tokens()) {
    const auto id = static_cast<std::size_t>(token.id);
    if (id >= model.tokens.size()) model.tokens.resize(id + 1);
    model.tokens[id] = token.content;
  }

  BpeSettings settings;
  settings.add_prefix_space = config_flag(config, "add_prefix_space", false, config_path.string());
  if (flavour.sequence_template) {
    settings.sequence_template = special_tokens.resolve(*flavour.sequence_template);
  }
  settings.decodes_to_text = flavour.decodes_to_text;
  settings.clean_up_tokenization_spaces =
      flavour.decodes_to_text && config_flag(config, "clean_up_tokenization_spaces",
                                             flavour.clean_up_by_default, config_path.string());
  if (flavour.split_pattern) {
    settings.split_pattern = std::make_shared<pipeline::Regex>(
        flavour.split_pattern, flavour.class_name + "'s pre-tokenizer");
  }
  return std::make_unique<BpeTokenizer>(std::move(model), std::move(special_tokens),
                                        std::move(settings));
}

}  // namespace attn
