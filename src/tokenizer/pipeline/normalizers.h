#pragma once

// tokenizer.json's "normalizer": NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, Replace,
// Prepend, BertNormalizer, Precompiled, Sequence — as the tokenizers library's normalizers
// module defines them. A normalizer maps text to text, and when offsets are asked for it keeps
// each byte's origin in the original text in step, as the library's NormalizedString does.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/tokenizer/pipeline/config_node.h"
#include "src/tokenizer/pipeline/piece.h"

namespace attn::pipeline {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Rewrites `text` (valid UTF-8) in place.
  virtual void normalize(std::string& text) const = 0;
  // The same rewrite, with `origin` (one entry per byte of `text`) rewritten alongside.
  // `text_start` is where the text begins in the input, whatever a normalizer before this one
  // removed from its start: a character inserted before all the others (by Replace's empty
  // match, or Prepend's empty prefix) takes the empty span there, the library's (0, 0) of its
  // NormalizedString's original.
  virtual void normalize_aligned(std::string& text, std::vector<ByteSpan>& origin,
                                 std::uint32_t text_start) const = 0;
};

// The normalizer a tokenizer.json object describes (`node` is that object). A type or option
// attn does not implement is refused by name (ConfigNode::refuse).
std::unique_ptr<Normalizer> make_normalizer(const ConfigNode& node);

}  // namespace attn::pipeline
