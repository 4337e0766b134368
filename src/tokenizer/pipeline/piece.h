#pragma once

#include <string>

namespace attn::pipeline {

// A piece of normalized text on its way through the pre-tokenizers (the tokenizers library's
// Split of a PreTokenizedString, without alignments: attn needs only the ids).
struct Piece {
  std::string text;  // UTF-8 (after ByteLevel: its byte-level characters)
  // Whether the piece begins at offset 0 of the original text: only the first piece of an input
  // that does not start with an added token. Metaspace's prepend_scheme "first" reads it.
  bool at_input_start = false;
};

}  // namespace attn::pipeline
