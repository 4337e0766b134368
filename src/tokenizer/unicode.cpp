#include "src/tokenizer/unicode.h"

#include <utf8proc.h>

#include <algorithm>

#include "src/base/error.h"

namespace attn {

std::vector<char32_t> decode_utf8(std::string_view text, std::string_view what) {
  std::vector<char32_t> code_points;
  code_points.reserve(text.size());
  auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t pos = 0;
  const auto size = static_cast<utf8proc_ssize_t>(text.size());
  while (pos < size) {
    utf8proc_int32_t code_point = 0;
    utf8proc_ssize_t length = utf8proc_iterate(bytes + pos, size - pos, &code_point);
    if (length < 0) {
      throw Error(std::string(what) + ": invalid UTF-8 at byte " + std::to_string(pos));
    }
    code_points.push_back(static_cast<char32_t>(code_point));
    pos += length;
  }
  return code_points;
}

void append_utf8(std::string& out, char32_t code_point) {
  utf8proc_uint8_t buffer[4];
  utf8proc_ssize_t length = utf8proc_encode_char(static_cast<utf8proc_int32_t>(code_point), buffer);
  out.append(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(length));
}

std::string encode_utf8(const std::vector<char32_t>& code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (char32_t code_point : code_points) append_utf8(out, code_point);
  return out;
}

bool is_valid_utf8(std::string_view text) {
  auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t pos = 0;
  const auto size = static_cast<utf8proc_ssize_t>(text.size());
  while (pos < size) {
    utf8proc_int32_t code_point = 0;
    utf8proc_ssize_t length = utf8proc_iterate(bytes + pos, size - pos, &code_point);
    if (length < 0) return false;
    pos += length;
  }
  return true;
}

std::size_t complete_utf8_prefix(std::string_view bytes) {
  // Look back at most 3 bytes for the lead byte of the last character.
  std::size_t end = bytes.size();
  for (std::size_t back = 1; back <= 4 && back <= end; ++back) {
    auto byte = static_cast<unsigned char>(bytes[end - back]);
    if ((byte & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    std::size_t needed = byte < 0x80 ? 1 : (byte >> 5) == 0x6 ? 2 : (byte >> 4) == 0xE ? 3 : 4;
    return needed > back ? end - back : end;
  }
  return end;
}

}  // namespace attn

namespace attn {

std::string replace_invalid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const auto lead = static_cast<unsigned char>(bytes[pos]);
    // The sequence length and the allowed range of the second byte (Unicode Table 3-7: it
    // excludes overlong forms, surrogates and code points past U+10FFFF); later bytes are
    // 80..BF. Bytes 80..C1 and F5..FF never start a character.
    int length = 0;
    unsigned char second_min = 0x80, second_max = 0xBF;
    if (lead < 0x80) {
      length = 1;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) second_min = 0xA0;
      if (lead == 0xED) second_max = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) second_min = 0x90;
      if (lead == 0xF4) second_max = 0x8F;
    }
    // The longest prefix of a valid sequence starting here (the "maximal subpart"): when it
    // is incomplete, all of it becomes one U+FFFD, as Python's decode(errors="replace") does.
    int valid = length == 0 ? 0 : 1;
    while (valid > 0 && valid < length && pos + valid < bytes.size()) {
      const auto byte = static_cast<unsigned char>(bytes[pos + valid]);
      const bool in_range =
          valid == 1 ? byte >= second_min && byte <= second_max : byte >= 0x80 && byte <= 0xBF;
      if (!in_range) break;
      ++valid;
    }
    if (length > 0 && valid == length) {
      out.append(bytes.substr(pos, length));
      pos += length;
    } else {
      append_utf8(out, 0xFFFD);
      pos += std::max(valid, 1);
    }
  }
  return out;
}

}  // namespace attn
