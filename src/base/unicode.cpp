#include "src/base/unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <utility>

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

std::size_t utf8_length(char32_t code_point) {
  return code_point < 0x80 ? 1 : code_point < 0x800 ? 2 : code_point < 0x10000 ? 3 : 4;
}

void append_utf8(std::string& out, char32_t code_point) {
  utf8proc_uint8_t buffer[4];
  utf8proc_ssize_t length = utf8proc_encode_char(static_cast<utf8proc_int32_t>(code_point), buffer);
  out.append(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(length));
}

std::string encode_utf8(std::u32string_view code_points) {
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

std::size_t utf8_sequence_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

utf8proc_category_t unicode_category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

// ---- Python's str methods ---------------------------------------------------------------------

namespace {

// The characters with Numeric_Type=Digit (Python 3.11, Unicode 14): str.isdigit() is true for
// them and for the decimal digits (Nd).
constexpr std::pair<char32_t, char32_t> kOtherDigits[] = {
    {0xB2, 0xB3},       {0xB9, 0xB9},       {0x1369, 0x1371},   {0x19DA, 0x19DA},
    {0x2070, 0x2070},   {0x2074, 0x2079},   {0x2080, 0x2089},   {0x2460, 0x2468},
    {0x2474, 0x247C},   {0x2488, 0x2490},   {0x24EA, 0x24EA},   {0x24F5, 0x24FD},
    {0x24FF, 0x24FF},   {0x2776, 0x277E},   {0x2780, 0x2788},   {0x278A, 0x2792},
    {0x10A40, 0x10A43}, {0x10E60, 0x10E68}, {0x11052, 0x1105A}, {0x1F100, 0x1F10A}};

// Unicode's Cased: upper-, lower- and titlecase letters, and the other characters that have a
// case: those with a case mapping (Roman numerals, circled letters), and those without one, ª,
// º and the squared and negative circled or squared capitals U+1F130..U+1F189. (Modifier letters
// without a mapping are Cased too, but also Case_Ignorable, so ends_a_word never asks.)
bool is_cased(char32_t c) {
  const utf8proc_category_t cat = unicode_category(c);
  if (cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT) {
    return true;
  }
  const auto code = static_cast<utf8proc_int32_t>(c);
  return utf8proc_tolower(code) != code || utf8proc_toupper(code) != code || c == 0xAA ||
         c == 0xBA || (c >= 0x1F130 && c <= 0x1F149) || (c >= 0x1F150 && c <= 0x1F169) ||
         (c >= 0x1F170 && c <= 0x1F189);
}

// Unicode's Case_Ignorable property: marks, format characters, modifier letters and symbols, and
// the apostrophes, periods and colons that may sit inside a word (Word_Break MidLetter,
// MidNumLet, Single_Quote).
bool is_case_ignorable(char32_t c) {
  static constexpr char32_t kInsideWord[] = {0x27,   0x2E,   0x3A,   0xB7,   0x387,  0x55F,
                                             0x5F4,  0x2018, 0x2019, 0x2024, 0x2027, 0xFE13,
                                             0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A};
  switch (unicode_category(c)) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
      return true;
    default:
      return std::find(std::begin(kInsideWord), std::end(kInsideWord), c) != std::end(kInsideWord);
  }
}

// Python's Final_Sigma context for the capital sigma at text[i]: a cased letter before it and
// none after it, skipping case-ignorable characters on both sides.
bool ends_a_word(std::u32string_view text, std::size_t i) {
  std::size_t before = i;
  while (before > 0 && is_case_ignorable(text[before - 1])) --before;
  if (before == 0 || !is_cased(text[before - 1])) return false;
  std::size_t after = i + 1;
  while (after < text.size() && is_case_ignorable(text[after])) ++after;
  return after == text.size() || !is_cased(text[after]);
}

}  // namespace

bool is_python_space(char32_t c) {
  if (c >= 0x1C && c <= 0x1F) return true;
  switch (utf8proc_get_property(static_cast<utf8proc_int32_t>(c))->bidi_class) {
    case UTF8PROC_BIDI_CLASS_WS:
    case UTF8PROC_BIDI_CLASS_B:
    case UTF8PROC_BIDI_CLASS_S:
      return true;
    default:
      return unicode_category(c) == UTF8PROC_CATEGORY_ZS;
  }
}

bool is_python_digit(char32_t c) {
  if (unicode_category(c) == UTF8PROC_CATEGORY_ND) return true;
  return std::any_of(std::begin(kOtherDigits), std::end(kOtherDigits),
                     [c](const auto& range) { return c >= range.first && c <= range.second; });
}

void append_python_lower(std::u32string& out, char32_t c) {
  if (c == 0x130) {
    out += U"i\u0307";
    return;
  }
  out.push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
}

