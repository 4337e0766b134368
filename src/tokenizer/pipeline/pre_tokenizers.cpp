#include "src/tokenizer/pipeline/pre_tokenizers.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/base/unicode.h"
#include "src/tokenizer/pipeline/regex.h"

namespace attn::pipeline {
namespace {

// ---- Characters -------------------------------------------------------------------------------

// Decodes the character at `pos` of valid UTF-8 text, setting `length` to its byte count. A stray
// byte (which valid text never has) counts as a one-byte character so that scanning stays in
// bounds.
char32_t decode_char_at(std::string_view text, std::size_t pos, std::size_t& length) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) {
    length = 1;
    return lead;
  }
  std::size_t size = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  if (size == 1 || pos + size > text.size()) {
    length = 1;
    return lead;
  }
  char32_t code_point = lead & (0x7F >> size);
  for (std::size_t i = 1; i < size; ++i) {
    code_point = (code_point << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
  }
  length = size;
  return code_point;
}

// Rust's char::is_numeric: general categories Nd, Nl and No.
bool is_numeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  const utf8proc_category_t category = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return category == UTF8PROC_CATEGORY_ND || category == UTF8PROC_CATEGORY_NL ||
         category == UTF8PROC_CATEGORY_NO;
}

// ---- ByteLevel's table ------------------------------------------------------------------------

// GPT-2's bytes_to_unicode as UTF-8: every mapped character takes one or two bytes.
struct ByteLevelChar {
  char bytes[2];
  std::uint8_t size;
};

std::array<ByteLevelChar, 256> build_byte_level_table() {
  std::array<ByteLevelChar, 256> table{};
  // Bytes that print as themselves keep their code point; the rest take U+0100, U+0101, ... in
  // byte order.
  char32_t next_unprintable = 0x100;
  for (int byte = 0; byte < 256; ++byte) {
    const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
                           (byte >= 0xAE && byte <= 0xFF);
    const char32_t code_point = printable ? static_cast<char32_t>(byte) : next_unprintable++;
    std::string utf8;
    append_utf8(utf8, code_point);
    ByteLevelChar& entry = table[byte];
    entry.size = static_cast<std::uint8_t>(utf8.size());
    for (std::size_t i = 0; i < utf8.size(); ++i) entry.bytes[i] = utf8[i];
  }
  return table;
}

const std::array<ByteLevelChar, 256>& byte_level_table() {
  static const std::array<ByteLevelChar, 256> table = build_byte_level_table();
  return table;
}

std::string to_byte_level(std::string_view text) {
  const auto& table = byte_level_table();
  std::string mapped;
  mapped.reserve(text.size() * 2);
  for (const char byte : text) {
    const ByteLevelChar& entry = table[static_cast<unsigned char>(byte)];
    mapped.append(entry.bytes, entry.size);
  }
  return mapped;
}

// ---- Splitting --------------------------------------------------------------------------------

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

