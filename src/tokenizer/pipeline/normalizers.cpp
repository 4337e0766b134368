#include "src/tokenizer/pipeline/normalizers.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/base/error.h"
#include "src/base/unicode.h"
#include "src/tokenizer/pipeline/alignment.h"
#include "src/tokenizer/pipeline/precompiled.h"
#include "src/tokenizer/pipeline/regex.h"

namespace attn::pipeline {

namespace {

// ---- Text helpers -------------------------------------------------------------------------------

// Rewrites `text` character by character: `rewrite(c, out)` appends what c becomes.
template <typename Rewrite>
void rewrite_characters(std::string& text, Rewrite rewrite) {
  std::string result;
  result.reserve(text.size() + text.size() / 8);
  for (std::size_t pos = 0; pos < text.size();) rewrite(next_code_point(text, pos), result);
  text = std::move(result);
}

void append_rust_lowercase_to(char32_t c, std::string& out) { append_rust_lowercase(out, c); }

// Removes the characters for which `remove(c)` holds, in place; `origin`, when not null, follows
// (the characters kept keep theirs).
template <typename Predicate>
void remove_characters(std::string& text, Predicate remove,
                       std::vector<ByteSpan>* origin = nullptr) {
  std::size_t kept = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t start = pos;
    if (remove(next_code_point(text, pos))) continue;
    std::copy(text.begin() + static_cast<std::ptrdiff_t>(start),
              text.begin() + static_cast<std::ptrdiff_t>(pos),
              text.begin() + static_cast<std::ptrdiff_t>(kept));
    if (origin) {
      std::copy(origin->begin() + static_cast<std::ptrdiff_t>(start),
                origin->begin() + static_cast<std::ptrdiff_t>(pos),
                origin->begin() + static_cast<std::ptrdiff_t>(kept));
    }
    kept += pos - start;
  }
  text.resize(kept);
  if (origin) origin->resize(kept);
}

// ---- The Unicode tables of the library's crates -------------------------------------------------
//
// The tokenizers library normalizes with unicode-normalization-alignments (Unicode 9.0 tables)
// and classifies with unicode_categories (Unicode 8.0 tables), while utf8proc 2.8 knows Unicode
// 15.0. These ranges are where the two disagree, found by running each normalizer of tokenizers
// 0.23.2 on every code point and comparing with utf8proc.

// Characters newer than Unicode 9.0 that normalization would change (a decomposition, a
// combining class, or a part in another's composition) if utf8proc handled them; the library
// leaves them as they are, and each is a starter that nothing composes with.
constexpr CodePointRange kUnknownToNormalization[] = {
    {0x7FD, 0x7FD},     {0x898, 0x89F},     {0x8CA, 0x8D3},     {0x9FE, 0x9FE},
    {0xC3C, 0xC3C},     {0xD3B, 0xD3C},     {0xEBA, 0xEBA},     {0x1715, 0x1715},
    {0x1ABF, 0x1ACE},   {0x1DF6, 0x1DFA},   {0x32FF, 0x32FF},   {0xA7F2, 0xA7F4},
    {0xA82C, 0xA82C},   {0xAB69, 0xAB69},   {0x10781, 0x10785}, {0x10787, 0x107B0},
    {0x107B2, 0x107BA}, {0x10D24, 0x10D27}, {0x10EAB, 0x10EAC}, {0x10EFD, 0x10EFF},
    {0x10F46, 0x10F50}, {0x10F82, 0x10F85}, {0x11070, 0x11070}, {0x1133B, 0x1133B},
    {0x1145E, 0x1145E}, {0x11839, 0x1183A}, {0x11930, 0x11930}, {0x11935, 0x11935},
    {0x11938, 0x11938}, {0x1193D, 0x1193E}, {0x11943, 0x11943}, {0x119E0, 0x119E0},
    {0x11A34, 0x11A34}, {0x11A47, 0x11A47}, {0x11A99, 0x11A99}, {0x11D42, 0x11D42},
    {0x11D44, 0x11D45}, {0x11D97, 0x11D97}, {0x11F41, 0x11F42}, {0x16FF0, 0x16FF1},
    {0x1E030, 0x1E06D}, {0x1E08F, 0x1E08F}, {0x1E130, 0x1E136}, {0x1E2AE, 0x1E2AE},
    {0x1E2EC, 0x1E2EF}, {0x1E4EC, 0x1E4EF}, {0x1F16C, 0x1F16C}, {0x1FBF0, 0x1FBF9}};

// Marks (category M) that are not marks in Unicode 9.0: StripAccents keeps them.
constexpr CodePointRange kMarksUnknownToStripAccents[] = {
    {0x7FD, 0x7FD},     {0x898, 0x89F},     {0x8CA, 0x8D3},     {0x9FE, 0x9FE},
    {0xAFA, 0xAFF},     {0xB55, 0xB55},     {0xC04, 0xC04},     {0xC3C, 0xC3C},
    {0xCF3, 0xCF3},     {0xD00, 0xD00},     {0xD3B, 0xD3C},     {0xD81, 0xD81},
    {0xEBA, 0xEBA},     {0xECE, 0xECE},     {0x1715, 0x1715},   {0x180F, 0x180F},
    {0x1ABF, 0x1ACE},   {0x1CF7, 0x1CF7},   {0x1DF6, 0x1DFA},   {0xA82C, 0xA82C},
    {0xA8FF, 0xA8FF},   {0x10D24, 0x10D27}, {0x10EAB, 0x10EAC}, {0x10EFD, 0x10EFF},
    {0x10F46, 0x10F50}, {0x10F82, 0x10F85}, {0x11070, 0x11070}, {0x11073, 0x11074},
    {0x110C2, 0x110C2}, {0x11145, 0x11146}, {0x111C9, 0x111C9}, {0x111CE, 0x111CF},
    {0x11241, 0x11241}, {0x1133B, 0x1133B}, {0x1145E, 0x1145E}, {0x1182C, 0x1183A},
    {0x11930, 0x11935}, {0x11937, 0x11938}, {0x1193B, 0x1193E}, {0x11940, 0x11940},
    {0x11942, 0x11943}, {0x119D1, 0x119D7}, {0x119DA, 0x119E0}, {0x119E4, 0x119E4},
    {0x11A01, 0x11A0A}, {0x11A33, 0x11A39}, {0x11A3B, 0x11A3E}, {0x11A47, 0x11A47},
    {0x11A51, 0x11A5B}, {0x11A8A, 0x11A99}, {0x11D31, 0x11D36}, {0x11D3A, 0x11D3A},
    {0x11D3C, 0x11D3D}, {0x11D3F, 0x11D45}, {0x11D47, 0x11D47}, {0x11D8A, 0x11D8E},
    {0x11D90, 0x11D91}, {0x11D93, 0x11D97}, {0x11EF3, 0x11EF6}, {0x11F00, 0x11F01},
    {0x11F03, 0x11F03}, {0x11F34, 0x11F3A}, {0x11F3E, 0x11F42}, {0x13440, 0x13440},
    {0x13447, 0x13455}, {0x16F4F, 0x16F4F}, {0x16F7F, 0x16F87}, {0x16FE4, 0x16FE4},
    {0x16FF0, 0x16FF1}, {0x1CF00, 0x1CF2D}, {0x1CF30, 0x1CF46}, {0x1E08F, 0x1E08F},
    {0x1E130, 0x1E136}, {0x1E2AE, 0x1E2AE}, {0x1E2EC, 0x1E2EF}, {0x1E4EC, 0x1E4EF}};

// Nonspacing marks (Mn) that are not Mn in Unicode 8.0: BertNormalizer's strip_accents keeps
// them.
constexpr CodePointRange kNonspacingMarksUnknownToBert[] = {
    {0x7FD, 0x7FD},     {0x898, 0x89F},     {0x8CA, 0x8E1},     {0x9FE, 0x9FE},
    {0xAFA, 0xAFF},     {0xB55, 0xB55},     {0xC04, 0xC04},     {0xC3C, 0xC3C},
    {0xD00, 0xD00},     {0xD3B, 0xD3C},     {0xD81, 0xD81},     {0xEBA, 0xEBA},
    {0xECE, 0xECE},     {0x180F, 0x180F},   {0x1885, 0x1886},   {0x1ABF, 0x1ACE},
    {0x1DF6, 0x1DFB},   {0xA82C, 0xA82C},   {0xA8C5, 0xA8C5},   {0xA8FF, 0xA8FF},
    {0xA9BD, 0xA9BD},   {0x10D24, 0x10D27}, {0x10EAB, 0x10EAC}, {0x10EFD, 0x10EFF},
    {0x10F46, 0x10F50}, {0x10F82, 0x10F85}, {0x11070, 0x11070}, {0x11073, 0x11074},
    {0x110C2, 0x110C2}, {0x111C9, 0x111C9}, {0x111CF, 0x111CF}, {0x1123E, 0x1123E},
    {0x11241, 0x11241}, {0x1133B, 0x1133B}, {0x11438, 0x1143F}, {0x11442, 0x11444},
    {0x11446, 0x11446}, {0x1145E, 0x1145E}, {0x1182F, 0x11837}, {0x11839, 0x1183A},
    {0x1193B, 0x1193C}, {0x1193E, 0x1193E}, {0x11943, 0x11943}, {0x119D4, 0x119D7},
    {0x119DA, 0x119DB}, {0x119E0, 0x119E0}, {0x11A01, 0x11A0A}, {0x11A33, 0x11A38},
    {0x11A3B, 0x11A3E}, {0x11A47, 0x11A47}, {0x11A51, 0x11A56}, {0x11A59, 0x11A5B},
    {0x11A8A, 0x11A96}, {0x11A98, 0x11A99}, {0x11C30, 0x11C36}, {0x11C38, 0x11C3D},
    {0x11C3F, 0x11C3F}, {0x11C92, 0x11CA7}, {0x11CAA, 0x11CB0}, {0x11CB2, 0x11CB3},
    {0x11CB5, 0x11CB6}, {0x11D31, 0x11D36}, {0x11D3A, 0x11D3A}, {0x11D3C, 0x11D3D},
    {0x11D3F, 0x11D45}, {0x11D47, 0x11D47}, {0x11D90, 0x11D91}, {0x11D95, 0x11D95},
    {0x11D97, 0x11D97}, {0x11EF3, 0x11EF4}, {0x11F00, 0x11F01}, {0x11F36, 0x11F3A},
    {0x11F40, 0x11F40}, {0x11F42, 0x11F42}, {0x13440, 0x13440}, {0x13447, 0x13455},
    {0x16F4F, 0x16F4F}, {0x16FE4, 0x16FE4}, {0x1CF00, 0x1CF2D}, {0x1CF30, 0x1CF46},
    {0x1E000, 0x1E006}, {0x1E008, 0x1E018}, {0x1E01B, 0x1E021}, {0x1E023, 0x1E024},
    {0x1E026, 0x1E02A}, {0x1E08F, 0x1E08F}, {0x1E130, 0x1E136}, {0x1E2AE, 0x1E2AE},
    {0x1E2EC, 0x1E2EF}, {0x1E4EC, 0x1E4EF}, {0x1E944, 0x1E94A}};

// Format characters (Cf) that are not assigned in Unicode 8.0: BertNormalizer's clean_text
// keeps them.
constexpr CodePointRange kFormatCharactersUnknownToBert[] = {
    {0x890, 0x891}, {0x8E2, 0x8E2}, {0x110CD, 0x110CD}, {0x13430, 0x1343F}};

// StripAccents' test, unicode-normalization's is_combining_mark: category M in Unicode 9.0
// (where U+1CF2 and U+1CF3 were still spacing marks).
bool is_library_combining_mark(char32_t c) {
  if (c < 0x300) return false;
  switch (unicode_category(c)) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
      return !in_ranges(kMarksUnknownToStripAccents, c);
    default:
      return c == 0x1CF2 || c == 0x1CF3;
  }
}

