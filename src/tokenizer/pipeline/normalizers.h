#pragma once

// tokenizer.json's "normalizer": NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, Replace,
// Prepend, BertNormalizer, Precompiled, Sequence — as the tokenizers library's normalizers
// module defines them. attn keeps no alignments: a normalizer maps text to text.

#include <memory>
#include <string>

#include "src/tokenizer/pipeline/config_node.h"

namespace attn::pipeline {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Rewrites `text` (valid UTF-8) in place.
  virtual void normalize(std::string& text) const = 0;
};

// The normalizer a tokenizer.json object describes (`node` is that object). A type or option
// attn does not implement is refused by name (ConfigNode::refuse).
std::unique_ptr<Normalizer> make_normalizer(const ConfigNode& node);

}  // namespace attn::pipeline