SplitBehavior parse_behavior(const ConfigNode& node, std::string_view key) {
  const ConfigNode field = node.at(key);
  const std::string name = node.string(key);
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  field.fail("\"" + name +
             "\" is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
}

// NormalizedString::split of the tokenizers library, streamed: the pattern's spans arrive in
// order (each a match or the text between matches, together covering the text), `behavior`
// groups them, and every non-empty group goes to `sink(start, end)`. Streaming keeps the
// library's fold over a vector of spans without building that vector.
template <typename Sink>
class SpanGrouper {
 public:
  SpanGrouper(SplitBehavior behavior, bool invert, Sink& sink)
      : behavior_(behavior), invert_(invert), sink_(sink) {}

  void add(std::size_t start, std::size_t end, bool is_match) {
    if (invert_) is_match = !is_match;
    switch (behavior_) {
      case SplitBehavior::kIsolated:
        emit(start, end);
        break;
      case SplitBehavior::kRemoved:
        if (!is_match) emit(start, end);
        break;
      case SplitBehavior::kContiguous:
        if (has_pending_ && is_match == previous_match_) {
          pending_end_ = end;
        } else {
          restart_pending(start, end);
        }
        break;
      case SplitBehavior::kMergedWithPrevious:
        if (has_pending_ && is_match && !previous_match_) {
          pending_end_ = end;
        } else {
          restart_pending(start, end);
        }
        break;
      case SplitBehavior::kMergedWithNext:
        // The library folds right to left, joining a match to the span after it when that one
        // is not a match; read left to right, a match waits for the next span.
        if (has_pending_ && !is_match) {
          pending_end_ = end;
          flush();
        } else if (is_match) {
          restart_pending(start, end);
        } else {
          emit(start, end);
        }
        break;
    }
    previous_match_ = is_match;
  }

  void finish() { flush(); }

 private:
  void emit(std::size_t start, std::size_t end) {
    if (start < end) sink_(start, end);
  }
  void flush() {
    if (has_pending_) emit(pending_start_, pending_end_);
    has_pending_ = false;
  }
  void restart_pending(std::size_t start, std::size_t end) {
    flush();
    has_pending_ = true;
    pending_start_ = start;
    pending_end_ = end;
  }

  SplitBehavior behavior_;
  bool invert_;
  Sink& sink_;
  bool has_pending_ = false;
  bool previous_match_ = false;
  std::size_t pending_start_ = 0;
  std::size_t pending_end_ = 0;
};

// The library's Pattern::find_matches, feeding `grouper`: the text between matches is a span
// of its own, and an empty match still ends the span before it.
template <typename Grouper>
class SpanFeeder {
 public:
  explicit SpanFeeder(Grouper& grouper) : grouper_(grouper) {}
  void match(std::size_t start, std::size_t end) {
    if (previous_end_ != start) grouper_.add(previous_end_, start, false);
    grouper_.add(start, end, true);
    previous_end_ = end;
  }
  void finish(std::size_t text_size) {
    if (previous_end_ != text_size) grouper_.add(previous_end_, text_size, false);
    grouper_.finish();
  }

 private:
  Grouper& grouper_;
  std::size_t previous_end_ = 0;
};

// Splits `text` on every character for which `is_delimiter` holds (the library's Pattern for a
// char or a Fn(char) -> bool).
template <typename Predicate, typename Sink>
void split_on_chars(std::string_view text, Predicate is_delimiter, SplitBehavior behavior,
                    Sink& sink) {
  SpanGrouper<Sink> grouper(behavior, false, sink);
  SpanFeeder feeder(grouper);
  std::size_t length = 0;
  for (std::size_t pos = 0; pos < text.size(); pos += length) {
    if (is_delimiter(decode_char_at(text, pos, length))) feeder.match(pos, pos + length);
  }
  feeder.finish(text.size());
}

// Splits on a regex's matches (the library's Pattern for SysRegex / Regex).
template <typename Sink>
void split_on_regex(std::string_view text, const Regex& regex, SplitBehavior behavior, bool invert,
                    Sink& sink) {
  // One buffer per thread: a regex split never runs inside another, and reusing the buffer
  // spares an allocation per piece.
  thread_local std::vector<Match> matches;
  matches.clear();
  regex.find_all(text, matches);
  SpanGrouper<Sink> grouper(behavior, invert, sink);
  SpanFeeder feeder(grouper);
  for (const auto& [start, end] : matches) feeder.match(start, end);
  feeder.finish(text.size());
}

// Splits on a literal string, as the library's Split does by compiling the escaped literal: the
// leftmost occurrences that do not overlap. The empty literal matches (emptily) before every
// character and at the end.
template <typename Sink>
void split_on_literal(std::string_view text, std::string_view literal, SplitBehavior behavior,
                      bool invert, Sink& sink) {
  SpanGrouper<Sink> grouper(behavior, invert, sink);
  SpanFeeder feeder(grouper);
  if (literal.empty()) {
    std::size_t length = 0;
    for (std::size_t pos = 0; pos < text.size(); pos += length) {
      decode_char_at(text, pos, length);
      feeder.match(pos, pos);
    }
    feeder.match(text.size(), text.size());
  } else {
    for (std::size_t found = text.find(literal); found != std::string_view::npos;
         found = text.find(literal, found + literal.size())) {
      feeder.match(found, found + literal.size());
    }
  }
  feeder.finish(text.size());
}

// Appends each group of a piece's bytes as a piece.
class PieceSink {
 public:
  PieceSink(const Piece& piece, std::vector<Piece>& out) : piece_(piece), out_(out) {}
  void operator()(std::size_t start, std::size_t end) { out_.push_back(piece_.slice(start, end)); }

 private:
  const Piece& piece_;
  std::vector<Piece>& out_;
};

// ---- Components -------------------------------------------------------------------------------

class SplitPreTokenizer final : public PreTokenizer {
 public:
  explicit SplitPreTokenizer(const ConfigNode& node)
      : behavior_(parse_behavior(node, "behavior")), invert_(node.boolean("invert")) {
    const ConfigNode pattern = node.at("pattern");
    const auto& value = pattern.value();
    if (!value.is_object() || value.size() != 1) {
      pattern.fail("expected {\"String\": ...} or {\"Regex\": ...}");
    }
    if (pattern.has("String")) {
      literal_ = pattern.string("String");
    } else if (pattern.has("Regex")) {
      regex_ = std::make_unique<Regex>(pattern.string("Regex"), pattern.where() + ".Regex");
    } else {
      pattern.fail("expected {\"String\": ...} or {\"Regex\": ...}");
    }
  }

  void pre_tokenize(const Piece& piece, std::vector<Piece>& out) const override {
    if (piece.text.empty()) return;
    PieceSink sink(piece, out);
    if (regex_) {
      split_on_regex(piece.text, *regex_, behavior_, invert_, sink);
    } else {
      split_on_literal(piece.text, literal_, behavior_, invert_, sink);
    }
  }

 private:
  SplitBehavior behavior_;
  bool invert_;
  std::string literal_;
  std::unique_ptr<Regex> regex_;  // null for a literal pattern
};

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  explicit ByteLevelPreTokenizer(const ConfigNode& node)
      : add_prefix_space_(node.boolean("add_prefix_space")) {
    // trim_offsets changes only offsets, which attn does not report; the library still requires
    // the field.
    node.boolean("trim_offsets");
    if (node.boolean_or("use_regex", true)) {
      gpt2_regex_ = std::make_unique<Regex>(
          R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",
          node.where());
    }
  }

  void pre_tokenize(const Piece& piece, std::vector<Piece>& out) const override {
    if (piece.text.empty()) return;
    // The library prepends to every piece that lacks the space, not only to the first; the
    // space takes the origin of the character it is put before.
    Piece prefixed;
    const bool prefix = add_prefix_space_ && piece.text.front() != ' ';
    if (prefix) {
      prefixed.text.reserve(piece.text.size() + 1);
      prefixed.text.push_back(' ');
      prefixed.text.append(piece.text);
      prefixed.at_input_start = piece.at_input_start;
      if (piece.aligned()) {
        const std::span<ByteSpan> origin = OriginArena::allocate(piece.origin.size() + 1);
        origin[0] = piece.origin.front();
        std::copy(piece.origin.begin(), piece.origin.end(), origin.begin() + 1);
        prefixed.origin = origin;
      }
    }
    const Piece& text = prefix ? prefixed : piece;
    const auto& table = byte_level_table();
    auto sink = [&](std::size_t start, std::size_t end) {
      Piece part{to_byte_level(std::string_view(text.text).substr(start, end - start)),
                 text.at_input_start && start == 0,
                 {}};
      // Every byte-level character of a byte (one or two bytes of UTF-8) takes that byte's
      // origin.
      if (text.aligned()) {
        const std::span<ByteSpan> origin = OriginArena::allocate(part.text.size());
        auto at = origin.begin();
        for (std::size_t i = start; i < end; ++i) {
          *at++ = text.origin[i];
          if (table[static_cast<unsigned char>(text.text[i])].size == 2) *at++ = text.origin[i];
        }
        part.origin = origin;
      }
      out.push_back(std::move(part));
    };
    if (!gpt2_regex_) {
      sink(0, text.text.size());
      return;
    }
    split_on_regex(text.text, *gpt2_regex_, SplitBehavior::kIsolated, false, sink);
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> gpt2_regex_;  // null when use_regex is false
};

class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  explicit MetaspacePreTokenizer(const ConfigNode& node) {
    const ConfigNode replacement = node.at("replacement");
    replacement_ = node.string("replacement");
    std::size_t length = 0;
    if (replacement_.empty() || !is_valid_utf8(replacement_) ||
        (decode_char_at(replacement_, 0, length), length != replacement_.size())) {
      replacement.fail("expected a single character");
    }
    // Absent, prepend_scheme is "always"; the older add_prefix_space key can only turn it off,
    // and must then agree with it (the library's deserializer).
    const std::string scheme = node.string_or("prepend_scheme", "always");
    if (scheme == "always") {
      prepend_ = Prepend::kAlways;
    } else if (scheme == "first") {
      prepend_ = Prepend::kFirst;
    } else if (scheme == "never") {
      prepend_ = Prepend::kNever;
    } else {
      node.at("prepend_scheme").fail("\"" + scheme + "\" is not one of first, always, never");
    }
    if (!node.boolean_or("add_prefix_space", true)) {
      if (prepend_ != Prepend::kNever) {
        node.at("add_prefix_space").fail("false does not match prepend_scheme \"" + scheme + "\"");
      }
    }
    split_ = node.boolean_or("split", true);
  }

  void pre_tokenize(const Piece& piece, std::vector<Piece>& out) const override {
    if (piece.text.empty()) return;
    const auto spaces =
        static_cast<std::size_t>(std::count(piece.text.begin(), piece.text.end(), ' '));
    Piece replaced{{}, piece.at_input_start, {}};
    std::string& text = replaced.text;
    text.reserve(piece.text.size() + (spaces + 1) * replacement_.size());
    const bool prepend =
        (prepend_ == Prepend::kAlways || (prepend_ == Prepend::kFirst && piece.at_input_start)) &&
        !starts_with_replacement(piece.text);
    if (prepend) text += replacement_;
    for (const char c : piece.text) {
      if (c == ' ') {
        text += replacement_;
      } else {
        text.push_back(c);
      }
    }
    // A replaced space keeps its origin; the prepended replacement takes the first character's.
    if (piece.aligned()) {
      const std::span<ByteSpan> origin = OriginArena::allocate(text.size());
      auto at = origin.begin();
      if (prepend) at = std::fill_n(at, replacement_.size(), piece.origin.front());
      for (std::size_t i = 0; i < piece.text.size(); ++i) {
        at = std::fill_n(at, piece.text[i] == ' ' ? replacement_.size() : 1, piece.origin[i]);
      }
      replaced.origin = origin;
    }
    if (!split_) {
      out.push_back(std::move(replaced));
      return;
    }
    // The replacement is one character, so in valid UTF-8 its encoding occurs only where the
    // character does: the literal search equals the library's split on that character.
    PieceSink sink(replaced, out);
    split_on_literal(text, replacement_, SplitBehavior::kMergedWithNext, false, sink);
  }

 private:
  enum class Prepend { kAlways, kFirst, kNever };

  // Whether the text starts with the replacement once spaces are replaced.
  bool starts_with_replacement(std::string_view text) const {
    return text.front() == ' ' || text.starts_with(replacement_);
  }

  std::string replacement_;  // one character, UTF-8
  Prepend prepend_ = Prepend::kAlways;
  bool split_ = true;
};