// BertNormalizer's strip_accents test, unicode_categories' is_mark_nonspacing: category Mn in
// Unicode 8.0 (where U+1734 was still nonspacing).
bool is_library_nonspacing_mark(char32_t c) {
  if (c < 0x300) return false;
  if (unicode_category(c) == UTF8PROC_CATEGORY_MN) {
    return !in_ranges(kNonspacingMarksUnknownToBert, c);
  }
  return c == 0x1734;
}

// BertNormalizer's is_control: unicode_categories' is_other (Cc, Cf, Co, Cs of Unicode 8.0;
// unassigned characters are not "other" there) except tab, newline and carriage return.
bool is_bert_control(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  switch (unicode_category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CS:
      return true;
    case UTF8PROC_CATEGORY_CF:
      return !in_ranges(kFormatCharactersUnknownToBert, c);
    default:
      return false;
  }
}

bool is_bert_chinese_character(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// ---- Unicode normalization forms ----------------------------------------------------------------

enum class Form { kNfc, kNfd, kNfkc, kNfkd };

utf8proc_option_t utf8proc_options(Form form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
    case Form::kNfc:
      options |= UTF8PROC_COMPOSE;
      break;
    case Form::kNfd:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case Form::kNfkc:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case Form::kNfkd:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  return static_cast<utf8proc_option_t>(options);
}

void append_normalized(std::string& out, std::string_view text, utf8proc_option_t options) {
  if (text.empty()) return;
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t length =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &mapped, options);
  if (length < 0) {
    throw Error(std::string("normalizer: Unicode normalization failed: ") +
                utf8proc_errmsg(length));
  }
  out.append(reinterpret_cast<const char*>(mapped), static_cast<std::size_t>(length));
  std::free(mapped);
}

