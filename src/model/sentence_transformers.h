#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

// A sentence-transformers model folder: modules.json lists the modules that turn a text into one
// vector, and each module keeps its settings in its own folder. attn runs the common pipeline:
// Transformer (the Hugging Face encoder, with sentence_bert_config.json), Pooling
// (1_Pooling/config.json) and optionally Normalize.
namespace attn {

// How the last hidden states of a text's tokens become one vector (sentence-transformers'
// Pooling modes).
enum class Pooling {
  kMean,         // the mean over all tokens, [CLS] and [SEP] included
  kCls,          // the first token's state
  kMax,          // the largest value of each dimension
  kMeanSqrtLen,  // the sum over all tokens divided by sqrt(number of tokens)
};

// "mean", "cls", "max", "mean_sqrt_len": the names --pooling takes.
std::string pooling_name(Pooling pooling);
std::optional<Pooling> parse_pooling(std::string_view name);

struct SentenceTransformersConfig {
  // The Transformer module's folder: the Hugging Face model itself (usually the folder itself).
  std::filesystem::path transformer_dir;
  // sentence_bert_config.json (or the older sentence_<family>_config.json), when there is one.
  std::optional<std::filesystem::path> transformer_config_file;
  // Tokens per text, [CLS] and [SEP] included; absent: the model's max_position_embeddings.
  std::optional<int> max_seq_length;
  bool do_lower_case = false;  // lower-case the text (Python str.lower()) before tokenizing

  std::filesystem::path pooling_config_file;  // e.g. 1_Pooling/config.json
  Pooling pooling = Pooling::kMean;
  int word_embedding_dimension = 0;  // the width Pooling expects: the model's hidden size

  bool normalize = false;  // a Normalize module follows: L2-normalize the vector
};

// Reads `dir`/modules.json and the module folders it names; nullopt when there is no
// modules.json (a plain Hugging Face folder). Throws Error naming the file for a module type
// other than Transformer, Pooling and Normalize, modules in another order, a pooling config with
// no mode or several, a pooling mode attn does not implement (weightedmean, lasttoken), and a
// default prompt (config_sentence_transformers.json), which attn does not add.
std::optional<SentenceTransformersConfig> read_sentence_transformers_config(
    const std::filesystem::path& dir);

}  // namespace attn