class WhitespacePreTokenizer final : public PreTokenizer {
 public:
  // The library keeps the matches of `\w+|[^\w\s]+` (run by the regex crate): runs of word
  // characters and runs of other non-space characters.
  void pre_tokenize(const Piece& piece, std::vector<Piece>& out) const override {
    const std::string_view text = piece.text;
    std::size_t run_start = 0;
    CharClass run_class = CharClass::kSpace;
    std::size_t length = 0;
    for (std::size_t pos = 0; pos < text.size(); pos += length) {
      const CharClass char_class = classify(decode_char_at(text, pos, length));
      if (char_class == run_class) continue;
      if (run_class != CharClass::kSpace) append(piece, run_start, pos, out);
      run_class = char_class;
      run_start = pos;
    }
    if (run_class != CharClass::kSpace) append(piece, run_start, text.size(), out);
  }

 private:
  enum class CharClass { kWord, kSpace, kOther };

  // The regex crate's \w and \s.
  static CharClass classify(char32_t c) {
    if (is_rust_word_char(c)) return CharClass::kWord;
    return is_rust_whitespace(c) ? CharClass::kSpace : CharClass::kOther;
  }

  static void append(const Piece& piece, std::size_t start, std::size_t end,
                     std::vector<Piece>& out) {
    out.push_back(piece.slice(start, end));
  }
};