// Whether normalizing to `form` leaves `c` as it is whatever surrounds it (Unicode's quick check
// answering "yes", and more): a starter that does not decompose and never composes with the
// character before it. Hangul syllables and jamo decompose and compose by arithmetic, outside
// utf8proc's tables.
bool is_stable(char32_t c, Form form) {
  if (c < 0x80) return true;
  const bool composes = form == Form::kNfc || form == Form::kNfkc;
  if (c >= 0x1100 && c <= 0x11FF) return false;
  if (c >= 0xAC00 && c <= 0xD7A3) return composes;
  const utf8proc_property_t* property = utf8proc_get_property(static_cast<utf8proc_int32_t>(c));
  if (property->combining_class != 0) return false;
  constexpr utf8proc_uint16_t kNone = UINT16_MAX;
  const bool compatibility = form == Form::kNfkc || form == Form::kNfkd;
  if (property->decomp_seqindex != kNone && (compatibility || property->decomp_type == 0)) {
    return false;
  }
  // utf8proc marks the second character of a composition pair with the high bit.
  return !composes || property->comb_index == kNone || (property->comb_index & 0x8000) == 0;
}

// Appends `span` in `form` as the library's Unicode 9.0 tables give it. A character those tables
// do not know is a starter that composes with nothing, so normalization never crosses it: the
// span is normalized piece by piece between such characters, which stay as they are.
void append_normalized_span(std::string& out, std::string_view span, Form form) {
  const utf8proc_option_t options = utf8proc_options(form);
  std::size_t piece_start = 0;
  for (std::size_t pos = 0; pos < span.size();) {
    const std::size_t start = pos;
    const char32_t c = next_code_point(span, pos);
    if (c < 0x7FD || !in_ranges(kUnknownToNormalization, c)) continue;
    append_normalized(out, span.substr(piece_start, start - piece_start), options);
    out.append(span.substr(start, pos - start));
    piece_start = pos;
  }
  append_normalized(out, span.substr(piece_start), options);
}

