#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attn::pipeline {

// Where a byte of normalized text comes from: [start, end) in bytes of the original input, the
// tokenizers library's NormalizedString alignment of that byte. The library keeps them relative
// to each slice's original and adds the slice's shift at the end; attn keeps them absolute.
struct ByteSpan {
  std::uint32_t start = 0;
  std::uint32_t end = 0;
  bool operator==(const ByteSpan&) const = default;
};

// A piece of normalized text on its way through the pre-tokenizers (the tokenizers library's
// Split of a PreTokenizedString).
struct Piece {
  std::string text;  // UTF-8 (after ByteLevel: its byte-level characters)
  // Whether the piece begins at offset 0 of the original text: only the first piece of an input
  // that does not start with an added token. Metaspace's prepend_scheme "first" reads it.
  bool at_input_start = false;
  // One entry per byte of `text` when offsets are asked for, else empty: every component keeps
  // it in step with the text only when it is not empty.
  std::vector<ByteSpan> origin;

  bool aligned() const { return !origin.empty(); }
  // Bytes [start, end) of this piece as a piece of their own.
  Piece slice(std::size_t start, std::size_t end) const {
    Piece part{text.substr(start, end - start), at_input_start && start == 0, {}};
    if (aligned()) {
      part.origin.assign(origin.begin() + std::ptrdiff_t(start),
                         origin.begin() + std::ptrdiff_t(end));
    }
    return part;
  }
};

}  // namespace attn::pipeline
