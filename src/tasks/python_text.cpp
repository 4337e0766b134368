#include "src/tasks/python_text.h"

#include <utf8proc.h>

#include <vector>

#include "src/tokenizer/unicode.h"

namespace attn {
namespace {

utf8proc_category_t category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

// Python's str.isspace(): bidirectional class WS, B or S, or category Zs (CPython's
// _PyUnicode_IsWhitespace is generated from exactly these), plus U+001C..U+001F.
bool is_python_space(char32_t c) {
  if (c >= 0x1C && c <= 0x1F) return true;
  switch (utf8proc_get_property(static_cast<utf8proc_int32_t>(c))->bidi_class) {
    case UTF8PROC_BIDI_CLASS_WS:
    case UTF8PROC_BIDI_CLASS_B:
    case UTF8PROC_BIDI_CLASS_S:
      return true;
    default:
      return category(c) == UTF8PROC_CATEGORY_ZS;
  }
}

// Unicode's Case_Ignorable: marks, format characters, modifier letters and symbols, and the
// apostrophes and dots that may sit inside a word (Word_Break MidLetter, MidNumLet,
// Single_Quote).
bool is_case_ignorable(char32_t c) {
  switch (category(c)) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
      return true;
    default:
      break;
  }
  switch (c) {
    case 0x27:
    case 0x2E:
    case 0x3A:
    case 0xB7:
    case 0x387:
    case 0x55F:
    case 0x5F4:
    case 0x2018:
    case 0x2019:
    case 0x2024:
    case 0x2027:
    case 0xFE13:
    case 0xFE52:
    case 0xFE55:
    case 0xFF07:
    case 0xFF0E:
    case 0xFF1A:
      return true;
    default:
      return false;
  }
}

// Unicode's Cased: upper-, lower- and titlecase letters, and the other characters that have a
// case: those with a case mapping (Roman numerals, circled letters), and those without one, ª,
// º and the squared and negative circled or squared capitals U+1F130..U+1F189. (Modifier letters
// without a mapping are Cased too, but also Case_Ignorable, so is_final_sigma never asks.)
bool is_cased(char32_t c) {
  const utf8proc_category_t cat = category(c);
  if (cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT) {
    return true;
  }
  const auto code = static_cast<utf8proc_int32_t>(c);
  return utf8proc_tolower(code) != code || utf8proc_toupper(code) != code || c == 0xAA ||
         c == 0xBA || (c >= 0x1F130 && c <= 0x1F149) || (c >= 0x1F150 && c <= 0x1F169) ||
         (c >= 0x1F170 && c <= 0x1F189);
}

// Whether the capital sigma at text[i] ends a word, as CPython's handle_capital_sigma decides:
// a cased character before it and none after it, skipping case-ignorable ones both ways.
bool is_final_sigma(const std::vector<char32_t>& text, std::size_t i) {
  std::size_t before = i;
  while (before > 0 && is_case_ignorable(text[before - 1])) --before;
  if (before == 0 || !is_cased(text[before - 1])) return false;
  std::size_t after = i + 1;
  while (after < text.size() && is_case_ignorable(text[after])) ++after;
  return after == text.size() || !is_cased(text[after]);
}

}  // namespace

std::string python_strip(std::string_view text, std::string_view what) {
  const std::vector<char32_t> code_points = decode_utf8(text, what);
  std::size_t begin = 0;
  std::size_t end = code_points.size();
  while (begin < end && is_python_space(code_points[begin])) ++begin;
  while (end > begin && is_python_space(code_points[end - 1])) --end;
  return encode_utf8(
      std::vector<char32_t>(code_points.begin() + long(begin), code_points.begin() + long(end)));
}

std::string python_lower(std::string_view text, std::string_view what) {
  const std::vector<char32_t> code_points = decode_utf8(text, what);
  std::string lowered;
  lowered.reserve(text.size());
  for (std::size_t i = 0; i < code_points.size(); ++i) {
    const char32_t c = code_points[i];
    if (c == 0x130) {
      // The one unconditional lowercase mapping of SpecialCasing.txt that is not one character.
      append_utf8(lowered, U'i');
      append_utf8(lowered, 0x307);
    } else if (c == 0x3A3) {
      append_utf8(lowered, is_final_sigma(code_points, i) ? 0x3C2 : 0x3C3);
    } else {
      append_utf8(lowered, char32_t(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
    }
  }
  return lowered;
}

}  // namespace attn