// Rewrites `text` in `form`. Only the spans around unstable characters go through utf8proc: from
// the stable character before them (which they may compose with) to the next stable one.
void normalize_form(std::string& text, Form form) {
  if (is_ascii(text)) return;
  std::string result;
  std::size_t copied_until = 0;
  std::size_t last_stable_start = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t start = pos;
    if (is_stable(next_code_point(text, pos), form)) {
      last_stable_start = start;
      continue;
    }
    while (pos < text.size()) {
      std::size_t next = pos;
      if (is_stable(next_code_point(text, next), form)) break;
      pos = next;
    }
    if (result.empty()) result.reserve(text.size() + text.size() / 4);
    result.append(text, copied_until, last_stable_start - copied_until);
    append_normalized_span(
        result, std::string_view(text).substr(last_stable_start, pos - last_stable_start), form);
    copied_until = pos;
    last_stable_start = pos;
  }
  if (copied_until == 0) return;  // every character is stable
  result.append(text, copied_until);
  text = std::move(result);
}

// ---- Unicode normalization forms with their origin ----------------------------------------------
//
// The library's nfd() and nfc() take (char, change) pairs from unicode-normalization-alignments,
// and the origin of each character follows from the changes (apply_changes). That crate
// decomposes each character (its first character replacing it, the rest inserted), sorts each
// run of non-starters by combining class (a change travels with its character, so that after
// reordering the changes are positional, not tied to the characters they came from), and, for
// the composed forms, composes with the state machine below, a composed character's change
// being the sum of its parts' changes minus one.

struct DecomposedChar {
  char32_t character;
  int combining_class;
  int change;
};

bool is_unknown_to_normalization(char32_t c) {
  return c >= 0x7FD && in_ranges(kUnknownToNormalization, c);
}

int library_combining_class(char32_t c) {
  return c < 0x300 || is_unknown_to_normalization(c) ? 0 : combining_class(c);
}

// The decomposition of `c` under `options` (UTF8PROC_DECOMPOSE, maybe with UTF8PROC_COMPAT),
// written into `parts`; returns its length.
std::size_t decompose_char(char32_t c, utf8proc_option_t options,
                           std::array<utf8proc_int32_t, 32>& parts) {
  int boundclass = 0;
  const utf8proc_ssize_t count =
      utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), parts.data(),
                              static_cast<utf8proc_ssize_t>(parts.size()), options, &boundclass);
  if (count <= 0 || count > static_cast<utf8proc_ssize_t>(parts.size())) {
    throw Error("normalizer: Unicode decomposition failed");
  }
  return static_cast<std::size_t>(count);
}

void decompose_with_changes(std::string_view text, bool compatibility,
                            std::vector<DecomposedChar>& out) {
  const auto options =
      static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE | (compatibility ? UTF8PROC_COMPAT : 0));
  std::size_t unsorted_from = 0;
  const auto sort_pending = [&] {
    // std::stable_sort allocates a buffer even for one element, and most runs are one starter.
    if (out.size() - unsorted_from > 1) {
      std::stable_sort(out.begin() + static_cast<std::ptrdiff_t>(unsorted_from), out.end(),
                       [](const DecomposedChar& a, const DecomposedChar& b) {
                         return a.combining_class < b.combining_class;
                       });
    }
    unsorted_from = out.size();
  };
  // Below these no character decomposes: U+00C0 canonically (À), U+00A0 with compatibility
  // (no-break space to a space, "²" to "2", "¼" to "1⁄4").
  const char32_t first_decomposable = compatibility ? 0xA0 : 0xC0;
  std::array<utf8proc_int32_t, 32> parts{};
  for (std::size_t pos = 0; pos < text.size();) {
    const char32_t c = next_code_point(text, pos);
    std::size_t count = 1;
    parts[0] = static_cast<utf8proc_int32_t>(c);
    if (c >= first_decomposable && !is_unknown_to_normalization(c)) {
      count = decompose_char(c, options, parts);
    }
    for (std::size_t i = 0; i < count; ++i) {
      const auto part = static_cast<char32_t>(parts[i]);
      const int part_class = library_combining_class(part);
      if (part_class == 0) sort_pending();
      out.push_back({part, part_class, i == 0 ? 0 : 1});
    }
  }
  sort_pending();
}

// The canonical decomposition of `c`, in full, as UTF-32.
std::u32string full_decomposition(char32_t c) {
  std::array<utf8proc_int32_t, 32> parts{};
  const std::size_t count = decompose_char(c, UTF8PROC_DECOMPOSE, parts);
  return std::u32string(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(count));
}

