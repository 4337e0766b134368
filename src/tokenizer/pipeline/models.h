#pragma once

// tokenizer.json's "model": BPE, WordPiece, WordLevel, Unigram — as the tokenizers library's
// models module defines them — and MarianVocabulary, which the Marian converter makes. A model
// turns one pre-tokenized piece into ids.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/tokenizer/pipeline/config_node.h"
#include "src/tokenizer/pipeline/piece.h"

namespace attn::pipeline {

class Model {
 public:
  virtual ~Model() = default;
  // Appends the ids of one piece (non-empty UTF-8) and, when `spans` is not null, each token's
  // [start, end) in bytes of the piece, as the library's tokens give their offsets. Safe to
  // call from several threads at once.
  virtual void tokenize(std::string_view piece, std::vector<int>& ids,
                        std::vector<ByteSpan>* spans) const = 0;
  // The model's own vocabulary (added tokens are the pipeline's business).
  virtual std::optional<int> token_to_id(std::string_view token) const = 0;
  // Null when the model has no token with this id.
  virtual const std::string* id_to_token(int id) const = 0;
  // One past the highest id of the model's vocabulary.
  virtual int vocab_size() const = 0;
  // The id whose token, in the library's encoding, is the text it came from rather than its
  // vocabulary entry: Unigram's unknown token (model.rs's tokenize names each token by its piece
  // of the text, which differs from the entry only for the unknown token). The ByteLevel and
  // RobertaProcessing post-processors trim a token's span by that text.
  virtual std::optional<int> id_named_by_text() const { return std::nullopt; }
};

// `node` is tokenizer.json's "model" object. A file without model.type is read by its fields,
// as the library does (BPE has merges, WordPiece continuing_subword_prefix /
// max_input_chars_per_word, Unigram a vocab of [piece, score] pairs, else WordLevel).
std::unique_ptr<Model> make_model(const ConfigNode& node);

// One factory per model type (bpe_model.cpp, wordpiece_model.cpp, wordlevel_model.cpp,
// unigram_model.cpp); make_model (models.cpp) chooses among them.
std::unique_ptr<Model> make_bpe_model(const ConfigNode& node);
std::unique_ptr<Model> make_wordpiece_model(const ConfigNode& node);
std::unique_ptr<Model> make_wordlevel_model(const ConfigNode& node);
std::unique_ptr<Model> make_unigram_model(const ConfigNode& node);
// attn's own: MarianTokenizer's vocab.json ids over a SentencePiece model's pieces.
std::unique_ptr<Model> make_marian_vocabulary_model(const ConfigNode& node);

}  // namespace attn::pipeline
