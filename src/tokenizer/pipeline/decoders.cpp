#include "src/tokenizer/pipeline/decoders.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/base/error.h"
#include "src/base/unicode.h"
#include "src/io/json_util.h"
#include "src/tokenizer/pipeline/regex.h"

namespace attn::pipeline {
namespace {

using Tokens = std::vector<std::string>;

std::vector<char32_t> characters_of(std::string_view token) {
  return decode_utf8(token, "a token being decoded");
}

// A field holding exactly one character (Rust's char), as Metaspace's replacement.
char32_t read_character(const ConfigNode& node, std::string_view key) {
  const std::string text = node.string(key);
  const std::vector<char32_t> characters = decode_utf8(text, node.at(key).where());
  if (characters.size() != 1) node.at(key).fail("expected a single character");
  return characters[0];
}

bool is_utf8_continuation(char byte) { return (static_cast<unsigned char>(byte) & 0xC0) == 0x80; }

// Rust's str::replace: every non-overlapping occurrence, left to right; an empty `from` matches
// before every character and at the end ("ab" -> "XaXbX").
std::string rust_replace(std::string_view text, std::string_view from, std::string_view to) {
  if (!from.empty()) return python_replace(text, from, to);
  std::string out(to);
  for (std::size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (i + 1 == text.size() || !is_utf8_continuation(text[i + 1])) out.append(to);
  }
  return out;
}

// GPT-2's byte-level characters (bytes_to_unicode): printable Latin-1 bytes stand for
// themselves, the others for U+0100 onwards in byte order. All of them are below U+0144.
constexpr char32_t kByteCharacterLimit = 0x144;

// The byte each character below kByteCharacterLimit stands for, or -1.
std::array<int, kByteCharacterLimit> bytes_of_characters() {
  std::array<int, kByteCharacterLimit> bytes;
  bytes.fill(-1);
  char32_t next_unprintable = 0x100;
  for (int byte = 0; byte < 256; ++byte) {
    const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
                           (byte >= 0xAE && byte <= 0xFF);
    bytes[printable ? static_cast<char32_t>(byte) : next_unprintable++] = byte;
  }
  return bytes;
}

// The byte a byte-level character stands for, if it is one.
std::optional<unsigned char> byte_of(char32_t character) {
  static const std::array<int, kByteCharacterLimit> bytes = bytes_of_characters();
  if (character >= kByteCharacterLimit || bytes[character] < 0) return std::nullopt;
  return static_cast<unsigned char>(bytes[character]);
}

// Byte-level characters back to bytes; a token with any other character keeps its own bytes.
// The whole chain becomes one string, invalid UTF-8 replaced as Rust's from_utf8_lossy does
// (maximal subparts, the same rule as replace_invalid_utf8).
class ByteLevelDecoder final : public Decoder {
 public:
  void decode_chain(Tokens& tokens) const override {
    std::string bytes;
    for (const std::string& token : tokens) {
      std::string token_bytes;
      bool all_byte_characters = true;
      for (const char32_t character : characters_of(token)) {
        const std::optional<unsigned char> byte = byte_of(character);
        if (!byte) {
          all_byte_characters = false;
          break;
        }
        token_bytes += static_cast<char>(*byte);
      }
      bytes += all_byte_characters ? token_bytes : token;
    }
    tokens = {replace_invalid_utf8(bytes)};
  }
};

// The replacement character becomes a space, except in the first token where (unless the
// prepend scheme is "never") every one of them is dropped.
class MetaspaceDecoder final : public Decoder {
 public:
  explicit MetaspaceDecoder(const ConfigNode& node)
      : replacement_(read_character(node, "replacement")) {
    const std::string scheme = node.string_or("prepend_scheme", "always");
    if (scheme != "always" && scheme != "first" && scheme != "never") {
      node.at("prepend_scheme")
          .fail("expected \"always\", \"first\" or \"never\", found \"" + scheme + "\"");
    }
    drops_first_token_replacements_ = scheme != "never";
    // The legacy add_prefix_space: false is "never" in the old format; with any other scheme it
    // contradicts the file, which the library refuses.
    if (node.has("add_prefix_space") && !node.boolean("add_prefix_space") && scheme != "never") {
      node.at("add_prefix_space").fail("false does not match prepend_scheme \"" + scheme + "\"");
    }
  }