// The primary composite of `first` and `second` (Unicode's canonical composition of a pair, not
// excluded from composition), or 0 when there is none.
char32_t compose_pair(char32_t first, char32_t second) {
  // Hangul: L + V -> LV, LV + T -> LVT.
  if (first >= 0x1100 && first < 0x1113 && second >= 0x1161 && second < 0x1176) {
    return 0xAC00 + ((first - 0x1100) * 21 + (second - 0x1161)) * 28;
  }
  if (first >= 0xAC00 && first <= 0xD7A3 && (first - 0xAC00) % 28 == 0 && second > 0x11A7 &&
      second < 0x11C3) {
    return first + (second - 0x11A7);
  }
  if (is_unknown_to_normalization(first) || is_unknown_to_normalization(second)) return 0;
  // utf8proc marks the second character of a composition pair with the high bit.
  const utf8proc_property_t* property =
      utf8proc_get_property(static_cast<utf8proc_int32_t>(second));
  if (property->comb_index == UINT16_MAX || (property->comb_index & 0x8000) == 0) return 0;
  std::string pair;
  append_utf8(pair, first);
  append_utf8(pair, second);
  std::string composed;
  append_normalized(composed, pair, utf8proc_options(Form::kNfc));
  std::size_t pos = 0;
  const char32_t result = next_code_point(composed, pos);
  if (pos != composed.size()) return 0;
  // NFC of the pair may also reorder marks inside `first`; only a composite whose decomposition
  // is first's followed by second is the pair's.
  std::u32string expected = full_decomposition(first);
  expected.push_back(second);
  return full_decomposition(result) == expected ? result : 0;
}

// unicode-normalization-alignments' Recompositions over `decomposed`.
void recompose_with_changes(const std::vector<DecomposedChar>& decomposed,
                            std::vector<CharChange>& out) {
  std::optional<CharChange> composee;
  int last_class = -1;              // of the last blocked mark; -1 when none is waiting
  std::vector<CharChange> blocked;  // non-starters waiting after the composee
  const auto flush = [&] {
    if (composee) out.push_back(*composee);
    out.insert(out.end(), blocked.begin(), blocked.end());
    blocked.clear();
  };
  for (const auto& [character, character_class, change] : decomposed) {
    if (!composee) {
      if (character_class != 0) {
        out.push_back({character, change});
        continue;
      }
      composee = CharChange{character, change};
      continue;
    }
    if (last_class < character_class) {
      if (const char32_t composed = compose_pair(composee->character, character)) {
        composee = CharChange{composed, composee->change + change - 1};
        continue;
      }
      if (last_class < 0 && character_class == 0) {
        out.push_back(*composee);
        composee = CharChange{character, change};
        continue;
      }
      blocked.push_back({character, change});
      last_class = character_class;
      continue;
    }
    // Blocked from the composee by a mark of the same or a higher class.
    if (character_class == 0) {
      flush();
      composee = CharChange{character, change};
      last_class = -1;
      continue;
    }
    blocked.push_back({character, change});
    last_class = character_class;
  }
  flush();
}

// Whether normalizing to `form` leaves `text` as it is, every character being stable.
bool is_stable_text(std::string_view text, Form form) {
  if (is_ascii(text)) return true;
  for (std::size_t pos = 0; pos < text.size();) {
    if (!is_stable(next_code_point(text, pos), form)) return false;
  }
  return true;
}

void normalize_form_aligned(std::string& text, std::vector<ByteSpan>& origin, Form form) {
  // A stable character decomposes to itself and composes with nothing: its change is 0, so it
  // keeps its origin.
  if (is_stable_text(text, form)) return;
  const bool compatibility = form == Form::kNfkc || form == Form::kNfkd;
  std::vector<DecomposedChar> decomposed;
  decompose_with_changes(text, compatibility, decomposed);
  std::vector<CharChange> changes;
  changes.reserve(decomposed.size());
  if (form == Form::kNfd || form == Form::kNfkd) {
    for (const auto& [character, unused, change] : decomposed)
      changes.push_back({character, change});
  } else {
    recompose_with_changes(decomposed, changes);
  }
  apply_changes(text, origin, changes, 0);
}

// ---- Normalizers -------------------------------------------------------------------------------

class UnicodeForm : public Normalizer {
 public:
  explicit UnicodeForm(Form form) : form_(form) {}
  void normalize(std::string& text) const override { normalize_form(text, form_); }
  void normalize_aligned(std::string& text, std::vector<ByteSpan>& origin,
                         std::uint32_t) const override {
    normalize_form_aligned(text, origin, form_);
  }

 private:
  Form form_;
};

// The library lowercases character by character (char::to_lowercase), so a final capital sigma
// becomes σ, not ς as str::to_lowercase would make it.
void lowercase(std::string& text) {
  if (is_ascii(text)) {
    for (char& c : text) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + ('a' - 'A'));
    }
    return;
  }
  rewrite_characters(text, append_rust_lowercase_to);
}

void lowercase_aligned(std::string& text, std::vector<ByteSpan>& origin) {
  // ASCII letters keep their length, and so their origin.
  if (is_ascii(text)) return lowercase(text);
  rewrite_aligned(text, origin, append_rust_lowercase_to);
}

class Lowercase : public Normalizer {
 public:
  void normalize(std::string& text) const override { lowercase(text); }
  void normalize_aligned(std::string& text, std::vector<ByteSpan>& origin,
                         std::uint32_t) const override {
    lowercase_aligned(text, origin);
  }
};

