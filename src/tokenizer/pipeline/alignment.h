#pragma once

// Keeping a normalized text's origin (one ByteSpan per byte) in step with rewrites of the text,
// as the tokenizers library's NormalizedString keeps its alignments.

#include <span>
#include <string>
#include <vector>

#include "src/tokenizer/pipeline/piece.h"

namespace attn::pipeline {

// One character of a rewritten text and how it stands to the text before it (the library's
// (char, isize) pairs): 0 replaces the next old character and takes its origin; 1 is inserted
// and takes the origin of the old byte before the position reached; -n replaces the next old
// character and removes the n after it.
struct CharChange {
  char32_t character;
  int change;
};

// NormalizedString::transform: `text` becomes the changes' characters after the first
// `initial_removed` old characters are dropped, and `origin` follows, exactly as the library
// computes it (positionally: a change of 0 takes the next old character's origin whatever
// character it is).
void apply_changes(std::string& text, std::vector<ByteSpan>& origin,
                   std::span<const CharChange> changes, std::size_t initial_removed);

// Rewrites `text` character by character: rewrite(c, out) appends what c becomes, and every byte
// it appends takes c's origin. This is what the library's transform gives for every rewrite
// whose first output character replaces c (change 0) and whose other characters are inserted
// after it (change 1) or removed: lowercase, filter, map, and the per-character normalizers.
template <typename Rewrite>
void rewrite_aligned(std::string& text, std::vector<ByteSpan>& origin, Rewrite rewrite);

// The code point starting at text[pos] (valid UTF-8), advancing `pos` past it.
char32_t next_code_point(std::string_view text, std::size_t& pos);

// Whether every byte of `text` is ASCII (below 0x80).
bool is_ascii(std::string_view text);

template <typename Rewrite>
void rewrite_aligned(std::string& text, std::vector<ByteSpan>& origin, Rewrite rewrite) {
  std::string result;
  std::vector<ByteSpan> result_origin;
  result.reserve(text.size());
  result_origin.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) {
    const ByteSpan source = origin[pos];
    rewrite(next_code_point(text, pos), result);
    while (result_origin.size() < result.size()) result_origin.push_back(source);
  }
  text = std::move(result);
  origin = std::move(result_origin);
}

}  // namespace attn::pipeline
