#include "src/tokenizer/pipeline/alignment.h"

#include <algorithm>
#include <string>
#include <vector>

#include "src/base/unicode.h"

namespace attn::pipeline {

OriginArena::State& OriginArena::state() {
  thread_local State arena;
  return arena;
}

void OriginArena::reset() {
  State& arena = state();
  arena.chunk = 0;
  arena.used = 0;
}

std::span<ByteSpan> OriginArena::allocate(std::size_t size) {
  State& arena = state();
  while (arena.chunk < arena.chunks.size() &&
         arena.used + size > arena.chunks[arena.chunk].size()) {
    ++arena.chunk;
    arena.used = 0;
  }
  if (arena.chunk == arena.chunks.size()) {
    arena.chunks.emplace_back(std::max(size, kChunkEntries));
    arena.used = 0;
  }
  std::vector<ByteSpan>& chunk = arena.chunks[arena.chunk];
  const std::span<ByteSpan> entries(chunk.data() + arena.used, size);
  arena.used += size;
  return entries;
}

char32_t next_code_point(std::string_view text, std::size_t& pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) {
    ++pos;
    return lead;
  }
  const std::size_t length = lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  char32_t code_point = lead & (0x7F >> length);
  for (std::size_t i = 1; i < length; ++i) {
    code_point = code_point << 6 | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
  }
  pos += length;
  return code_point;
}

bool is_ascii(std::string_view text) {
  // Without an early exit the loop vectorizes, and most texts are ASCII to the end anyway.
  unsigned char bits = 0;
  for (const char byte : text) bits |= static_cast<unsigned char>(byte);
  return bits < 0x80;
}

void apply_changes(std::string& text, std::vector<ByteSpan>& origin,
                   std::span<const CharChange> changes, std::size_t initial_removed) {
  const auto skip_characters = [&](std::size_t& pos, std::size_t count) {
    for (; count > 0 && pos < text.size(); --count) {
      pos +=
          std::min(utf8_sequence_length(static_cast<unsigned char>(text[pos])), text.size() - pos);
    }
  };
  // The library panics where an index leaves the text (changes that do not fit it); attn's
  // changes always fit, and these stand-ins only keep a mistake in bounds.
  const ByteSpan before_start =
      origin.empty() ? ByteSpan{} : ByteSpan{origin.front().start, origin.front().start};
  const ByteSpan past_end =
      origin.empty() ? ByteSpan{} : ByteSpan{origin.back().end, origin.back().end};
  std::size_t pos = 0;  // the next old byte to replace
  skip_characters(pos, initial_removed);
  std::string result;
  std::vector<ByteSpan> result_origin;
  result.reserve(text.size());
  result_origin.reserve(text.size());
  for (const auto& [character, change] : changes) {
    ByteSpan source;
    if (change > 0) {
      // An inserted character shares the origin of the byte before it.
      source = pos == 0 ? before_start : origin[std::min(pos, origin.size()) - 1];
    } else {
      source = pos < origin.size() ? origin[pos] : past_end;
      skip_characters(pos, 1 + static_cast<std::size_t>(-change));
    }
    append_utf8(result, character);
    result_origin.resize(result.size(), source);
  }
  text = std::move(result);
  origin = std::move(result_origin);
}

}  // namespace attn::pipeline