class Strip : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}

  void normalize(std::string& text) const override {
    const auto [begin, end] = kept_bytes(text);
    text.resize(end);
    text.erase(0, begin);
  }

  // The characters kept keep their origin (the library's lrstrip).
  void normalize_aligned(std::string& text, std::vector<ByteSpan>& origin,
                         std::uint32_t) const override {
    const auto [begin, end] = kept_bytes(text);
    origin.resize(end);
    origin.erase(origin.begin(), origin.begin() + static_cast<std::ptrdiff_t>(begin));
    normalize(text);
  }

 private:
  // [begin, end) of the text once stripped.
  std::pair<std::size_t, std::size_t> kept_bytes(std::string_view text) const {
    std::size_t end = text.size();
    if (right_) {
      while (end > 0) {
        std::size_t start = end - 1;
        while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        std::size_t pos = start;
        if (!is_rust_whitespace(next_code_point(text, pos))) break;
        end = start;
      }
    }
    std::size_t begin = 0;
    if (left_) {
      while (begin < end) {
        std::size_t pos = begin;
        if (!is_rust_whitespace(next_code_point(text, pos))) break;
        begin = pos;
      }
    }
    return {begin, end};
  }

  bool left_;
  bool right_;
};

class StripAccents : public Normalizer {
 public:
  void normalize(std::string& text) const override {
    if (is_ascii(text)) return;
    remove_characters(text, is_library_combining_mark);
  }
  void normalize_aligned(std::string& text, std::vector<ByteSpan>& origin,
                         std::uint32_t) const override {
    if (is_ascii(text)) return;
    remove_characters(text, is_library_combining_mark, &origin);
  }
};

// Replaces each match of a pattern ([start, end) byte ranges, in order, not overlapping) with
// `content`. The library inserts the content's characters after removing the match (change 1
// each), so they take the origin of the match's last byte; after an empty match at the start,
// with no byte before, the empty span at `text_start`.
void replace_matches(std::string& text, std::vector<ByteSpan>* origin,
                     std::span<const Match> matches, std::string_view content,
                     std::uint32_t text_start) {
  if (matches.empty()) return;
  std::string result;
  result.reserve(text.size());
  std::size_t position = 0;
  for (const auto& [start, end] : matches) {
    result.append(text, position, start - position).append(content);
    position = end;
  }
  result.append(text, position);
  if (origin) {
    // Filled in place once the result's length is known: grown match by match, it cost several
    // times the replacement itself.
    std::vector<ByteSpan> result_origin(result.size());
    auto at = result_origin.begin();
    const auto old_origin = origin->begin();
    position = 0;
    for (const auto& [start, end] : matches) {
      at = std::copy(old_origin + static_cast<std::ptrdiff_t>(position),
                     old_origin + static_cast<std::ptrdiff_t>(start), at);
      const ByteSpan source = end > 0 ? (*origin)[end - 1] : ByteSpan{text_start, text_start};
      at = std::fill_n(at, content.size(), source);
      position = end;
    }
    std::copy(old_origin + static_cast<std::ptrdiff_t>(position), origin->end(), at);
    *origin = std::move(result_origin);
  }
  text = std::move(result);
}

// Replace with {"String": s}: the library escapes s into a regex, which matches the same
// non-overlapping occurrences, left to right. An empty s matches at every character boundary.
class ReplaceString : public Normalizer {
 public:
  ReplaceString(std::string pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}

  void normalize(std::string& text) const override { replace(text, nullptr, 0); }
  void normalize_aligned(std::string& text, std::vector<ByteSpan>& origin,
                         std::uint32_t text_start) const override {
    replace(text, &origin, text_start);
  }

 private:
  void replace(std::string& text, std::vector<ByteSpan>* origin, std::uint32_t text_start) const {
    if (text.empty()) return;
    thread_local std::vector<Match> matches;
    matches.clear();
    if (pattern_.empty()) {
      for (std::size_t pos = 0; pos < text.size(); next_code_point(text, pos)) {
        matches.push_back({pos, pos});
      }
      matches.push_back({text.size(), text.size()});
    } else {
      for (std::size_t hit = text.find(pattern_); hit != std::string::npos;
           hit = text.find(pattern_, hit + pattern_.size())) {
        matches.push_back({hit, hit + pattern_.size()});
      }
    }
    replace_matches(text, origin, matches, content_, text_start);
  }

  std::string pattern_;
  std::string content_;
};

class ReplaceRegex : public Normalizer {
 public:
  ReplaceRegex(Regex regex, std::string content)
      : regex_(std::move(regex)), content_(std::move(content)) {}

  void normalize(std::string& text) const override { replace(text, nullptr, 0); }
  void normalize_aligned(std::string& text, std::vector<ByteSpan>& origin,
                         std::uint32_t text_start) const override {
    replace(text, &origin, text_start);
  }

 private:
  void replace(std::string& text, std::vector<ByteSpan>* origin, std::uint32_t text_start) const {
    // The library's regex Pattern reports no match in an empty text.
    if (text.empty()) return;
    thread_local std::vector<Match> matches;
    matches.clear();
    regex_.find_all(text, matches);
    replace_matches(text, origin, matches, content_, text_start);
  }

  Regex regex_;
  std::string content_;
};

