// DistilBERT (DistilBertForMaskedLM, or a bare DistilBertModel): BERT's post-norm encoder with
// no token types, its own config names (dim, hidden_dim, n_heads, n_layers, activation) and
// tensor names, LayerNorm epsilon 1e-12 throughout. With sinusoidal_pos_embds the sinusoids are
// written into position_embeddings.weight at initialisation and saved with it, so the table is
// read from the file either way. The head: vocab_transform, the activation, vocab_layer_norm and
// vocab_projector (tied to the word embeddings).
#include "src/model/model.h"

namespace attn {

ModelParts map_distilbert(const JsonFile& config, TensorSource& tensors) {
  ModelParts parts;
  ArchSpec& spec = parts.spec;
  spec.topology = BlockTopology::kPostNorm;
  spec.causal = false;
  spec.n_layer = config.positive_int("n_layers", kMaxLayers);
  spec.d_model = config.positive_int("dim", kMaxModelWidth);
  read_attention_heads(config, spec, "n_heads", "n_heads");
  spec.d_ff = config.positive_int("hidden_dim", kMaxFfWidth);
  spec.vocab_size = config.positive_int("vocab_size", kMaxVocabSize);
  spec.max_positions = config.positive_int("max_position_embeddings", kMaxPositions);
  check_model_sizes(config, spec, "vocab_size", "dim", "n_layers", "max_position_embeddings");
  spec.activation = read_activation(config, "activation", "gelu");
  constexpr float eps = 1e-12f;  // DistilBERT's LayerNorms do not read the config
  read_bert_embeddings(tensors, parts, eps);

  const int64_t d = spec.d_model, ff = spec.d_ff;
  auto dense = [&](const std::string& name, int64_t in, int64_t out) {
    return tensors.linear(name, in, out, true);
  };
  for (int i = 0; i < spec.n_layer; ++i) {
    const std::string p = "transformer.layer." + std::to_string(i) + ".";
    parts.weights.layers.push_back(LayerWeights{
        .attention_norm = tensors.layer_norm(p + "sa_layer_norm", d, eps),
        .attention = {.query = dense(p + "attention.q_lin", d, d),
                      .key = dense(p + "attention.k_lin", d, d),
                      .value = dense(p + "attention.v_lin", d, d),
                      .output = dense(p + "attention.out_lin", d, d)},
        .ffn_norm = tensors.layer_norm(p + "output_layer_norm", d, eps),
        .ffn = {.gate = std::nullopt,
                .up = dense(p + "ffn.lin1", d, ff),
                .down = dense(p + "ffn.lin2", ff, d)},
    });
  }
  read_masked_lm_head(tensors, parts,
                      {.dense = "vocab_transform",
                       .norm = "vocab_layer_norm",
                       .bias = "vocab_projector.bias",
                       .decoder = "vocab_projector"},
                      d, spec.activation, eps);
  return parts;
}

}  // namespace attn
