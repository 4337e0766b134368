#pragma once

// The regular expressions of tokenizer.json (Split and Replace patterns, ByteLevel's GPT-2
// pattern), run by Oniguruma: the engine the tokenizers library itself compiles them with, so
// that \s, \p{L}, (?i:...) and lookaheads mean exactly what they mean there.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attn::pipeline {

// [start, end) byte offsets of a match.
using Match = std::pair<std::size_t, std::size_t>;

class Regex {
 public:
  // Compiles `pattern` (UTF-8, Ruby syntax as the onig crate's Regex::new uses). A pattern that
  // does not compile is an Error "<where>: regex ...: <Oniguruma's message>".
  Regex(std::string_view pattern, std::string where);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // Every non-overlapping match in `text`, left to right, as the onig crate's find_iter gives
  // them (after an empty match the search moves on by one character). Appends to `matches`.
  // A search that passes Oniguruma's backtracking limit is an Error naming `where`, never a
  // hang. `text` must be valid UTF-8. Safe to call from several threads at once.
  void find_all(std::string_view text, std::vector<Match>& matches) const;

  const std::string& where() const { return where_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string where_;
};

}  // namespace attn::pipeline
