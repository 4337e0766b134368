#include "src/tokenizer/pipeline/models.h"

#include <string>

namespace attn::pipeline {

std::unique_ptr<Model> make_model(const ConfigNode& node) {
  if (!node.value().is_object()) node.fail("expected a JSON object");
  if (!node.value().contains("type")) {
    // Files written before the models had a "type" (bert-base-uncased's) are read, as the
    // library's untagged deserializer reads them, by the fields each model requires.
    if (node.has("merges")) return make_bpe_model(node);
    if (node.has("continuing_subword_prefix") || node.has("max_input_chars_per_word")) {
      return make_wordpiece_model(node);
    }
    if (node.has("vocab") && node.at("vocab").value().is_array()) {
      return make_unigram_model(node);
    }
    return make_wordlevel_model(node);
  }
  const std::string type = node.type();
  if (type == "BPE") return make_bpe_model(node);
  if (type == "WordPiece") return make_wordpiece_model(node);
  if (type == "WordLevel") return make_wordlevel_model(node);
  if (type == "Unigram") return make_unigram_model(node);
  if (type == "MarianVocabulary") return make_marian_vocabulary_model(node);
  node.at("type").refuse("model type \"" + type + "\"");
}

}  // namespace attn::pipeline
