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

  const EncoderLayerNames names = {.query = "attention.q_lin",
                                   .key = "attention.k_lin",
                                   .value = "attention.v_lin",
                                   .output = "attention.out_lin",
                                   .attention_norm = "sa_layer_norm",
                                   .up = "ffn.lin1",
                                   .down = "ffn.lin2",
                                   .ffn_norm = "output_layer_norm"};
  for (int i = 0; i < spec.n_layer; ++i) {
    parts.weights.layers.push_back(read_encoder_layer(
        tensors, spec, "transformer.layer." + std::to_string(i) + ".", names, eps));
  }
  read_masked_lm_head(tensors, parts,
                      {.dense = "vocab_transform",
                       .norm = "vocab_layer_norm",
                       .bias = "vocab_projector.bias",
                       .decoder = "vocab_projector"},
                      spec.d_model, spec.activation, eps);
  read_classifier_head(config, tensors, parts,
                       {.dense = "pre_classifier",
                        .activation = ClassifierHead::DenseActivation::kRelu,
                        .classifier = "classifier",
                        .token_classifier = "classifier"});
  return parts;
}

}  // namespace attn
