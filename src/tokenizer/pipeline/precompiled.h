#pragma once

// SentencePiece's compiled normalization rules (tokenizer.json's Precompiled normalizer): the
// `precompiled_charsmap` blob, a little-endian u32 byte size of a Darts double-array trie, the
// trie's u32 units, then the replacement strings, each ending in '\0'. Applied as the
// spm_precompiled crate does, which the tokenizers library calls.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/tokenizer/pipeline/piece.h"

namespace attn::pipeline {

class PrecompiledCharsmap {
 public:
  // `blob` is the decoded charsmap; `where` names its field in errors. A blob too short for its
  // trie, an empty trie or replacement strings that are not UTF-8 are an Error.
  PrecompiledCharsmap(std::string_view blob, std::string where);

  // Rewrites `text` (valid UTF-8) grapheme cluster by grapheme cluster. A trie whose units
  // point outside it (a corrupt charsmap) is an Error naming the field.
  void normalize(std::string& text) const;
  // The same, with `origin` (one entry per byte of `text`) rewritten as the library's
  // Precompiled normalizer rewrites its alignments.
  void normalize_aligned(std::string& text, std::vector<ByteSpan>& origin) const;

 private:
  // Calls on_replaced(part, replacement) for each part of `text` the charsmap rewrites and
  // on_kept(character) for each character it keeps, in order.
  template <typename OnReplaced, typename OnKept>
  void for_each_part(std::string_view text, OnReplaced on_replaced, OnKept on_kept) const;
  // The replacement for the shortest key that `chunk` starts with, as the crate's
  // common_prefix_search()[0] gives it; false when no key is a prefix of `chunk`.
  bool find_replacement(std::string_view chunk, std::string_view& replacement) const;
  [[noreturn]] void fail_corrupt(std::string_view what) const;

  std::vector<std::uint32_t> trie_;
  std::string replacements_;
  std::string where_;
};

// The bytes of base64 text (RFC 4648 standard alphabet), as the base64 crate's STANDARD engine
// that spm_precompiled uses decodes them; false for text it rejects.
bool decode_base64(std::string_view text, std::string& bytes);

}  // namespace attn::pipeline