class Prepend : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);
  }
  // The prefix takes the origin of the character it is put before (NormalizedString::prepend).
  // An empty prefix still moves that character: the library re-inserts it as the first
  // character, which takes the empty span at the text's start.
  void normalize_aligned(std::string& text, std::vector<ByteSpan>& origin,
                         std::uint32_t text_start) const override {
    if (text.empty()) return;
    if (prefix_.empty()) {
      const std::size_t first = utf8_sequence_length(static_cast<unsigned char>(text[0]));
      std::fill_n(origin.begin(), std::min(first, origin.size()), ByteSpan{text_start, text_start});
      return;
    }
    origin.insert(origin.begin(), prefix_.size(), origin.front());
    normalize(text);
  }

 private:
  std::string prefix_;
};

// BertNormalizer's clean_text for one character: NUL, U+FFFD and control characters dropped;
// every whitespace character becomes a space. Tab, newline and carriage return count as
// whitespace here; the other C0 whitespace (vertical tab, form feed) and U+0085 are controls.
void append_bert_cleaned(char32_t c, std::string& out) {
  if (c == 0 || c == 0xFFFD || is_bert_control(c)) return;
  if (is_rust_whitespace(c)) {
    out.push_back(' ');
  } else {
    append_utf8(out, c);
  }
}

// BertNormalizer's handle_chinese_chars for one character: a CJK ideograph between spaces.
void append_bert_spaced_chinese(char32_t c, std::string& out) {
  if (is_bert_chinese_character(c)) {
    out.push_back(' ');
    append_utf8(out, c);
    out.push_back(' ');
  } else {
    append_utf8(out, c);
  }
}

class BertNormalizer : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool handle_chinese_chars, bool strip_accents, bool lowercase)
      : clean_text_(clean_text),
        handle_chinese_chars_(handle_chinese_chars),
        strip_accents_(strip_accents),
        lowercase_(lowercase) {}

  void normalize(std::string& text) const override {
    const bool ascii = is_ascii(text);
    if (clean_text_) {
      if (ascii) {
        clean_ascii_text(text);
      } else {
        rewrite_characters(text, append_bert_cleaned);
      }
    }
    if (handle_chinese_chars_ && !ascii) rewrite_characters(text, append_bert_spaced_chinese);
    if (strip_accents_ && !ascii) {
      normalize_form(text, Form::kNfd);
      remove_characters(text, is_library_nonspacing_mark);
    }
    if (lowercase_) lowercase(text);
  }

  void normalize_aligned(std::string& text, std::vector<ByteSpan>& origin,
                         std::uint32_t) const override {
    const bool ascii = is_ascii(text);
    if (ascii) {
      // Cleaning drops bytes (with their origins), lowercasing maps bytes one to one, and there
      // is nothing Chinese and no accent.
      if (clean_text_) clean_ascii_text(text, &origin);
      if (lowercase_) {
        for (char& c : text) c = (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
      }
      return;
    }
    if (clean_text_) rewrite_aligned(text, origin, append_bert_cleaned);
    if (handle_chinese_chars_ && !ascii) {
      rewrite_aligned(text, origin, append_bert_spaced_chinese);
    }
    if (strip_accents_ && !ascii) {
      normalize_form_aligned(text, origin, Form::kNfd);
      remove_characters(text, is_library_nonspacing_mark, &origin);
    }
    if (lowercase_) lowercase_aligned(text, origin);
  }

 private:
  // clean_text on ASCII text, in place; `origin`, when not null, follows.
  static void clean_ascii_text(std::string& text, std::vector<ByteSpan>* origin = nullptr) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if (c == 0 || c == 0x7F || (c < 0x20 && c != '\t' && c != '\n' && c != '\r')) continue;
      if (origin) (*origin)[kept] = (*origin)[i];
      text[kept++] = (c == '\t' || c == '\n' || c == '\r') ? ' ' : c;
    }
    text.resize(kept);
    if (origin) origin->resize(kept);
  }

  bool clean_text_;
  bool handle_chinese_chars_;
  bool strip_accents_;
  bool lowercase_;
};

class Precompiled : public Normalizer {
 public:
  explicit Precompiled(PrecompiledCharsmap charsmap) : charsmap_(std::move(charsmap)) {}
  void normalize(std::string& text) const override { charsmap_.normalize(text); }
  void normalize_aligned(std::string& text, std::vector<ByteSpan>& origin,
                         std::uint32_t) const override {
    charsmap_.normalize_aligned(text, origin);
  }

 private:
  PrecompiledCharsmap charsmap_;
};

