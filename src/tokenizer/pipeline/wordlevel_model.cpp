// The tokenizers library's WordLevel model (models/wordlevel): a piece is one token, or the
// unknown token.

#include <algorithm>
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

class WordLevelModel final : public Model {
 public:
  explicit WordLevelModel(const ConfigNode& node) : vocabulary_(node.at("vocab")) {
    const std::string unk_token = node.string("unk_token");
    if (const auto unk_id = token_to_id(unk_token)) {
      unk_id_ = *unk_id;
    } else {
      // The library accepts such a file and fails only when a piece needs the unknown token.
      missing_unk_message_ = node.at("unk_token").where() + ": \"" + brief_text(unk_token) +
                             "\" is not in the vocabulary";
    }
  }

  void tokenize(std::string_view piece, std::vector<int>& ids,
                std::vector<ByteSpan>* spans) const override {
    if (spans) spans->push_back({0, static_cast<std::uint32_t>(piece.size())});
    if (const auto id = token_to_id(piece)) {
      ids.push_back(*id);
    } else if (unk_id_) {
      ids.push_back(*unk_id_);
    } else {
      throw Error(missing_unk_message_);
    }
  }

  std::optional<int> token_to_id(std::string_view token) const override {
    return vocabulary_.id(token);
  }
  const std::string* id_to_token(int id) const override { return vocabulary_.token(id); }
  int vocab_size() const override { return vocabulary_.size(); }

 private:
  Vocabulary vocabulary_;
  std::optional<int> unk_id_;
  std::string missing_unk_message_;
};

}  // namespace

std::unique_ptr<Model> make_wordlevel_model(const ConfigNode& node) {
  return std::make_unique<WordLevelModel>(node);
}

}  // namespace attn::pipeline
