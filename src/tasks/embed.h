#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/model/model.h"
#include "src/model/sentence_transformers.h"

// Sentence embeddings as sentence-transformers (v2.7) computes them: the text stripped (and
// lower-cased when the folder says so), tokenized with [CLS] ... [SEP] and cut to max_seq_length
// tokens, run through the encoder, the last hidden states of its tokens pooled into one vector,
// which is L2-normalized when the folder has a Normalize module.
namespace attn {

struct EmbeddingOptions {
  Pooling pooling = Pooling::kMean;
  bool normalize = false;
  int max_seq_length = 0;   // tokens per text, [CLS] and [SEP] included; 0: the model's limit
  bool lower_case = false;  // Python's str.lower() of the text before tokenizing
  // Texts are packed into batches of up to this many tokens (see FillMaskOptions).
  int max_batch_tokens = 1024;
};

// A text ready for the encoder.
struct EmbeddingInput {
  std::vector<int> ids;    // [CLS] ... [SEP], at most max_seq_length
  int dropped_tokens = 0;  // tokens cut off by max_seq_length
};

// Throws UsageError unless `model` is an encoder (a decoder's states are not what sentence
// embeddings pool). An encoder with a masked-LM head is fine: the head is never run.
void check_embedding_model(const Model& model);

// The options a sentence-transformers folder gives (or, without one, mean pooling without
// normalization up to the model's limit). Throws Error naming the file when the folder does not
// fit the model: a word_embedding_dimension other than the hidden size, a max_seq_length past
// max_position_embeddings or below 2.
EmbeddingOptions embedding_options(const Model& model,
                                   const std::optional<SentenceTransformersConfig>& config);

// Strips the text (Python's str.strip()), lower-cases it when options.lower_case, tokenizes it
// and keeps the first max_seq_length - 1 tokens and the final [SEP].
EmbeddingInput encode_for_embedding(const Model& model, std::string_view text,
                                    const EmbeddingOptions& options);

// Embeds every input, packing them into batches; calls on_result(i, vector) for input i as soon
// as its batch is done, in input order. The vector (hidden size) is valid during the call only.
void embed(const Model& model, std::span<const EmbeddingInput> inputs,
           const EmbeddingOptions& options,
           const std::function<void(std::size_t, std::span<const float>)>& on_result);

// The same, collecting the vectors: one per input.
std::vector<std::vector<float>> embed(const Model& model, std::span<const EmbeddingInput> inputs,
                                      const EmbeddingOptions& options);

// Encodes and embeds a list of texts.
std::vector<std::vector<float>> embed(const Model& model, std::span<const std::string> texts,
                                      const EmbeddingOptions& options);

// Pools the hidden states (n_tokens, d) of one text into `out` (d), as sentence-transformers'
// Pooling module does with an attention mask of all ones.
void pool(const float* hidden, int n_tokens, int d, Pooling pooling, std::span<float> out);

// v / max(||v||_2, 1e-12), as torch.nn.functional.normalize.
void l2_normalize(std::span<float> vector);

// The cosine similarity of every pair of vectors, (n, n) row by row: the dot product of the
// normalized vectors, as sentence_transformers.util.cos_sim.
std::vector<std::vector<float>> cosine_similarities(std::span<const std::vector<float>> vectors);

}  // namespace attn
