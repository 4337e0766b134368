#pragma once

// The {token: id} vocabulary of tokenizer.json's BPE, WordPiece and WordLevel models.

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/tokenizer/pipeline/config_node.h"

namespace attn::pipeline {

// The id of `token` in a vocabulary object (`vocab` is where it is, for errors): an integer in
// [0, 2^24), so that ids fit an int and no table sized by them can be huge.
int vocabulary_id(const ConfigNode& vocab, const std::string& token, const nlohmann::json& id);

// Lookups both ways. Two tokens may share an id: both encode to it, as in the library; the id
// decodes to the first in the file's order (the library's choice is arbitrary).
class Vocabulary {
 public:
  // `vocab` is the model's "vocab" object.
  explicit Vocabulary(const ConfigNode& vocab);

  std::optional<int> id(std::string_view token) const {
    const auto found = ids_.find(token);
    return found == ids_.end() ? std::nullopt : std::optional<int>(found->second);
  }
  // Null for an id no token has.
  const std::string* token(int id) const {
    return id < 0 || id >= size() ? nullptr : tokens_[static_cast<std::size_t>(id)];
  }
  // One past the highest id.
  int size() const { return static_cast<int>(tokens_.size()); }
  // The length in bytes of the longest token.
  std::size_t longest_token() const { return longest_token_; }

 private:
  struct TextHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const {
      return std::hash<std::string_view>{}(text);
    }
  };

  std::unordered_map<std::string, int, TextHash, std::equal_to<>> ids_;
  std::vector<const std::string*> tokens_;  // by id, into ids_
  std::size_t longest_token_ = 0;
};

}  // namespace attn::pipeline