std::u32string python_lower(std::u32string_view text) {
  constexpr char32_t kCapitalSigma = 0x3A3;
  constexpr char32_t kFinalSigma = 0x3C2;
  std::u32string lowered;
  lowered.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == kCapitalSigma && ends_a_word(text, i)) {
      lowered.push_back(kFinalSigma);
    } else {
      append_python_lower(lowered, text[i]);
    }
  }
  return lowered;
}

std::u32string_view python_strip(std::u32string_view text) {
  while (!text.empty() && is_python_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_python_space(text.back())) text.remove_suffix(1);
  return text;
}

std::string python_replace(std::string_view text, std::string_view from, std::string_view to) {
  std::string replaced;
  std::size_t position = 0;
  for (std::size_t hit; (hit = text.find(from, position)) != std::string_view::npos;) {
    replaced.append(text, position, hit - position).append(to);
    position = hit + from.size();
  }
  replaced.append(text, position);
  return replaced;
}

std::string python_strip(std::string_view text, std::string_view what) {
  const std::vector<char32_t> code_points = decode_utf8(text, what);
  return encode_utf8(python_strip(std::u32string_view(code_points.data(), code_points.size())));
}

std::string python_lower(std::string_view text, std::string_view what) {
  const std::vector<char32_t> code_points = decode_utf8(text, what);
  return encode_utf8(python_lower(std::u32string_view(code_points.data(), code_points.size())));
}

// ---- unicodedata --------------------------------------------------------------------------------

std::u32string normalize(std::u32string_view text, NormalForm form) {
  std::string utf8;
  utf8.reserve(text.size());
  for (char32_t c : text) append_utf8(utf8, c);
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::kNfc:
      options |= UTF8PROC_COMPOSE;
      break;
    case NormalForm::kNfd:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case NormalForm::kNfkd:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t length = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t*>(utf8.data()),
      static_cast<utf8proc_ssize_t>(utf8.size()), &mapped, static_cast<utf8proc_option_t>(options));
  if (length < 0) {
    throw Error(std::string("text: Unicode normalization failed: ") + utf8proc_errmsg(length));
  }
  const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owner(mapped, &std::free);
  const std::vector<char32_t> code_points = decode_utf8(
      std::string_view(reinterpret_cast<const char*>(mapped), static_cast<std::size_t>(length)),
      "normalized text");
  return std::u32string(code_points.begin(), code_points.end());
}

int combining_class(char32_t c) {
  return utf8proc_get_property(static_cast<utf8proc_int32_t>(c))->combining_class;
}

bool is_bert_punctuation(char32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
      (c >= 123 && c <= 126)) {
    return true;
  }
  const utf8proc_category_t category = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return category >= UTF8PROC_CATEGORY_PC && category <= UTF8PROC_CATEGORY_PO;
}

// ---- Rust's char methods ----------------------------------------------------------------------

bool is_rust_whitespace(char32_t c) {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D);
  switch (c) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

bool is_rust_word_char(char32_t c) {
  if (c < 0x80) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      break;
  }
  const bool joiner = c == 0x200C || c == 0x200D;
  const bool enclosed_letter = (c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) ||
                               (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189);
  return joiner || enclosed_letter;
}

namespace {

// Lowercase mappings of Unicode 16 and 17, which Rust's standard library has and utf8proc 2.8
// (Unicode 15) does not: [first, last] maps to code point + offset.
struct CaseRange {
  char32_t first;
  char32_t last;
  std::int32_t offset;
};
constexpr CaseRange kNewerLowercase[] = {{0x1C89, 0x1C89, 1},      {0xA7CB, 0xA7CB, 0x264 - 0xA7CB},
                                         {0xA7CC, 0xA7CC, 1},      {0xA7CE, 0xA7CE, 1},
                                         {0xA7D2, 0xA7D2, 1},      {0xA7D4, 0xA7D4, 1},
                                         {0xA7DA, 0xA7DA, 1},      {0xA7DC, 0xA7DC, 0x19B - 0xA7DC},
                                         {0x10D50, 0x10D65, 0x20}, {0x16EA0, 0x16EB8, 0x1B}};

}  // namespace

void append_rust_lowercase(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c));
    return;
  }
  // The one unconditional multi-character lowercase mapping of SpecialCasing.txt.
  if (c == 0x130) {
    out += "i\u0307";
    return;
  }
  for (const CaseRange& range : kNewerLowercase) {
    if (c >= range.first && c <= range.last) {
      append_utf8(out, static_cast<char32_t>(static_cast<std::int32_t>(c) + range.offset));
      return;
    }
  }
  append_utf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
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

std::size_t display_width(std::string_view text) {
  std::size_t width = 0;
  for (char32_t c : decode_utf8(text, "text")) width += std::max(0, utf8proc_charwidth(c));
  return width;
}

}  // namespace attn
