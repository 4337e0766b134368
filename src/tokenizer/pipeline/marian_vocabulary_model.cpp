// MarianTokenizer's vocabulary, which no model of the tokenizers library expresses: the pieces
// come from a SentencePiece model (a Unigram or BPE "pieces" model), their ids from vocab.json,
// and a piece vocab.json lacks is the unknown token (MarianTokenizer._convert_token_to_id). This
// is attn's own model type, made by the Marian converter (src/tokenizer/marian.cpp):
//   {"type": "MarianVocabulary", "pieces": {Unigram model}, "vocab": {piece: id},
//    "unk_token": "<unk>"}

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/tokenizer/pipeline/models.h"
#include "src/tokenizer/pipeline/vocabulary.h"

namespace attn::pipeline {
namespace {

class MarianVocabularyModel final : public Model {
 public:
  explicit MarianVocabularyModel(const ConfigNode& node)
      : pieces_(make_model(node.at("pieces"))), vocabulary_(node.at("vocab")) {
    const std::string unk_token = node.string("unk_token");
    const std::optional<int> unk_id = vocabulary_.id(unk_token);
    if (!unk_id) node.at("unk_token").fail("\"" + unk_token + "\" is not in the vocabulary");
    unk_id_ = *unk_id;
    id_of_piece_.resize(static_cast<std::size_t>(pieces_->vocab_size()), -1);
    for (int piece = 0; piece < pieces_->vocab_size(); ++piece) {
      const std::string* text = pieces_->id_to_token(piece);
      if (!text) continue;
      id_of_piece_[static_cast<std::size_t>(piece)] = vocabulary_.id(*text).value_or(unk_id_);
    }
    // The unknown id of the pieces' model (a Unigram's unk_id), whose tokens are looked up by
    // their text.
    pieces_unk_id_ = static_cast<int>(
        node.at("pieces").integer_or("unk_id", -1, std::numeric_limits<int>::max(), -1));
  }

  void tokenize(std::string_view piece, std::vector<int>& ids,
                std::vector<ByteSpan>* spans) const override {
    // The pieces' model gives its own ids and, always, where each token is: SentencePiece names
    // an unknown stretch by its text, which vocab.json may hold (a piece of the other side's
    // model), so that text is looked up, not the unknown piece.
    thread_local std::vector<int> piece_ids;
    thread_local std::vector<ByteSpan> piece_spans;
    piece_ids.clear();
    piece_spans.clear();
    pieces_->tokenize(piece, piece_ids, &piece_spans);
    for (std::size_t i = 0; i < piece_ids.size(); ++i) {
      const int id = piece_ids[i];
      if (id == pieces_unk_id_) {
        const ByteSpan span = piece_spans[i];
        ids.push_back(
            vocabulary_.id(piece.substr(span.start, span.end - span.start)).value_or(unk_id_));
      } else {
        ids.push_back(id_of_piece_[static_cast<std::size_t>(id)]);
      }
    }
    if (spans) spans->insert(spans->end(), piece_spans.begin(), piece_spans.end());
  }

  std::optional<int> token_to_id(std::string_view token) const override {
    return vocabulary_.id(token);
  }
  const std::string* id_to_token(int id) const override { return vocabulary_.token(id); }
  int vocab_size() const override { return vocabulary_.size(); }

 private:
  std::unique_ptr<Model> pieces_;
  Vocabulary vocabulary_;         // vocab.json
  int unk_id_ = 0;                // vocab.json's id of the unknown token
  int pieces_unk_id_ = -1;        // the pieces' model's id of it
  std::vector<int> id_of_piece_;  // the pieces' model's id -> vocab.json's id
};

}  // namespace

std::unique_ptr<Model> make_marian_vocabulary_model(const ConfigNode& node) {
  return std::make_unique<MarianVocabularyModel>(node);
}

}  // namespace attn::pipeline
