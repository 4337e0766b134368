// The tokenizers library's WordPiece model (models/wordpiece): greedy longest-match-first, the
// pieces after the first spelled with the continuing-subword prefix ("##").

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/error.h"
#include "src/io/json_util.h"
#include "src/tokenizer/pipeline/models.h"
#include "src/tokenizer/pipeline/vocabulary.h"

namespace attn::pipeline {
namespace {

using nlohmann::json;

class WordPieceModel final : public Model {
 public:
  explicit WordPieceModel(const ConfigNode& node)
      : unk_token_(node.string("unk_token")),
        prefix_(node.string("continuing_subword_prefix")),
        max_input_chars_per_word_(node.integer("max_input_chars_per_word", 0, INT64_MAX)),
        vocabulary_(node.at("vocab")) {
    if (const auto unk_id = token_to_id(unk_token_)) {
      unk_id_ = *unk_id;
    } else {
      // The library accepts such a file and fails only when a word needs the unknown token.
      missing_unk_message_ = node.at("unk_token").where() + ": \"" + brief_text(unk_token_) +
                             "\" is not in the vocabulary";
    }
  }

  void tokenize(std::string_view word, std::vector<int>& ids,
                std::vector<ByteSpan>* spans) const override {
    const auto whole_word_unknown = [&] {
      ids.push_back(unk_id());
      if (spans) spans->push_back({0, static_cast<std::uint32_t>(word.size())});
    };
    if (static_cast<std::uint64_t>(character_count(word)) > max_input_chars_per_word_) {
      return whole_word_unknown();
    }
    const std::size_t first_new = ids.size();
    const std::size_t first_new_span = spans ? spans->size() : 0;
    std::string spelled;
    for (std::size_t start = 0; start < word.size();) {
      const std::size_t prefix_length = start > 0 ? prefix_.size() : 0;
      // Longer candidates are in no token; starting at the longest one that could be saves
      // the lookups without changing what is found.
      std::size_t end = start + std::min(word.size() - start,
                                         vocabulary_.longest_token() -
                                             std::min(vocabulary_.longest_token(), prefix_length));
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
        if (spans) spans->resize(first_new_span);
        return whole_word_unknown();
      }
      ids.push_back(*found);
      if (spans) {
        spans->push_back({static_cast<std::uint32_t>(start), static_cast<std::uint32_t>(end)});
      }
      start = end;
    }
  }

  std::optional<int> token_to_id(std::string_view token) const override {
    return vocabulary_.id(token);
  }
  const std::string* id_to_token(int id) const override { return vocabulary_.token(id); }
  int vocab_size() const override { return vocabulary_.size(); }

 private:
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
  Vocabulary vocabulary_;
  std::optional<int> unk_id_;
  std::string missing_unk_message_;
};

}  // namespace

std::unique_ptr<Model> make_wordpiece_model(const ConfigNode& node) {
  return std::make_unique<WordPieceModel>(node);
}

}  // namespace attn::pipeline