class WhitespaceSplitPreTokenizer final : public PreTokenizer {
 public:
  void pre_tokenize(const Piece& piece, std::vector<Piece>& out) const override {
    PieceSink sink(piece, out);
    split_on_chars(piece.text, is_rust_whitespace, SplitBehavior::kRemoved, sink);
  }
};

class BertPreTokenizer final : public PreTokenizer {
 public:
  // The library splits on whitespace (removed), then isolates punctuation in each part; one pass
  // does both, since removing whitespace never joins anything.
  void pre_tokenize(const Piece& piece, std::vector<Piece>& out) const override {
    const std::string_view text = piece.text;
    std::size_t word_start = 0;
    std::size_t length = 0;
    auto emit = [&](std::size_t start, std::size_t end) {
      if (start < end) out.push_back(piece.slice(start, end));
    };
    for (std::size_t pos = 0; pos < text.size(); pos += length) {
      const char32_t c = decode_char_at(text, pos, length);
      if (is_rust_whitespace(c)) {
        emit(word_start, pos);
        word_start = pos + length;
      } else if (is_bert_punctuation(c)) {
        emit(word_start, pos);
        emit(pos, pos + length);
        word_start = pos + length;
      }
    }
    emit(word_start, text.size());
  }
};

class PunctuationPreTokenizer final : public PreTokenizer {
 public:
  explicit PunctuationPreTokenizer(const ConfigNode& node)
      : behavior_(node.has("behavior") ? parse_behavior(node, "behavior")
                                       : SplitBehavior::kIsolated) {}

