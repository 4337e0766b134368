#pragma once

#include <utf8proc.h>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// Decodes UTF-8 into code points. Throws Error naming `what` (e.g. "prompt") at the first
// invalid byte sequence.
std::vector<char32_t> decode_utf8(std::string_view text, std::string_view what);

// The number of bytes of a code point's UTF-8 encoding.
std::size_t utf8_length(char32_t code_point);

// Appends the UTF-8 encoding of one code point.
void append_utf8(std::string& out, char32_t code_point);

std::string encode_utf8(std::u32string_view code_points);

// Whether `text` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool is_valid_utf8(std::string_view text);

// The byte length of the UTF-8 character whose lead byte is `lead` (1 for ASCII).
std::size_t utf8_sequence_length(unsigned char lead);

// The Unicode general category of a code point (utf8proc's data).
utf8proc_category_t unicode_category(char32_t c);

// A range of code points, first and last included: the tables of characters that one library
// or Unicode version classes differently from utf8proc's.
struct CodePointRange {
  char32_t first;
  char32_t last;
};

// Whether `c` falls in one of `ranges`, sorted by `first` and not overlapping.
template <std::size_t N>
bool in_ranges(const CodePointRange (&ranges)[N], char32_t c) {
  const auto* after = std::upper_bound(
      std::begin(ranges), std::end(ranges), c,
      [](char32_t value, const CodePointRange& range) { return value < range.first; });
  return after != std::begin(ranges) && c <= std::prev(after)->last;
}

// Length of the longest prefix of `bytes` that does not end inside a UTF-8 character, so that a
// stream of token bytes can be printed without ever printing half a character.
std::size_t complete_utf8_prefix(std::string_view bytes);

// ---- Python's str methods, which transformers' slow tokenizers call --------------------------

// str.isspace(): bidirectional class WS, B or S, or category Zs (so U+001C..U+001F, U+0085,
// U+2028 count, unlike the \s of the regex module).
bool is_python_space(char32_t c);

// str.isdigit(): the decimal digits (Nd) and the other digits (superscripts, circled digits, ...).
bool is_python_digit(char32_t c);

// Appends c.lower() of one character: its full lowercase mapping, which for U+0130 (capital I
// with dot above) is two characters.
void append_python_lower(std::u32string& out, char32_t c);

// text.lower() of a whole text: append_python_lower of every character, except that a capital
// sigma at the end of a word becomes the final sigma U+03C2.
std::u32string python_lower(std::u32string_view text);

// Python's str.strip().
std::u32string_view python_strip(std::u32string_view text);

// Python's str.replace(): every non-overlapping occurrence of `from`, left to right.
std::string python_replace(std::string_view text, std::string_view from, std::string_view to);

// python_strip and python_lower of UTF-8 text (sentence-transformers applies both to a text
// before its tokenizer sees it). Throw Error naming `what` at the first byte that is not UTF-8.
std::string python_strip(std::string_view text, std::string_view what);
std::string python_lower(std::string_view text, std::string_view what);

// ---- unicodedata
// ----------------------------------------------------------------------------------

enum class NormalForm { kNfc, kNfd, kNfkd };

// unicodedata.normalize().
std::u32string normalize(std::u32string_view text, NormalForm form);

// unicodedata.combining(): the canonical combining class, 0 for a character that does not combine.
int combining_class(char32_t c);

// BERT's _is_punctuation: all non-alphanumeric printable ASCII (so "$", "^", "`" count even though
// Unicode files them as symbols) plus every P* category.
bool is_bert_punctuation(char32_t c);

// ---- Rust's char methods, which the tokenizers library calls --------------------------------

// char::is_whitespace(): the White_Space property (so U+0085 and U+00A0 count, U+200B does not).
bool is_rust_whitespace(char32_t c);

// \w of Rust's regex crate (which the tokenizers library uses for its Whitespace pre-tokenizer
// and for the word boundaries of added tokens): Alphabetic, marks, decimal digits, connector
// punctuation and the joiners. Alphabetic is the letters, Nl and Other_Alphabetic, whose members
// outside the marks are the circled and squared Latin letters.
bool is_rust_word_char(char32_t c);

// Appends char::to_lowercase(c) as UTF-8: the full lowercase mapping of one character (U+0130
// becomes "i\u0307"), with the case pairs up to Unicode 17 that Rust's standard library knows.
void append_rust_lowercase(std::string& out, char32_t c);

}  // namespace attn

namespace attn {

// `bytes` with every invalid UTF-8 sequence replaced by U+FFFD, as Python's
// bytes.decode("utf-8", errors="replace") does (which Hugging Face's GPT-2 decode uses).
std::string replace_invalid_utf8(std::string_view bytes);

// The columns valid UTF-8 text takes on a terminal: 2 for a wide (East Asian) character, 0 for
// a combining mark, 1 for the rest; for lining up tables.
std::size_t display_width(std::string_view text);

}  // namespace attn
