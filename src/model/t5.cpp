// T5 (T5ForConditionalGeneration; also T5 v1.1 and Flan-T5 with their gated feed-forward): an
// encoder-decoder of pre-norm blocks with T5's RMS-style LayerNorm (no bias, no mean), no
// biases in any projection, no position embedding but a learned relative position bias computed
// by each stack's first layer and shared by all its layers, and unscaled attention scores. The
// tied output multiplies the decoder output by d_model^-0.5 first.
#include <cmath>

#include "src/base/error.h"
#include "src/model/model.h"

namespace attn {

namespace {

// T5's attention: q, k, v, o without biases; n_head heads of d_kv.
AttentionWeights read_attention(TensorSource& tensors, const std::string& prefix,
                                const ArchSpec& spec) {
  auto dense = [&](const char* name, int64_t in, int64_t out) {
    return tensors.linear(prefix + name, in, out, false);
  };
  const int64_t d = spec.d_model, inner = spec.q_dim();
  return {.query = dense("q", d, inner),
          .key = dense("k", d, inner),
          .value = dense("v", d, inner),
          .output = dense("o", inner, d)};
}

// One stack ("encoder" or "decoder") of n_layer blocks under STACK.block.N.layer.K: K = 0 self-
// attention, 1 the decoder's cross-attention, then the feed-forward; STACK.final_layer_norm.
ModelParts read_stack(const JsonFile& config, TensorSource& tensors, const std::string& stack,
                      int n_layer, const Linear& embedding) {
  const bool decoder = stack == "decoder";
  ModelParts parts;
  ArchSpec& spec = parts.spec;
  spec.topology = BlockTopology::kPreNorm;
  spec.causal = decoder;
  spec.n_layer = n_layer;
  // T5 folds the head_dim^-0.5 into its query weights: its scores are plain q.k.
  spec.layers.assign(n_layer, LayerSpec{.score_scale = 1.0f});
  spec.d_model = config.positive_int("d_model", kMaxModelWidth);
  spec.n_head = config.positive_int("num_heads", kMaxHeads);
  spec.n_kv_head = spec.n_head;
  spec.head_dim = config.positive_int("d_kv", kMaxModelWidth);
  check_size_product(config, {{"num_heads", spec.n_head}, {"d_kv", spec.head_dim}},
                     "the attention width");
  spec.d_ff = config.positive_int("d_ff", kMaxFfWidth);
  spec.vocab_size = config.positive_int("vocab_size", kMaxVocabSize);
  // Relative positions have no limit of their own; n_positions is the length T5 was trained
  // for and the longest input attn accepts.
  spec.max_positions = config.optional_positive_int("n_positions", kMaxPositions).value_or(512);
  check_model_sizes(config, spec, "vocab_size", "d_model",
                    decoder ? "num_decoder_layers" : "num_layers", "n_positions");
  // feed_forward_proj: "relu", "gelu", or "gated-ACT" (v1.1: "gated-gelu", which Hugging Face
  // runs as gelu_new).
  const std::string projection = config.optional_string("feed_forward_proj").value_or("relu");
  spec.gated_ffn = projection.starts_with("gated-");
  const std::string activation = spec.gated_ffn ? projection.substr(6) : projection;
  if (activation == "relu") {
    spec.activation = Activation::kRelu;
  } else if (activation == "gelu" && spec.gated_ffn) {
    spec.activation = Activation::kGeluTanh;
  } else if (activation == "gelu") {
    spec.activation = Activation::kGeluErf;
  } else {
    config.fail("feed_forward_proj", "is '" + brief_text(projection) +
                                         "', which attn does not support (known: relu, gelu, "
                                         "gated-relu, gated-gelu)");
  }
  const float eps = read_norm_eps(config, "layer_norm_epsilon", 1e-6f);

  const int64_t d = spec.d_model, ff = spec.d_ff;
  for (int i = 0; i < spec.n_layer; ++i) {
    const std::string p = stack + ".block." + std::to_string(i) + ".layer.";
    const std::string ffn = p + (decoder ? "2." : "1.") + "DenseReluDense.";
    LayerWeights layer{
        .attention_norm = tensors.rms_norm(p + "0.layer_norm", d, eps),
        .attention = read_attention(tensors, p + "0.SelfAttention.", spec),
        .ffn_norm = tensors.rms_norm(p + (decoder ? "2." : "1.") + "layer_norm", d, eps),
        .ffn = {.gate = std::nullopt, .up = {}, .down = tensors.linear(ffn + "wo", ff, d, false)},
    };
    if (spec.gated_ffn) {
      layer.ffn.gate = tensors.linear(ffn + "wi_0", d, ff, false);
      layer.ffn.up = tensors.linear(ffn + "wi_1", d, ff, false);
    } else {
      layer.ffn.up = tensors.linear(ffn + "wi", d, ff, false);
    }
    if (decoder) {
      layer.cross = CrossAttentionWeights{
          .norm = tensors.rms_norm(p + "1.layer_norm", d, eps),
          .attention = read_attention(tensors, p + "1.EncDecAttention.", spec)};
    }
    parts.weights.layers.push_back(layer);
  }
  parts.weights.token_embedding = embedding;
  parts.weights.final_norm = tensors.rms_norm(stack + ".final_layer_norm", d, eps);

  RelativePositionBias bias;
  bias.num_buckets =
      config.optional_positive_int("relative_attention_num_buckets", 1 << 16).value_or(32);
  bias.max_distance =
      config.optional_positive_int("relative_attention_max_distance", kMaxPositions).value_or(128);
  if (bias.num_buckets < 4 || bias.max_distance <= bias.num_buckets / 4) {
    config.fail("relative_attention_num_buckets",
                "must be at least 4 and less than 4 x relative_attention_max_distance");
  }
  bias.bidirectional = !decoder;
  bias.table = tensors.get(stack + ".block.0.layer.0.SelfAttention.relative_attention_bias.weight",
                           {bias.num_buckets, spec.n_head});
  parts.positions.relative_bias = bias;
  return parts;
}

}  // namespace

ModelParts map_t5(const JsonFile& config, TensorSource& tensors) {
  const int vocab = config.positive_int("vocab_size", kMaxVocabSize);
  const int d = config.positive_int("d_model", kMaxModelWidth);
  const int n_layers = config.positive_int("num_layers", kMaxLayers);
  const int n_decoder_layers =
      config.optional_positive_int("num_decoder_layers", kMaxLayers).value_or(n_layers);
  const Linear embedding = tensors.embedding("shared.weight", vocab, d);

  ModelParts parts = read_stack(config, tensors, "decoder", n_decoder_layers, embedding);
  parts.encoder =
      std::make_unique<ModelParts>(read_stack(config, tensors, "encoder", n_layers, embedding));
  const bool tied = config.optional_bool("tie_word_embeddings").value_or(true);
  parts.weights.head = decoder_head(tensors, parts, tied, "lm_head", false);
  if (tied) parts.weights.head->input_scale = 1.0f / std::sqrt(float(d));
  return parts;
}

}  // namespace attn
