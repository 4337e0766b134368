// BLOOM (BloomForCausalLM): ALiBi instead of position embeddings, a LayerNorm right after the
// word embeddings, pre-norm blocks with a fused query_key_value projection grouped per head,
// tanh GELU, output tied to the word embeddings.
#include "src/base/error.h"
#include "src/model/model.h"

namespace attn {

ModelParts map_bloom(const JsonFile& config, TensorSource& tensors) {
  ModelParts parts;
  ArchSpec& spec = parts.spec;
  spec.topology = BlockTopology::kPreNorm;
  spec.causal = true;
  spec.activation = Activation::kGeluTanh;
  // BloomConfig accepts both spellings of these.
  const char* layers_key = config.has("num_hidden_layers") ? "num_hidden_layers" : "n_layer";
  const char* heads_key = config.has("num_attention_heads") ? "num_attention_heads" : "n_head";
  const char* width_key = config.has("n_embed") ? "n_embed" : "hidden_size";
  spec.n_layer = config.positive_int(layers_key, kMaxLayers);
  spec.d_model = config.positive_int(width_key, kMaxModelWidth);
  if (config.has("head_dim")) config.fail("head_dim", "is not a BLOOM setting");
  read_attention_heads(config, spec, heads_key, heads_key);
  spec.d_ff = 4 * spec.d_model;
  spec.vocab_size = config.positive_int("vocab_size", kMaxVocabSize);
  // ALiBi sets no limit on the length; seq_length, when given, is the training context.
  spec.max_positions = config.optional_positive_int("seq_length", kMaxPositions).value_or(2048);
  check_model_sizes(config, spec, "vocab_size", width_key, layers_key, "seq_length");
  const float eps = read_norm_eps(config, "layer_norm_epsilon", 1e-5f);
  if (config.optional_bool("apply_residual_connection_post_layernorm").value_or(false)) {
    config.fail("apply_residual_connection_post_layernorm", "is true, which attn does not support");
  }
  parts.positions.alibi_slopes = alibi_slopes(spec.n_head);

  const int64_t d = spec.d_model, ff = spec.d_ff;
  for (int i = 0; i < spec.n_layer; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    AttentionWeights attention =
        tensors.per_head_fused_qkv(p + "self_attention.query_key_value", spec);
    attention.output = tensors.linear(p + "self_attention.dense", d, d, true);
    parts.weights.layers.push_back(LayerWeights{
        .attention_norm = tensors.layer_norm(p + "input_layernorm", d, eps),
        .attention = attention,
        .ffn_norm = tensors.layer_norm(p + "post_attention_layernorm", d, eps),
        .ffn = {.gate = std::nullopt,
                .up = tensors.linear(p + "mlp.dense_h_to_4h", d, ff, true),
                .down = tensors.linear(p + "mlp.dense_4h_to_h", ff, d, true)},
    });
  }
  parts.weights.token_embedding = tensors.embedding("word_embeddings.weight", spec.vocab_size, d);
  parts.weights.embedding_norm = tensors.layer_norm("word_embeddings_layernorm", d, eps);
  parts.weights.final_norm = tensors.layer_norm("ln_f", d, eps);
  parts.weights.head = decoder_head(
      tensors, parts, config.optional_bool("tie_word_embeddings").value_or(true), "lm_head", false);
  return parts;
}

}  // namespace attn
