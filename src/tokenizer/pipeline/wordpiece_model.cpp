// The tokenizers library's WordPiece model (models/wordpiece): greedy longest-match-first, the
// pieces after the first spelled with the continuing-subword prefix ("##").

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/base/error.h"
#include "src/io/json_util.h"
#include "src/tokenizer/pipeline/models.h"

namespace attn::pipeline {
namespace {

using nlohmann::json;

constexpr std::int64_t kIdLimit = std::int64_t{1} << 24;

struct TextHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const {
    return std::hash<std::string_view>{}(text);
  }
};

class WordPieceModel final : public Model {
 public:
  explicit WordPieceModel(const ConfigNode& node)
      : unk_token_(node.string("unk_token")),
        prefix_(node.string("continuing_subword_prefix")),
        max_input_chars_per_word_(node.integer("max_input_chars_per_word", 0, INT64_MAX)) {
    read_vocab(node.at("vocab"));
    if (const auto unk_id = token_to_id(unk_token_)) {
      unk_id_ = *unk_id;
    } else {
      // The library accepts such a file and fails only when a word needs the unknown token.
      missing_unk_message_ = node.at("unk_token").where() + ": \"" + brief_text(unk_token_) +
                             "\" is not in the vocabulary";
    }
  }

  void tokenize(std::string_view word, std::vector<int>& ids) const override {
    if (static_cast<std::uint64_t>(character_count(word)) > max_input_chars_per_word_) {
      ids.push_back(unk_id());
      return;
    }
    const std::size_t first_new = ids.size();
    std::string spelled;
    for (std::size_t start = 0; start < word.size();) {
      const std::size_t prefix_length = start > 0 ? prefix_.size() : 0;
      // Longer candidates are in no token; starting at the longest one that could be saves
      // the lookups without changing what is found.
      std::size_t end = start + std::min(word.size() - start,
                                         longest_token_ - std::min(longest_token_, prefix_length));
      while (end > start && is_continuation_byte(word, end)) --end;
      std::optional<int> found;
      for (; end > start; end = previous_boundary(word, start, end)) {
        spelled.assign(start > 0 ? prefix_ : "");
        spelled.append(word.substr(start, end - start));
        found = token_to_id(spelled);
        if (found) break;
      }
      if (!found) {
        ids.resize(first_new);
        ids.push_back(unk_id());
        return;
      }
      ids.push_back(*found);
      start = end;
    }
  }

  std::optional<int> token_to_id(std::string_view token) const override {
    const auto found = ids_.find(token);
    return found == ids_.end() ? std::nullopt : std::optional<int>(found->second);
  }

  const std::string* id_to_token(int id) const override {
    if (id < 0 || id >= vocab_size()) return nullptr;
    return tokens_[id];
  }

  int vocab_size() const override { return static_cast<int>(tokens_.size()); }

 private:
  void read_vocab(const ConfigNode& vocab) {
    if (!vocab.value().is_object()) {
      vocab.fail("expected an object of token: id, found " + brief_json(vocab.value()));
    }
    ids_.reserve(vocab.value().size());
    int max_id = -1;
    for (auto entry = vocab.value().begin(); entry != vocab.value().end(); ++entry) {
      const json& id = entry.value();
      const bool in_range = id.is_number_unsigned()
                                ? id.get<std::uint64_t>() < static_cast<std::uint64_t>(kIdLimit)
                                : id.is_number_integer() && id.get<std::int64_t>() >= 0 &&
                                      id.get<std::int64_t>() < kIdLimit;
      if (!in_range) {
        vocab.fail("token \"" + brief_text(entry.key()) + "\" has id " + brief_json(id) +
                   ", expected an integer from 0 to " + std::to_string(kIdLimit - 1));
      }
      ids_.emplace(entry.key(), id.get<int>());
      max_id = std::max(max_id, id.get<int>());
      longest_token_ = std::max(longest_token_, entry.key().size());
    }
    // Two tokens may share an id: both encode to it, as in the library; decoding gives the first
    // in the file's key order (the library's choice is arbitrary).
    tokens_.assign(max_id + 1, nullptr);
    for (auto entry = vocab.value().begin(); entry != vocab.value().end(); ++entry) {
      const auto stored = ids_.find(entry.key());
      if (tokens_[stored->second] == nullptr) tokens_[stored->second] = &stored->first;
    }
  }

  int unk_id() const {
    if (!unk_id_) throw Error(missing_unk_message_);
    return *unk_id_;
  }

  static std::size_t character_count(std::string_view text) {
    return static_cast<std::size_t>(
        std::count_if(text.begin(), text.end(), [](char byte) { return (byte & 0xC0) != 0x80; }));
  }

  static bool is_continuation_byte(std::string_view text, std::size_t index) {
    return index < text.size() && (static_cast<unsigned char>(text[index]) & 0xC0) == 0x80;
  }

  // The end of the candidate one character shorter than word[start, end).
  static std::size_t previous_boundary(std::string_view word, std::size_t start, std::size_t end) {
    do {
      --end;
    } while (end > start && is_continuation_byte(word, end));
    return end;
  }

  std::string unk_token_;
  std::string prefix_;
  std::uint64_t max_input_chars_per_word_;
  std::unordered_map<std::string, int, TextHash, std::equal_to<>> ids_;
  std::vector<const std::string*> tokens_;  // by id; null for ids no token has
  std::size_t longest_token_ = 0;
  std::optional<int> unk_id_;
  std::string missing_unk_message_;
};

}  // namespace

std::unique_ptr<Model> make_wordpiece_model(const ConfigNode& node) {
  return std::make_unique<WordPieceModel>(node);
}

}  // namespace attn::pipeline
