#pragma once

// tokenizer.json's "added_tokens": tokens cut out of the text before the normalizer and the
// model see it, as the tokenizers library's AddedVocabulary does. Tokens with normalized: false
// are found in the raw text; the others in the text after the normalizer, as the normalizer
// writes them.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/tokenizer/pipeline/config_node.h"
#include "src/tokenizer/pipeline/models.h"
#include "src/tokenizer/pipeline/normalizers.h"

namespace attn::pipeline {

struct AddedTokenEntry {
  std::string content;
  int id = -1;
  bool special = false;      // dropped by decode(skip_special_tokens)
  bool normalized = true;    // matched in the normalized text rather than the raw text
  bool lstrip = false;       // takes the whitespace before it
  bool rstrip = false;       // takes the whitespace after it
  bool single_word = false;  // matched only where no word character touches it
};

// A stretch of text between added tokens, or an added token (with the whitespace it took).
struct TextSplit {
  std::string_view text;
  int added_token_id = -1;  // -1: text for the normalizer and the model
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  // `node` is tokenizer.json's "added_tokens" array. Each token's id is the one the library
  // gives it: the model's id of the same text if it has one, else the id in the file.
  // `normalizer` (may be null) writes the form that normalized tokens are matched in.
  AddedVocabulary(const ConfigNode& node, const Model& model, const Normalizer* normalizer);

  // Cuts the tokens that are matched in raw text (normalized: false) out of `text`.
  std::vector<TextSplit> split_raw(std::string_view text) const { return split(text, raw_); }
  // Cuts the normalized tokens out of a normalized stretch of text.
  std::vector<TextSplit> split_normalized(std::string_view text) const {
    return split(text, normalized_);
  }

  std::optional<int> id_of(std::string_view content) const;
  const AddedTokenEntry* token(int id) const;
  bool is_special(int id) const;
  // One past the highest added id (0 when there is none).
  int id_limit() const { return id_limit_; }

 private:
  // A byte trie over token texts: leftmost-longest matching, as the library's Aho-Corasick
  // automaton with MatchKind::LeftmostLongest finds them.
  struct Trie {
    struct Node {
      std::vector<std::pair<unsigned char, int>> children;  // sorted by byte
      int token_index = -1;                                 // into tokens_, when a text ends here
    };
    std::vector<Node> nodes;
    void insert(std::string_view text, int token_index);
    // The longest token text starting at text[start], as (length, token index).
    std::optional<std::pair<std::size_t, int>> longest_at(std::string_view text,
                                                          std::size_t start) const;
  };

  std::vector<TextSplit> split(std::string_view text, const Trie& trie) const;

  std::vector<AddedTokenEntry> tokens_;
  std::unordered_map<std::string, int> index_of_content_;  // -> into tokens_
  std::unordered_map<int, int> index_of_id_;               // -> into tokens_
  Trie raw_;
  Trie normalized_;
  int id_limit_ = 0;
};

}  // namespace attn::pipeline
