// ALBERT (AlbertForMaskedLM, or a bare AlbertModel): BERT's post-norm encoder with two savings.
// The embeddings are embedding_size wide and projected to hidden_size by
// embedding_hidden_mapping_in; and the layers share weights: num_hidden_layers steps run
// through num_hidden_groups groups of inner_group_num layers each, step i using group
// i / (num_hidden_layers / num_hidden_groups) (usually one group: every step the same weights,
// referenced, not copied). The head projects back down: predictions.dense (hidden ->
// embedding_size), the activation, predictions.LayerNorm, and a decoder tied to the word
// embeddings. AlbertForSequenceClassification: the pooler "albert.pooler" (a plain nn.Linear
// hidden -> hidden, then tanh) on the first token, then "classifier" (hidden -> labels);
// AlbertForTokenClassification: "classifier" on every token.
#include <string>

#include "src/model/model.h"

namespace attn {

ModelParts map_albert(const JsonFile& config, TensorSource& tensors) {
  ModelParts parts;
  ArchSpec& spec = parts.spec;
  spec.topology = BlockTopology::kPostNorm;
  spec.causal = false;
  read_common_sizes(config, spec, 512);
  const int steps = spec.n_layer;  // num_hidden_layers
  const int groups = config.optional_positive_int("num_hidden_groups", kMaxLayers).value_or(1);
  const int layers_per_group =
      config.optional_positive_int("inner_group_num", kMaxLayers).value_or(1);
  if (int64_t(steps) * layers_per_group > kMaxLayers) {
    config.fail("inner_group_num", "times num_hidden_layers is more than attn's limit of " +
                                       std::to_string(kMaxLayers) + " layers");
  }
  spec.n_layer = steps * layers_per_group;
  spec.embedding_dim = config.optional_positive_int("embedding_size", kMaxModelWidth).value_or(128);
  spec.n_token_types = config.optional_positive_int("type_vocab_size", kMaxTokenTypes).value_or(2);
  spec.activation = read_activation(config, "hidden_act", "gelu_new");
  require_absolute_positions(config);
  const float eps = read_bert_norm_eps(config);
  read_bert_embeddings(tensors, parts, eps);

  const int64_t d = spec.d_model, e = spec.embedding_dim;
  parts.weights.embedding_projection =
      tensors.linear("encoder.embedding_hidden_mapping_in", e, d, true);
  const EncoderLayerNames names = {.query = "attention.query",
                                   .key = "attention.key",
                                   .value = "attention.value",
                                   .output = "attention.dense",
                                   .attention_norm = "attention.LayerNorm",
                                   .up = "ffn",
                                   .down = "ffn_output",
                                   .ffn_norm = "full_layer_layer_norm"};
  for (int step = 0; step < steps; ++step) {
    // In doubles, as Hugging Face computes it: int(i / (num_hidden_layers / num_hidden_groups))
    // can differ from the exact quotient (18 layers in 14 groups: step 9 uses group 6, not 7).
    const int group = int(double(step) / (double(steps) / groups));
    for (int inner = 0; inner < layers_per_group; ++inner) {
      parts.weights.layers.push_back(
          read_encoder_layer(tensors, spec,
                             "encoder.albert_layer_groups." + std::to_string(group) +
                                 ".albert_layers." + std::to_string(inner) + ".",
                             names, eps));
    }
  }
  read_masked_lm_head(tensors, parts,
                      {.dense = "predictions.dense",
                       .norm = "predictions.LayerNorm",
                       .bias = "predictions.bias",
                       .decoder = "predictions.decoder"},
                      e, spec.activation, eps);
  read_classifier_head(config, tensors, parts,
                       {.dense = "pooler",
                        .activation = ClassifierHead::DenseActivation::kTanh,
                        .classifier = "classifier",
                        .token_classifier = "classifier"});
  return parts;
}

}  // namespace attn
