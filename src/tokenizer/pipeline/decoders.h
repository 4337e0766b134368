#pragma once

// tokenizer.json's "decoder": ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace,
// WordPiece, BPEDecoder, Sequence — token strings back to text.

#include <memory>
#include <string>
#include <vector>

#include "src/tokenizer/pipeline/config_node.h"

namespace attn::pipeline {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // The library's Decoder::decode_chain: rewrites the token strings in place (a decoder may
  // change their number, as Fuse does); the text is their concatenation. The strings may hold
  // bytes that are not UTF-8 on the way (ByteLevel, ByteFallback); every decoder leaves valid
  // UTF-8 as the library does (invalid bytes become U+FFFD).
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

std::unique_ptr<Decoder> make_decoder(const ConfigNode& node);

// The WordPiece decoder's cleanup ("cleanup": true): transformers' old cleanup of spaces before
// punctuation and English contractions (" ." -> ".", " do not" -> " don't", ...).
std::string wordpiece_cleanup(std::string text);

}  // namespace attn::pipeline
