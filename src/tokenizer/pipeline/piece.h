#pragma once

#include <cstdint>
#include <span>
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

// Storage for the origins that pre-tokenizers write anew (ByteLevel's characters, Metaspace's
// replaced spaces), so that a piece points into it rather than owning a vector: one bump
// allocator per thread, emptied when an encoding with offsets starts (reset), whose memory is
// kept for the next.
class OriginArena {
 public:
  // `size` entries, valid until the next reset of this thread's arena.
  static std::span<ByteSpan> allocate(std::size_t size);

  // Empties this thread's arena for one encoding; the previous one's pieces must be gone.
  static void reset();

 private:
  static constexpr std::size_t kChunkEntries = std::size_t{1} << 14;
  struct State {
    std::vector<std::vector<ByteSpan>> chunks;
    std::size_t chunk = 0;  // the chunk being filled
    std::size_t used = 0;   // entries of it handed out
  };
  static State& state();
};

// A piece of normalized text on its way through the pre-tokenizers (the tokenizers library's
// Split of a PreTokenizedString).
struct Piece {
  std::string text;  // UTF-8 (after ByteLevel: its byte-level characters)
  // Whether the piece begins at offset 0 of the original text: only the first piece of an input
  // that does not start with an added token. Metaspace's prepend_scheme "first" reads it.
  bool at_input_start = false;
  // One entry per byte of `text` when offsets are asked for, else empty: every component keeps
  // it in step with the text only when it is not empty. It points into the normalized text's
  // origin or into this thread's OriginArena.
  std::span<const ByteSpan> origin;

  bool aligned() const { return !origin.empty(); }
  // Bytes [start, end) of this piece as a piece of their own (the origin is shared, not copied).
  Piece slice(std::size_t start, std::size_t end) const {
    return {text.substr(start, end - start), at_input_start && start == 0,
            aligned() ? origin.subspan(start, end - start) : std::span<const ByteSpan>()};
  }
};

}  // namespace attn::pipeline
