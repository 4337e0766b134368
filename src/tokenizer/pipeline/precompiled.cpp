#include "src/tokenizer/pipeline/precompiled.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <utility>

#include "src/base/error.h"
#include "src/base/unicode.h"
#include "src/tokenizer/pipeline/alignment.h"

namespace attn::pipeline {

namespace {

// The fields of one Darts double-array unit, as the crate reads them.
bool has_leaf(std::uint32_t unit) { return ((unit >> 8) & 1) != 0; }
std::uint32_t leaf_value(std::uint32_t unit) { return unit & ((1u << 31) - 1); }
std::uint32_t label(std::uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
std::size_t child_offset(std::uint32_t unit) {
  return static_cast<std::size_t>(unit >> 10) << ((unit & (1u << 9)) >> 6);
}

std::uint32_t read_le_u32(const unsigned char* bytes) {
  return static_cast<std::uint32_t>(bytes[0]) | static_cast<std::uint32_t>(bytes[1]) << 8 |
         static_cast<std::uint32_t>(bytes[2]) << 16 | static_cast<std::uint32_t>(bytes[3]) << 24;
}

int base64_digit(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Characters of Unicode 16 and 17 that extend the grapheme cluster before them (Extend or
// SpacingMark) in the unicode-segmentation crate the library splits clusters with, and that
// utf8proc 2.8 (Unicode 15.0) does not know. Found by running the library on "A" + every code
// point with a charsmap that maps "A".
constexpr CodePointRange kNewClusterExtenders[] = {
    {0x897, 0x897},     {0x1ACF, 0x1ADD},   {0x1AE0, 0x1AEB},   {0x10D69, 0x10D6D},
    {0x10EFA, 0x10EFC}, {0x113B8, 0x113C0}, {0x113C2, 0x113C2}, {0x113C5, 0x113C5},
    {0x113C7, 0x113CA}, {0x113CC, 0x113D0}, {0x113D2, 0x113D2}, {0x113E1, 0x113E2},
    {0x11B60, 0x11B67}, {0x11F5A, 0x11F5A}, {0x1611E, 0x1612F}, {0x1E5EE, 0x1E5EF},
    {0x1E6E3, 0x1E6E3}, {0x1E6E6, 0x1E6E6}, {0x1E6EE, 0x1E6EF}, {0x1E6F5, 0x1E6F5}};

// Whether `next` extends the cluster that `previous` ends, for a `next` utf8proc does not know:
// extenders join anything but a control character or line break (rules GB4, GB9, GB9a).
bool extends_cluster_as_newer_unicode(utf8proc_int32_t previous, char32_t next) {
  if (next < 0x897) return false;
  if (!in_ranges(kNewClusterExtenders, next)) return false;
  switch (utf8proc_get_property(previous)->boundclass) {
    case UTF8PROC_BOUNDCLASS_CR:
    case UTF8PROC_BOUNDCLASS_LF:
    case UTF8PROC_BOUNDCLASS_CONTROL:
      return false;
    default:
      return true;
  }
}

}  // namespace

bool decode_base64(std::string_view text, std::string& bytes) {
  bytes.clear();
  // The base64 crate's STANDARD engine: padding may be left out or cut short, but never goes
  // past the last group; a lone symbol in the last group and non-zero unused bits are errors.
  std::size_t padding = 0;
  while (padding < text.size() && text[text.size() - 1 - padding] == '=') ++padding;
  const std::string_view symbols = text.substr(0, text.size() - padding);
  const std::size_t leftover = symbols.size() % 4;
  if (leftover == 1 || padding > (4 - leftover) % 4) return false;
  bytes.reserve(symbols.size() / 4 * 3 + 2);
  std::uint32_t group = 0;
  for (std::size_t i = 0; i < symbols.size(); ++i) {
    const int digit = base64_digit(symbols[i]);
    if (digit < 0) return false;
    group = group << 6 | static_cast<std::uint32_t>(digit);
    if (i % 4 == 3) {
      bytes.push_back(static_cast<char>(group >> 16));
      bytes.push_back(static_cast<char>(group >> 8 & 0xFF));
      bytes.push_back(static_cast<char>(group & 0xFF));
      group = 0;
    }
  }
  if (leftover == 2) {
    if ((group & 0xF) != 0) return false;
    bytes.push_back(static_cast<char>(group >> 4));
  } else if (leftover == 3) {
    if ((group & 0x3) != 0) return false;
    bytes.push_back(static_cast<char>(group >> 10));
    bytes.push_back(static_cast<char>(group >> 2 & 0xFF));
  }
  return true;
}

PrecompiledCharsmap::PrecompiledCharsmap(std::string_view blob, std::string where)
    : where_(std::move(where)) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(blob.data());
  if (blob.size() < 4) throw Error(where_ + ": the charsmap is shorter than its 4-byte header");
  // The header is the trie's size in bytes; the crate reads size / 4 units and takes every
  // byte after them as the replacement strings.
  const std::size_t unit_count = read_le_u32(bytes) / 4;
  if (unit_count == 0) throw Error(where_ + ": the charsmap's trie is empty");
  if (unit_count > (blob.size() - 4) / 4) {
    throw Error(where_ + ": the charsmap's header announces a trie of " +
                std::to_string(unit_count) + " units but only " + std::to_string(blob.size() - 4) +
                " bytes follow it");
  }
  trie_.resize(unit_count);
  for (std::size_t i = 0; i < unit_count; ++i) trie_[i] = read_le_u32(bytes + 4 + 4 * i);
  replacements_.assign(blob.substr(4 + 4 * unit_count));
  if (!is_valid_utf8(replacements_)) {
    throw Error(where_ + ": the charsmap's replacement strings are not valid UTF-8");
  }
}

void PrecompiledCharsmap::fail_corrupt(std::string_view what) const {
  throw Error(where_ + ": corrupt charsmap: " + std::string(what));
}

bool PrecompiledCharsmap::find_replacement(std::string_view chunk,
                                           std::string_view& replacement) const {
  std::size_t node = child_offset(trie_[0]);
  for (char byte : chunk) {
    const auto key = static_cast<unsigned char>(byte);
    // The crate's search stops at a NUL byte, as Darts' C strings do.
    if (key == 0) return false;
    node ^= key;
    if (node >= trie_.size()) fail_corrupt("a trie unit points past the trie's end");
    const std::uint32_t unit = trie_[node];
    if (label(unit) != key) return false;
    node ^= child_offset(unit);
    if (!has_leaf(unit)) continue;
    if (node >= trie_.size()) fail_corrupt("a trie unit points past the trie's end");
    const std::size_t start = leaf_value(trie_[node]);
    if (start > replacements_.size()) {
      fail_corrupt("a replacement offset is past the end of the replacement strings");
    }
    if (start < replacements_.size() &&
        (static_cast<unsigned char>(replacements_[start]) & 0xC0) == 0x80) {
      fail_corrupt("a replacement offset falls inside a UTF-8 character");
    }
    std::size_t end = replacements_.find('\0', start);
    if (end == std::string::npos) end = replacements_.size();
    replacement = std::string_view(replacements_).substr(start, end - start);
    return true;
  }
  return false;
}

template <typename OnReplaced, typename OnKept>
void PrecompiledCharsmap::for_each_part(std::string_view text, OnReplaced on_replaced,
                                        OnKept on_kept) const {
  // The cluster text[start, end): the whole cluster is looked up first when it is shorter than
  // 6 bytes (spm_precompiled's rule), else each character on its own.
  auto visit_cluster = [&](std::size_t start, std::size_t end) {
    const std::string_view cluster = text.substr(start, end - start);
    std::string_view replacement;
    if (cluster.size() < 6 && find_replacement(cluster, replacement)) {
      on_replaced(cluster, replacement);
      return;
    }
    for (std::size_t pos = 0; pos < cluster.size();) {
      const std::size_t length = utf8_sequence_length(static_cast<unsigned char>(cluster[pos]));
      const std::string_view character = cluster.substr(pos, length);
      if (find_replacement(character, replacement)) {
        on_replaced(character, replacement);
      } else {
        on_kept(character);
      }
      pos += length;
    }
  };
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  const auto size = static_cast<utf8proc_ssize_t>(text.size());
  utf8proc_int32_t break_state = 0;
  utf8proc_int32_t previous = -1;
  std::size_t cluster_start = 0;
  for (utf8proc_ssize_t pos = 0; pos < size;) {
    utf8proc_int32_t code_point = 0;
    const utf8proc_ssize_t length = utf8proc_iterate(bytes + pos, size - pos, &code_point);
    if (length <= 0) throw Error(where_ + ": the text to normalize is not valid UTF-8");
    if (previous >= 0 &&
        !extends_cluster_as_newer_unicode(previous, static_cast<char32_t>(code_point)) &&
        utf8proc_grapheme_break_stateful(previous, code_point, &break_state)) {
      visit_cluster(cluster_start, static_cast<std::size_t>(pos));
      cluster_start = static_cast<std::size_t>(pos);
    }
    previous = code_point;
    pos += length;
  }
  if (!text.empty()) visit_cluster(cluster_start, text.size());
}

void PrecompiledCharsmap::normalize(std::string& text) const {
  std::string result;
  result.reserve(text.size());
  bool modified = false;
  for_each_part(
      text,
      [&](std::string_view, std::string_view replacement) {
        result += replacement;
        modified = true;
      },
      [&](std::string_view character) { result += character; });
  if (modified) text = std::move(result);
}

void PrecompiledCharsmap::normalize_aligned(std::string& text,
                                            std::vector<ByteSpan>& origin) const {
  // The changes the library's Precompiled normalizer gives transform(): a replacement's
  // characters replace the old ones one for one (0); when there are more, the extra ones at the
  // end are inserted (1); when fewer, the last one removes the rest (its change lowered by the
  // difference, which with an empty replacement lowers the change before it).
  std::vector<CharChange> changes;
  changes.reserve(text.size());
  bool modified = false;
  for_each_part(
      text,
      [&](std::string_view old_part, std::string_view replacement) {
        modified = true;
        const auto count = [](std::string_view part) {
          return static_cast<long>(std::count_if(part.begin(), part.end(), [](char byte) {
            return (static_cast<unsigned char>(byte) & 0xC0) != 0x80;
          }));
        };
        const long difference = count(replacement) - count(old_part);
        for (std::size_t pos = 0; pos < replacement.size();) {
          changes.push_back({next_code_point(replacement, pos), 0});
        }
        if (difference > 0) {
          for (long i = 0; i < difference; ++i)
            changes[changes.size() - 1 - static_cast<std::size_t>(i)].change = 1;
        } else if (difference < 0 && !changes.empty()) {
          changes.back().change += static_cast<int>(difference);
        }
      },
      [&](std::string_view character) {
        std::size_t pos = 0;
        changes.push_back({next_code_point(character, pos), 0});
      });
  if (modified) apply_changes(text, origin, changes, 0);
}

}  // namespace attn::pipeline