  void pre_tokenize(const Piece& piece, std::vector<Piece>& out) const override {
    PieceSink sink(piece, out);
    split_on_chars(piece.text, is_bert_punctuation, behavior_, sink);
  }

 private:
  SplitBehavior behavior_;
};

class DigitsPreTokenizer final : public PreTokenizer {
 public:
  explicit DigitsPreTokenizer(const ConfigNode& node)
      : behavior_(node.boolean("individual_digits") ? SplitBehavior::kIsolated
                                                    : SplitBehavior::kContiguous) {}

  void pre_tokenize(const Piece& piece, std::vector<Piece>& out) const override {
    PieceSink sink(piece, out);
    split_on_chars(piece.text, is_numeric, behavior_, sink);
  }

 private:
  SplitBehavior behavior_;
};

class CharDelimiterSplitPreTokenizer final : public PreTokenizer {
 public:
  explicit CharDelimiterSplitPreTokenizer(const ConfigNode& node) {
    const ConfigNode field = node.at("delimiter");
    const std::string delimiter = node.string("delimiter");
    std::size_t length = 0;
    if (delimiter.empty() || !is_valid_utf8(delimiter) ||
        (delimiter_ = decode_char_at(delimiter, 0, length), length != delimiter.size())) {
      field.fail("expected a single character");
    }
  }

  void pre_tokenize(const Piece& piece, std::vector<Piece>& out) const override {
    PieceSink sink(piece, out);
    split_on_chars(
        piece.text, [this](char32_t c) { return c == delimiter_; }, SplitBehavior::kRemoved, sink);
  }

