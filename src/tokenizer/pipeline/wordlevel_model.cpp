// The tokenizers library's WordLevel model (models/wordlevel): a piece is one token, or the
// unknown token.

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

class WordLevelModel final : public Model {
 public:
  explicit WordLevelModel(const ConfigNode& node) {
    const std::string unk_token = node.string("unk_token");
    read_vocab(node.at("vocab"));
    if (const auto unk_id = token_to_id(unk_token)) {
      unk_id_ = *unk_id;
    } else {
      // The library accepts such a file and fails only when a piece needs the unknown token.
      missing_unk_message_ = node.at("unk_token").where() + ": \"" + brief_text(unk_token) +
                             "\" is not in the vocabulary";
    }
  }

  void tokenize(std::string_view piece, std::vector<int>& ids) const override {
    if (const auto id = token_to_id(piece)) {
      ids.push_back(*id);
    } else if (unk_id_) {
      ids.push_back(*unk_id_);
    } else {
      throw Error(missing_unk_message_);
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
    }
    // Two tokens may share an id: both encode to it, as in the library; decoding gives the first
    // in the file's key order (the library's choice is arbitrary).
    tokens_.assign(max_id + 1, nullptr);
    for (auto entry = vocab.value().begin(); entry != vocab.value().end(); ++entry) {
      const auto stored = ids_.find(entry.key());
      if (tokens_[stored->second] == nullptr) tokens_[stored->second] = &stored->first;
    }
  }

  std::unordered_map<std::string, int, TextHash, std::equal_to<>> ids_;
  std::vector<const std::string*> tokens_;  // by id; null for ids no token has
  std::optional<int> unk_id_;
  std::string missing_unk_message_;
};

}  // namespace

std::unique_ptr<Model> make_wordlevel_model(const ConfigNode& node) {
  return std::make_unique<WordLevelModel>(node);
}

}  // namespace attn::pipeline
