#include "src/tasks/embed.h"

#include <algorithm>
#include <cmath>

#include "src/base/error.h"
#include "src/base/unicode.h"
#include "src/tasks/encoder_batches.h"

namespace attn {

void check_embedding_model(const Model& model) {
  model.require_single_stack("embed");
  if (model.spec().causal) {
    throw UsageError(model.dir.string() + ": sentence embeddings need an encoder (" +
                     family_names(ModelKind::kEncoder) + "); '" + model.model_type +
                     "' is a decoder");
  }
}

EmbeddingOptions embedding_options(const Model& model,
                                   const std::optional<SentenceTransformersConfig>& config) {
  const ArchSpec& spec = model.spec();
  EmbeddingOptions options;
  options.max_seq_length = spec.max_positions;
  if (!config) return options;

  if (config->word_embedding_dimension != spec.d_model) {
    throw Error(config->pooling_config_file.string() + ": field 'word_embedding_dimension' is " +
                std::to_string(config->word_embedding_dimension) +
                " but the model's hidden size is " + std::to_string(spec.d_model));
  }
  if (config->max_seq_length) {
    // [CLS] and [SEP] alone take two tokens.
    const int length = *config->max_seq_length;
    if (length < 2 || length > spec.max_positions) {
      throw Error(config->transformer_config_file->string() + ": field 'max_seq_length' is " +
                  std::to_string(length) + "; it must be from 2 to the model's " +
                  "max_position_embeddings (" + std::to_string(spec.max_positions) + ")");
    }
    options.max_seq_length = length;
  }
  options.pooling = config->pooling;
  options.normalize = config->normalize;
  options.lower_case = config->do_lower_case;
  return options;
}

EmbeddingInput encode_for_embedding(const Model& model, std::string_view text,
                                    const EmbeddingOptions& options) {
  check_embedding_model(model);
  std::string prepared = python_strip(text, "text");
  if (options.lower_case) prepared = python_lower(prepared, "text");
  EmbeddingInput input{.ids = model.tokenizer->encode(prepared).ids};
  if (input.ids.empty()) throw Error("the text gives no tokens");
  const int max_length =
      options.max_seq_length > 0 ? options.max_seq_length : model.spec().max_positions;
  if (int(input.ids.size()) > max_length) {
    input.dropped_tokens = int(input.ids.size()) - max_length;
    truncate_keeping_last(input.ids, max_length);
  }
  return input;
}

void pool(const float* hidden, int n_tokens, int d, Pooling pooling, std::span<float> out) {
  if (pooling == Pooling::kCls) {
    std::copy_n(hidden, d, out.begin());
    return;
  }
  if (pooling == Pooling::kMax) {
    std::copy_n(hidden, d, out.begin());
    for (int t = 1; t < n_tokens; ++t) {
      for (int i = 0; i < d; ++i) out[i] = std::max(out[i], hidden[long(t) * d + i]);
    }
    return;
  }
  // Mean and mean_sqrt_len: the sum over the tokens, in double precision, divided by the
  // number of tokens or its square root.
  std::vector<double> sum(d, 0.0);
  for (int t = 0; t < n_tokens; ++t) {
    for (int i = 0; i < d; ++i) sum[i] += hidden[long(t) * d + i];
  }
  const double divisor =
      pooling == Pooling::kMean ? std::max(double(n_tokens), 1e-9) : std::sqrt(double(n_tokens));
  for (int i = 0; i < d; ++i) out[i] = float(sum[i] / divisor);
}

void l2_normalize(std::span<float> vector) {
  double squares = 0;
  for (float v : vector) squares += double(v) * v;
  const double norm = std::max(std::sqrt(squares), 1e-12);
  for (float& v : vector) v = float(v / norm);
}

void embed(const Model& model, std::span<const EmbeddingInput> inputs,
           const EmbeddingOptions& options,
           const std::function<void(std::size_t, std::span<const float>)>& on_result) {
  check_embedding_model(model);
  const ArchSpec& spec = model.spec();
  std::vector<int> lengths;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::size_t length = inputs[i].ids.size();
    if (length == 0 || length > std::size_t(spec.max_positions)) {
      throw Error("embedding input " + std::to_string(i) + ": has " + std::to_string(length) +
                  " tokens, expected 1 to " + std::to_string(spec.max_positions));
    }
    lengths.push_back(int(length));
  }
  const int d = spec.d_model;
  std::vector<float> vector(d);
  run_encoder_batches(
      model, lengths, options.max_batch_tokens,
      [&](Batch& batch, std::size_t i) { batch.add_sequence(inputs[i].ids); },
      // state.hidden holds the last hidden states; a masked-LM head is not run.
      [&](const Batch& batch, RunState& state, std::size_t begin) {
        for (std::size_t s = 0; s < batch.sequences.size(); ++s) {
          const SequenceSlice& sequence = batch.sequences[s];
          pool(state.hidden.data() + long(sequence.row) * d, sequence.length, d, options.pooling,
               vector);
          if (options.normalize) l2_normalize(vector);
          on_result(begin + s, vector);
        }
      });
}

std::vector<std::vector<float>> embed(const Model& model, std::span<const EmbeddingInput> inputs,
                                      const EmbeddingOptions& options) {
  std::vector<std::vector<float>> vectors(inputs.size());
  embed(model, inputs, options, [&](std::size_t i, std::span<const float> vector) {
    vectors[i].assign(vector.begin(), vector.end());
  });
  return vectors;
}

std::vector<std::vector<float>> embed(const Model& model, std::span<const std::string> texts,
                                      const EmbeddingOptions& options) {
  check_embedding_model(model);
  std::vector<EmbeddingInput> inputs;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    try {
      inputs.push_back(encode_for_embedding(model, texts[i], options));
    } catch (const Error& e) {
      throw Error((texts.size() > 1 ? "text " + std::to_string(i) : std::string("text")) + ": " +
                  e.what());
    }
  }
  return embed(model, inputs, options);
}

std::vector<std::vector<float>> cosine_similarities(std::span<const std::vector<float>> vectors) {
  std::vector<std::vector<float>> unit(vectors.begin(), vectors.end());
  for (std::vector<float>& vector : unit) l2_normalize(vector);
  std::vector<std::vector<float>> matrix(unit.size(), std::vector<float>(unit.size()));
  for (std::size_t a = 0; a < unit.size(); ++a) {
    for (std::size_t b = 0; b < unit.size(); ++b) {
      double dot = 0;
      for (std::size_t i = 0; i < unit[a].size(); ++i) dot += double(unit[a][i]) * unit[b][i];
      matrix[a][b] = float(dot);
    }
  }
  return matrix;
}

}  // namespace attn
