// BERT (BertForMaskedLM, or a bare BertModel): post-norm blocks, learned positions plus
// token-type embeddings, LayerNorm after the embeddings, exact (erf) GELU, bidirectional
// attention. nn.Linear weights are stored [out, in]. The masked-LM head is a dense layer, the
// activation and a LayerNorm, then a decoder tied to the word embeddings with its own bias.
#include "src/model/model.h"

namespace attn {

ModelParts map_bert_encoder(const JsonFile& config, TensorSource& tensors, float eps) {
  ModelParts parts;
  ArchSpec& spec = parts.spec;
  spec.topology = BlockTopology::kPostNorm;
  spec.causal = false;
  read_common_sizes(config, spec, 0);
  spec.n_token_types = config.optional_positive_int("type_vocab_size", kMaxTokenTypes).value_or(2);
  spec.activation = read_activation(config, "hidden_act", "gelu");
  require_absolute_positions(config);
  read_bert_embeddings(tensors, parts, eps);

  const EncoderLayerNames names = {.query = "attention.self.query",
                                   .key = "attention.self.key",
                                   .value = "attention.self.value",
                                   .output = "attention.output.dense",
                                   .attention_norm = "attention.output.LayerNorm",
                                   .up = "intermediate.dense",
                                   .down = "output.dense",
                                   .ffn_norm = "output.LayerNorm"};
  for (int i = 0; i < spec.n_layer; ++i) {
    parts.weights.layers.push_back(
        read_encoder_layer(tensors, spec, "encoder.layer." + std::to_string(i) + ".", names, eps));
  }
  return parts;
}

float read_bert_norm_eps(const JsonFile& config) {
  return read_norm_eps(config, "layer_norm_eps", 1e-12f);
}

ModelParts map_bert(const JsonFile& config, TensorSource& tensors) {
  const float eps = read_bert_norm_eps(config);
  ModelParts parts = map_bert_encoder(config, tensors, eps);
  read_masked_lm_head(tensors, parts,
                      {.dense = "cls.predictions.transform.dense",
                       .norm = "cls.predictions.transform.LayerNorm",
                       .bias = "cls.predictions.bias",
                       .decoder = "cls.predictions.decoder"},
                      parts.spec.d_model, parts.spec.activation, eps);
  read_classifier_head(config, tensors, parts,
                       {.dense = "pooler.dense",
                        .activation = ClassifierHead::DenseActivation::kTanh,
                        .classifier = "classifier",
                        .token_classifier = "classifier"});
  return parts;
}

}  // namespace attn