 private:
  char32_t delimiter_ = 0;
};

class FixedLengthPreTokenizer final : public PreTokenizer {
 public:
  // The library panics on a length of 0; a length past any text's size is one piece.
  explicit FixedLengthPreTokenizer(const ConfigNode& node)
      : length_(static_cast<std::size_t>(node.integer_or("length", 1, INT64_MAX, 5))) {}

  void pre_tokenize(const Piece& piece, std::vector<Piece>& out) const override {
    const std::string_view text = piece.text;
    std::size_t chunk_start = 0;
    std::size_t chars_in_chunk = 0;
    std::size_t length = 0;
    for (std::size_t pos = 0; pos < text.size(); pos += length) {
      decode_char_at(text, pos, length);
      if (++chars_in_chunk == length_) {
        out.push_back(piece.slice(chunk_start, pos + length));
        chunk_start = pos + length;
        chars_in_chunk = 0;
      }
    }
    if (chunk_start < text.size()) {
      out.push_back(piece.slice(chunk_start, text.size()));
    }
  }

 private:
  std::size_t length_;
};

std::unique_ptr<PreTokenizer> make(const ConfigNode& node, int depth);

class SequencePreTokenizer final : public PreTokenizer {
 public:
  SequencePreTokenizer(const ConfigNode& node, int depth) {
    const ConfigNode list = node.at("pretokenizers");
    const std::size_t count = list.size();
    steps_.reserve(count);
    for (std::size_t i = 0; i < count; ++i) steps_.push_back(make(list.at(i), depth + 1));
  }

  void pre_tokenize(const Piece& piece, std::vector<Piece>& out) const override {
    if (steps_.empty()) {
      if (!piece.text.empty()) out.push_back(piece);
      return;
    }
    // Each step consumes the pieces of the one before; the last writes straight to `out`.
    std::vector<Piece> current{piece};
    std::vector<Piece> next;
    for (std::size_t i = 0; i + 1 < steps_.size(); ++i) {
      next.clear();
      next.reserve(current.size() * 2);
      for (const Piece& part : current) steps_[i]->pre_tokenize(part, next);
      current.swap(next);
    }
    for (const Piece& part : current) steps_.back()->pre_tokenize(part, out);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

std::unique_ptr<PreTokenizer> make(const ConfigNode& node, int depth) {
  if (depth > kMaxSequenceNesting) {
    node.fail("pre-tokenizers nested more than " + std::to_string(kMaxSequenceNesting) + " deep");
  }
  const std::string type = node.type();
  if (type == "Split") return std::make_unique<SplitPreTokenizer>(node);
  if (type == "ByteLevel") return std::make_unique<ByteLevelPreTokenizer>(node);
  if (type == "Metaspace") return std::make_unique<MetaspacePreTokenizer>(node);
  if (type == "Whitespace") return std::make_unique<WhitespacePreTokenizer>();
  if (type == "WhitespaceSplit") return std::make_unique<WhitespaceSplitPreTokenizer>();
  if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  if (type == "Punctuation") return std::make_unique<PunctuationPreTokenizer>(node);
  if (type == "Digits") return std::make_unique<DigitsPreTokenizer>(node);
  // The library's wrapper lists this one as "Delimiter" but only reads the struct's own name.
  if (type == "CharDelimiterSplit") return std::make_unique<CharDelimiterSplitPreTokenizer>(node);
  if (type == "FixedLength") return std::make_unique<FixedLengthPreTokenizer>(node);
  if (type == "Sequence") return std::make_unique<SequencePreTokenizer>(node, depth);
  node.refuse("pre-tokenizer type \"" + type + "\"");
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const ConfigNode& node) { return make(node, 0); }

const std::string& byte_level_char(unsigned char byte) {
  static const std::array<std::string, 256> strings = [] {
    std::array<std::string, 256> result;
    const auto& table = byte_level_table();
    for (int b = 0; b < 256; ++b) result[b].assign(table[b].bytes, table[b].size);
    return result;
  }();
  return strings[byte];
}

}  // namespace attn::pipeline