  void decode_chain(Tokens& tokens) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      std::string decoded;
      for (const char32_t character : characters_of(tokens[i])) {
        if (character != replacement_) {
          append_utf8(decoded, character);
        } else if (i != 0 || !drops_first_token_replacements_) {
          decoded += ' ';
        }
      }
      tokens[i] = std::move(decoded);
    }
  }

 private:
  char32_t replacement_;
  bool drops_first_token_replacements_ = true;
};

// The byte of a "<0xNN>" token, read as Rust's u8::from_str_radix reads "NN" (which also takes
// "+N").
std::optional<unsigned char> fallback_byte(std::string_view token) {
  if (token.size() != 6 || !token.starts_with("<0x") || !token.ends_with('>')) return std::nullopt;
  std::string_view digits = token.substr(3, 2);
  if (digits[0] == '+') digits.remove_prefix(1);
  int value = 0;
  for (const char digit : digits) {
    int digit_value = 0;
    if (digit >= '0' && digit <= '9') {
      digit_value = digit - '0';
    } else if (digit >= 'a' && digit <= 'f') {
      digit_value = digit - 'a' + 10;
    } else if (digit >= 'A' && digit <= 'F') {
      digit_value = digit - 'A' + 10;
    } else {
      return std::nullopt;
    }
    value = value * 16 + digit_value;
  }
  return static_cast<unsigned char>(value);
}

// Runs of <0xNN> tokens become the text they spell, or one U+FFFD per byte when the run is not
// valid UTF-8 as a whole.
class ByteFallbackDecoder final : public Decoder {
 public:
  void decode_chain(Tokens& tokens) const override {
    Tokens decoded;
    std::string run;
    const auto flush_run = [&] {
      if (run.empty()) return;
      if (is_valid_utf8(run)) {
        decoded.push_back(run);
      } else {
        decoded.insert(decoded.end(), run.size(), "\xEF\xBF\xBD");
      }
      run.clear();
    };
    for (std::string& token : tokens) {
      if (const std::optional<unsigned char> byte = fallback_byte(token)) {
        run += static_cast<char>(*byte);
      } else {
        flush_run();
        decoded.push_back(std::move(token));
      }
    }
    flush_run();
    tokens = std::move(decoded);
  }
};

class FuseDecoder final : public Decoder {
 public:
  void decode_chain(Tokens& tokens) const override {
    std::string fused;
    for (const std::string& token : tokens) fused += token;
    tokens = {std::move(fused)};
  }
};

// Removes up to `start` leading and `stop` trailing copies of one character from each token.
class StripDecoder final : public Decoder {
 public:
  explicit StripDecoder(const ConfigNode& node)
      : content_(read_character(node, "content")),
        start_(static_cast<std::size_t>(
            node.integer("start", 0, std::numeric_limits<std::int64_t>::max()))),
        stop_(static_cast<std::size_t>(
            node.integer("stop", 0, std::numeric_limits<std::int64_t>::max()))) {}

  void decode_chain(Tokens& tokens) const override {
    for (std::string& token : tokens) {
      const std::vector<char32_t> characters = characters_of(token);
      std::size_t begin = 0;
      while (begin < start_ && begin < characters.size() && characters[begin] == content_) ++begin;
      std::size_t end = characters.size();
      while (characters.size() - end < stop_ && end > 0 && characters[end - 1] == content_) --end;
      // A token made only of the character, stripped from both sides, would overlap (the
      // library panics there); it becomes empty.
      std::string stripped;
      for (std::size_t i = begin; i < end; ++i) append_utf8(stripped, characters[i]);
      token = std::move(stripped);
    }
  }

 private:
  char32_t content_;
  std::size_t start_;
  std::size_t stop_;
};

// Every match of a pattern in each token replaced by `content`. A String pattern is a literal
// (the library escapes it into a regex, which for a non-empty literal finds the same matches).
class ReplaceDecoder final : public Decoder {
 public:
  explicit ReplaceDecoder(const ConfigNode& node) : content_(node.string("content")) {
    const ConfigNode pattern = node.at("pattern");
    if (pattern.has("String")) {
      literal_ = pattern.string("String");
    } else if (pattern.has("Regex")) {
      regex_.emplace(pattern.string("Regex"), pattern.at("Regex").where());
    } else {
      pattern.fail("expected {\"String\": ...} or {\"Regex\": ...}, found " +
                   brief_json(pattern.value()));
    }
  }

  void decode_chain(Tokens& tokens) const override {
    for (std::string& token : tokens) token = replaced(token);
  }