// The GPT-2 byte-to-character map: printable Latin-1 bytes stand for themselves, the others
// (controls, space, U+007F..U+00A0, soft hyphen) for U+0100 onwards in byte order.
std::array<std::string, 256> byte_level_characters() {
  std::array<std::string, 256> characters;
  char32_t next_unprintable = 0x100;
  for (int byte = 0; byte < 256; ++byte) {
    const bool printable =
        (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
    append_utf8(characters[byte], printable ? static_cast<char32_t>(byte) : next_unprintable++);
  }
  return characters;
}

// Each character's bytes as byte-level characters (all of them from that character).
void append_byte_level(char32_t c, std::string& out) {
  static const std::array<std::string, 256> kCharacters = byte_level_characters();
  std::string bytes;
  append_utf8(bytes, c);
  for (char byte : bytes) out += kCharacters[static_cast<unsigned char>(byte)];
}

class ByteLevel : public Normalizer {
 public:
  void normalize(std::string& text) const override { rewrite_characters(text, append_byte_level); }
  void normalize_aligned(std::string& text, std::vector<ByteSpan>& origin,
                         std::uint32_t) const override {
    rewrite_aligned(text, origin, append_byte_level);
  }
};

// The library's Nmt normalizer: drops most C0 controls, turns other spaces and invisible
// characters into a space.
void append_nmt_normalized(char32_t c, std::string& out) {
  if ((c >= 0x01 && c <= 0x08) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F || c == 0x8F ||
      c == 0x9F) {
    return;
  }
  const bool becomes_space = c == 0x09 || c == 0x0A || c == 0x0C || c == 0x0D || c == 0x1680 ||
                             (c >= 0x200B && c <= 0x200F) || c == 0x2028 || c == 0x2029 ||
                             c == 0x2581 || c == 0xFEFF || c == 0xFFFD;
  if (becomes_space) {
    out.push_back(' ');
  } else {
    append_utf8(out, c);
  }
}

class Nmt : public Normalizer {
 public:
  void normalize(std::string& text) const override {
    rewrite_characters(text, append_nmt_normalized);
  }
  void normalize_aligned(std::string& text, std::vector<ByteSpan>& origin,
                         std::uint32_t) const override {
    rewrite_aligned(text, origin, append_nmt_normalized);
  }
};

class Sequence : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> normalizers)
      : normalizers_(std::move(normalizers)) {}
  void normalize(std::string& text) const override {
    for (const auto& normalizer : normalizers_) normalizer->normalize(text);
  }
  void normalize_aligned(std::string& text, std::vector<ByteSpan>& origin,
                         std::uint32_t text_start) const override {
    for (const auto& normalizer : normalizers_) {
      normalizer->normalize_aligned(text, origin, text_start);
    }
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> normalizers_;
};

std::unique_ptr<Normalizer> make_replace(const ConfigNode& node) {
  const ConfigNode pattern = node.at("pattern");
  std::string content = node.string("content");
  if (!pattern.value().is_object() || pattern.value().size() != 1) {
    pattern.fail("must be {\"String\": ...} or {\"Regex\": ...}");
  }
  if (pattern.has("String")) {
    return std::make_unique<ReplaceString>(pattern.string("String"), std::move(content));
  }
  if (pattern.has("Regex")) {
    return std::make_unique<ReplaceRegex>(
        Regex(pattern.string("Regex"), pattern.at("Regex").where()), std::move(content));
  }
  pattern.fail("must be {\"String\": ...} or {\"Regex\": ...}");
}

std::unique_ptr<Normalizer> make_precompiled(const ConfigNode& node) {
  const ConfigNode field = node.at("precompiled_charsmap");
  std::string blob;
  if (!decode_base64(node.string("precompiled_charsmap"), blob)) field.fail("is not base64");
  return std::make_unique<Precompiled>(PrecompiledCharsmap(blob, field.where()));
}

std::unique_ptr<Normalizer> make_normalizer_at_depth(const ConfigNode& node, int depth) {
  const std::string type = node.type();
  if (type == "NFC") return std::make_unique<UnicodeForm>(Form::kNfc);
  if (type == "NFD") return std::make_unique<UnicodeForm>(Form::kNfd);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(Form::kNfkc);
  if (type == "NFKD") return std::make_unique<UnicodeForm>(Form::kNfkd);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "StripAccents") return std::make_unique<StripAccents>();
  if (type == "Nmt") return std::make_unique<Nmt>();
  if (type == "ByteLevel") return std::make_unique<ByteLevel>();
  if (type == "Strip") {
    return std::make_unique<Strip>(node.boolean("strip_left"), node.boolean("strip_right"));
  }
  if (type == "Prepend") return std::make_unique<Prepend>(node.string("prepend"));
  if (type == "Replace") return make_replace(node);
  if (type == "Precompiled") return make_precompiled(node);
  if (type == "BertNormalizer") {
    const bool lowercase = node.boolean("lowercase");
    // strip_accents null (or absent) follows lowercase, as bert.rs's unwrap_or does.
    const bool strip_accents =
        node.has("strip_accents") ? node.boolean("strip_accents") : lowercase;
    return std::make_unique<BertNormalizer>(
        node.boolean("clean_text"), node.boolean("handle_chinese_chars"), strip_accents, lowercase);
  }
  if (type == "Sequence") {
    if (depth >= kMaxSequenceNesting) {
      node.fail("Sequence normalizers are nested more than " + std::to_string(kMaxSequenceNesting) +
                " deep");
    }
    const ConfigNode list = node.at("normalizers");
    std::vector<std::unique_ptr<Normalizer>> normalizers;
    normalizers.reserve(list.size());
    for (std::size_t i = 0; i < list.size(); ++i) {
      normalizers.push_back(make_normalizer_at_depth(list.at(i), depth + 1));
    }
    return std::make_unique<Sequence>(std::move(normalizers));
  }
  node.refuse("normalizer type \"" + type + "\"");
}

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const ConfigNode& node) {
  return make_normalizer_at_depth(node, 0);
}

}  // namespace attn::pipeline
