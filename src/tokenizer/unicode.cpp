#include "src/tokenizer/unicode.h"

#include <utf8proc.h>

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
  auto* data = reinterpret_cast<const utf8proc_uint8_t*>(bytes.data());
  const auto size = static_cast<utf8proc_ssize_t>(bytes.size());
  utf8proc_ssize_t pos = 0;
  while (pos < size) {
    utf8proc_int32_t code_point = 0;
    utf8proc_ssize_t length = utf8proc_iterate(data + pos, size - pos, &code_point);
    if (length < 0) {
      append_utf8(out, 0xFFFD);
      pos += 1;
    } else {
      out.append(bytes.substr(pos, length));
      pos += length;
    }
  }
  return out;
}

}  // namespace attn