 private:
  std::string replaced(const std::string& token) const {
    // The library finds no match at all in an empty token, even for a pattern matching "".
    if (token.empty()) return token;
    if (!regex_) return rust_replace(token, literal_, content_);
    std::vector<Match> matches;
    regex_->find_all(token, matches);
    std::string out;
    std::size_t copied = 0;
    for (const auto& [start, end] : matches) {
      out.append(token, copied, start - copied);
      out += content_;
      copied = end;
    }
    out.append(token, copied);
    return out;
  }

  std::string content_;
  std::string literal_;
  std::optional<Regex> regex_;
};

// Tokens after the first: a continuing piece loses its prefix, any other gets a leading space.
class WordPieceDecoder final : public Decoder {
 public:
  explicit WordPieceDecoder(const ConfigNode& node)
      : prefix_(node.string("prefix")), cleanup_(node.boolean("cleanup")) {}

  void decode_chain(Tokens& tokens) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      std::string& token = tokens[i];
      if (i != 0) {
        if (token.starts_with(prefix_)) {
          token.erase(0, prefix_.size());
        } else {
          token.insert(token.begin(), ' ');
        }
      }
      if (cleanup_) token = wordpiece_cleanup(std::move(token));
    }
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

// The end-of-word suffix becomes a space, except in the last token where it is dropped.
class BpeDecoder final : public Decoder {
 public:
  explicit BpeDecoder(const ConfigNode& node) : suffix_(node.string("suffix")) {}

  void decode_chain(Tokens& tokens) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = rust_replace(tokens[i], suffix_, i + 1 == tokens.size() ? "" : " ");
    }
  }

 private:
  std::string suffix_;
};

// Connectionist Temporal Classification output: repeats collapsed, padding dropped, the word
// delimiter a space (with cleanup only, as the library does).
class CtcDecoder final : public Decoder {
 public:
  explicit CtcDecoder(const ConfigNode& node)
      : pad_token_(node.string("pad_token")),
        word_delimiter_token_(node.string("word_delimiter_token")),
        cleanup_(node.boolean("cleanup")) {}

  void decode_chain(Tokens& tokens) const override {
    Tokens decoded;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0 && tokens[i] == tokens[i - 1]) continue;
      std::string token = rust_replace(tokens[i], pad_token_, "");
      if (cleanup_)
        token = rust_replace(wordpiece_cleanup(std::move(token)), word_delimiter_token_, " ");
      if (!token.empty()) decoded.push_back(std::move(token));
    }
    tokens = std::move(decoded);
  }

 private:
  std::string pad_token_;
  std::string word_delimiter_token_;
  bool cleanup_;
};

std::unique_ptr<Decoder> make_decoder_at(const ConfigNode& node, int depth);

class SequenceDecoder final : public Decoder {
 public:
  SequenceDecoder(const ConfigNode& node, int depth) {
    const ConfigNode decoders = node.at("decoders");
    for (std::size_t i = 0; i < decoders.size(); ++i) {
      decoders_.push_back(make_decoder_at(decoders.at(i), depth + 1));
    }
  }

  void decode_chain(Tokens& tokens) const override {
    for (const auto& decoder : decoders_) decoder->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> decoders_;
};

std::unique_ptr<Decoder> make_decoder_at(const ConfigNode& node, int depth) {
  if (depth > kMaxSequenceNesting) {
    node.fail("decoders nested more than " + std::to_string(kMaxSequenceNesting) + " deep");
  }
  const std::string type = node.type();
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") return std::make_unique<MetaspaceDecoder>(node);
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") return std::make_unique<StripDecoder>(node);
  if (type == "Replace") return std::make_unique<ReplaceDecoder>(node);
  if (type == "WordPiece") return std::make_unique<WordPieceDecoder>(node);
  if (type == "BPEDecoder") return std::make_unique<BpeDecoder>(node);
  if (type == "CTC") return std::make_unique<CtcDecoder>(node);
  if (type == "Sequence") return std::make_unique<SequenceDecoder>(node, depth);
  node.refuse("decoder type \"" + type + "\"");
}

}  // namespace

std::unique_ptr<Decoder> make_decoder(const ConfigNode& node) { return make_decoder_at(node, 0); }

std::string wordpiece_cleanup(std::string text) {
  static constexpr std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."},   {" ?", "?"},     {" !", "!"},     {" ,", ","},
      {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},   {" do not", " don't"},
      {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
  };
  for (const auto& [from, to] : kRules) text = python_replace(text, from, to);
  return text;
}

}  // namespace attn::pipeline
