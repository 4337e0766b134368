#include "src/tasks/text_stream.h"

#include <algorithm>

#include "src/base/unicode.h"

namespace attn {

std::string TextStream::add(std::string_view bytes, bool& stopped) {
  text_ += bytes;
  for (const auto& stop : stop_) {
    const std::size_t from = emitted_ > stop.size() ? emitted_ - stop.size() : 0;
    const std::size_t found = text_.find(stop, from);
    if (found != std::string::npos) {
      text_.resize(found);
      stopped = true;
      return emit(found);
    }
  }
  std::size_t safe_end = text_.size() - longest_stop_prefix_suffix();
  safe_end = emitted_ +
             complete_utf8_prefix(std::string_view(text_).substr(emitted_, safe_end - emitted_));
  return emit(safe_end);
}

std::string TextStream::rest() const {
  return replace_invalid_utf8(std::string_view(text_).substr(emitted_));
}

std::string TextStream::text() const { return replace_invalid_utf8(text_); }

std::size_t TextStream::longest_stop_prefix_suffix() const {
  std::size_t longest = 0;
  for (const auto& stop : stop_) {
    for (std::size_t n = std::min(stop.size() - 1, text_.size() - emitted_); n > longest; --n) {
      if (std::string_view(text_).ends_with(std::string_view(stop).substr(0, n))) {
        longest = n;
        break;
      }
    }
  }
  return longest;
}

std::string TextStream::emit(std::size_t end) {
  if (end <= emitted_) return {};
  // Invalid bytes before `end` stay invalid whatever follows: shown as U+FFFD, as in the final
  // text.
  std::string shown =
      replace_invalid_utf8(std::string_view(text_).substr(emitted_, end - emitted_));
  emitted_ = end;
  return shown;
}

}  // namespace attn
