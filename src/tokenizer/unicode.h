#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// Decodes UTF-8 into code points. Throws Error naming `what` (e.g. "prompt") at the first
// invalid byte sequence.
std::vector<char32_t> decode_utf8(std::string_view text, std::string_view what);

// Appends the UTF-8 encoding of one code point.
void append_utf8(std::string& out, char32_t code_point);

std::string encode_utf8(const std::vector<char32_t>& code_points);

// Whether `text` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool is_valid_utf8(std::string_view text);

// Length of the longest prefix of `bytes` that does not end inside a UTF-8 character, so that a
// stream of token bytes can be printed without ever printing half a character.
std::size_t complete_utf8_prefix(std::string_view bytes);

}  // namespace attn

namespace attn {

// `bytes` with every invalid UTF-8 sequence replaced by U+FFFD, as Python's
// bytes.decode("utf-8", errors="replace") does (which Hugging Face's GPT-2 decode uses).
std::string replace_invalid_utf8(std::string_view bytes);

}  // namespace attn
