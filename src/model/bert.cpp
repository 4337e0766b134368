// BERT (BertForMaskedLM, or a bare BertModel): post-norm blocks, learned positions plus
// token-type embeddings, LayerNorm after the embeddings, exact (erf) GELU, bidirectional
// attention. nn.Linear weights are stored [out, in]. The masked-LM head is a dense layer, GELU
// and LayerNorm, then a decoder tied to the word embeddings with its own bias.
#include "src/base/error.h"
#include "src/model/model.h"

namespace attn {

ModelParts map_bert(const JsonFile& config, TensorSource& tensors) {
  ModelParts parts;
  ArchSpec& spec = parts.spec;
  spec.topology = BlockTopology::kPostNorm;
  spec.causal = false;
  read_common_sizes(config, spec, 0);
  spec.n_token_types = config.optional_positive_int("type_vocab_size", kMaxTokenTypes).value_or(2);
  const float eps = read_norm_eps(config, "layer_norm_eps", 1e-12f);
  spec.activation = read_activation(config, "hidden_act", "gelu");
  const std::string position_type =
      config.optional_string("position_embedding_type").value_or("absolute");
  if (position_type != "absolute") {
    config.fail("position_embedding_type",
                "is '" + brief_text(position_type) + "'; only 'absolute' is supported");
  }

  const int64_t d = spec.d_model, ff = spec.d_ff, vocab = spec.vocab_size;
  auto dense = [&](const std::string& name, int64_t in, int64_t out) {
    return tensors.linear(name, in, out, true);
  };
  const std::string e = "embeddings.";
  parts.weights.token_embedding = tensors.get(e + "word_embeddings.weight", {vocab, d});
  parts.weights.token_type_embedding =
      tensors.get(e + "token_type_embeddings.weight", {spec.n_token_types, d});
  parts.positions.learned_table =
      tensors.get(e + "position_embeddings.weight", {spec.max_positions, d});
  parts.weights.embedding_norm = tensors.layer_norm(e + "LayerNorm", d, eps);

  for (int i = 0; i < spec.n_layer; ++i) {
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    parts.weights.layers.push_back(LayerWeights{
        .attention_norm = tensors.layer_norm(p + "attention.output.LayerNorm", d, eps),
        .attention = {.query = dense(p + "attention.self.query", d, d),
                      .key = dense(p + "attention.self.key", d, d),
                      .value = dense(p + "attention.self.value", d, d),
                      .output = dense(p + "attention.output.dense", d, d)},
        .ffn_norm = tensors.layer_norm(p + "output.LayerNorm", d, eps),
        .ffn = {.gate = std::nullopt,
                .up = dense(p + "intermediate.dense", d, ff),
                .down = dense(p + "output.dense", ff, d)},
    });
  }

  // The masked-LM head: all of it, or (a bare BertModel) none of it.
  const std::vector<std::string> head_tensors = {
      "cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias",
      "cls.predictions.transform.LayerNorm", "cls.predictions.bias"};
  std::string missing;
  for (const auto& name : head_tensors) {
    const bool present = name.ends_with("LayerNorm")
                             ? tensors.has(name + ".weight") || tensors.has(name + ".gamma")
                             : tensors.has(name);
    if (!present) missing += (missing.empty() ? "" : ", ") + name;
  }
  if (!missing.empty()) {
    parts.missing_head = "model.safetensors has no masked-LM head (missing " + missing + ")";
    return parts;
  }
  const float* decoder_weight = tensors.has("cls.predictions.decoder.weight")
                                    ? tensors.get("cls.predictions.decoder.weight", {vocab, d})
                                    : parts.weights.token_embedding;
  parts.weights.head = OutputHead{
      .transform = dense("cls.predictions.transform.dense", d, d),
      .transform_norm = tensors.layer_norm("cls.predictions.transform.LayerNorm", d, eps),
      .decoder = Linear{.weight = decoder_weight,
                        .bias = tensors.get("cls.predictions.bias", {vocab}),
                        .in = int(d),
                        .out = int(vocab),
                        .row_stride = int(d)}};
  return parts;
}

}  // namespace attn
