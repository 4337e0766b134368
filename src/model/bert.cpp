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
  spec.norm_placement = NormPlacement::kPost;
  spec.causal = false;
  spec.n_layer = config.positive_int("num_hidden_layers", kMaxLayers);
  spec.d_model = config.positive_int("hidden_size", kMaxModelWidth);
  spec.n_head = config.positive_int("num_attention_heads");
  spec.d_ff = config.positive_int("intermediate_size", kMaxFfWidth);
  spec.vocab_size = config.positive_int("vocab_size", kMaxVocabSize);
  spec.max_positions = config.positive_int("max_position_embeddings", kMaxPositions);
  spec.n_token_types = config.optional_positive_int("type_vocab_size", kMaxTokenTypes).value_or(2);
  const float eps =
      config.optional_float_in_range("layer_norm_eps", kMinNormEpsilon, kMaxNormEpsilon)
          .value_or(1e-12f);
  if (spec.d_model % spec.n_head != 0)
    config.fail("num_attention_heads", "must divide hidden_size");
  check_size_product(config, {{"vocab_size", spec.vocab_size}, {"hidden_size", spec.d_model}},
                     "the word embedding");
  check_size_product(config,
                     {{"num_hidden_layers", spec.n_layer},
                      {"max_position_embeddings", spec.max_positions},
                      {"hidden_size", spec.d_model}},
                     "the key and value cache for the full context");
  const std::string activation = config.optional_string("hidden_act").value_or("gelu");
  if (activation == "gelu") {
    spec.activation = Activation::kGeluErf;
  } else if (activation == "gelu_new" || activation == "gelu_pytorch_tanh") {
    spec.activation = Activation::kGeluTanh;
  } else {
    config.fail("hidden_act", "is '" + brief_text(activation) + "', which attn does not support");
  }
  const std::string position_type =
      config.optional_string("position_embedding_type").value_or("absolute");
  if (position_type != "absolute") {
    config.fail("position_embedding_type",
                "is '" + brief_text(position_type) + "'; only 'absolute' is supported");
  }

  const int64_t d = spec.d_model, ff = spec.d_ff, vocab = spec.vocab_size;
  auto dense = [&](const std::string& name, int64_t in, int64_t out) {
    return Linear{tensors.get(name + ".weight", {out, in}),
                  tensors.get(name + ".bias", {out}),
                  int(in),
                  int(out),
                  false,
                  int(in)};
  };
  const std::string e = "embeddings.";
  parts.weights.token_embedding = tensors.get(e + "word_embeddings.weight", {vocab, d});
  parts.weights.token_type_embedding =
      tensors.get(e + "token_type_embeddings.weight", {spec.n_token_types, d});
  parts.positions = std::make_unique<LearnedPositions>(
      tensors.get(e + "position_embeddings.weight", {spec.max_positions, d}));
  parts.weights.embedding_norm = tensors.norm(e + "LayerNorm", d, eps);

  for (int i = 0; i < spec.n_layer; ++i) {
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    parts.weights.layers.push_back(LayerWeights{
        .attention_norm = tensors.norm(p + "attention.output.LayerNorm", d, eps),
        .query = dense(p + "attention.self.query", d, d),
        .key = dense(p + "attention.self.key", d, d),
        .value = dense(p + "attention.self.value", d, d),
        .attention_output = dense(p + "attention.output.dense", d, d),
        .ffn_norm = tensors.norm(p + "output.LayerNorm", d, eps),
        .ffn_up = dense(p + "intermediate.dense", d, ff),
        .ffn_down = dense(p + "output.dense", ff, d),
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
  parts.weights.head =
      OutputHead{.transform = dense("cls.predictions.transform.dense", d, d),
                 .transform_norm = tensors.norm("cls.predictions.transform.LayerNorm", d, eps),
                 .decoder = Linear{decoder_weight, tensors.get("cls.predictions.bias", {vocab}),
                                   int(d), int(vocab), false, int(d)}};
  return parts;
}

}  // namespace attn
