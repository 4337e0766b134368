// Phi-1, Phi-1.5 and Phi-2 (PhiForCausalLM): one LayerNorm per block feeding attention and the
// MLP in parallel (x + attn(ln(x)) + mlp(ln(x))), RoPE on the first partial_rotary_factor of
// each head, biases everywhere, gelu_new, and an output head with its own bias.
#include "src/base/error.h"
#include "src/model/model.h"

namespace attn {

ModelParts map_phi(const JsonFile& config, TensorSource& tensors) {
  ModelParts parts;
  ArchSpec& spec = parts.spec;
  spec.topology = BlockTopology::kParallel;
  spec.causal = true;
  spec.n_layer = config.positive_int("num_hidden_layers", kMaxLayers);
  spec.d_model = config.positive_int("hidden_size", kMaxModelWidth);
  read_attention_heads(config, spec, "num_attention_heads", "num_key_value_heads");
  spec.d_ff = config.positive_int("intermediate_size", kMaxFfWidth);
  spec.vocab_size = config.positive_int("vocab_size", kMaxVocabSize);
  spec.max_positions =
      config.optional_positive_int("max_position_embeddings", kMaxPositions).value_or(2048);
  check_model_sizes(config, spec, "vocab_size", "hidden_size", "num_hidden_layers",
                    "max_position_embeddings");
  spec.activation = read_activation(config, "hidden_act", "gelu_new");
  const float eps = read_norm_eps(config, "layer_norm_eps", 1e-5f);
  if (config.optional_bool("qk_layernorm").value_or(false)) {
    config.fail("qk_layernorm", "is true, which attn does not support");
  }
  const float theta = config.optional_float_in_range("rope_theta", 1, 1e12).value_or(10000.0f);
  parts.positions.rotary = read_rotary(config, spec, "partial_rotary_factor", 0.5f, theta);

  const int64_t d = spec.d_model, ff = spec.d_ff;
  for (int i = 0; i < spec.n_layer; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    const std::string a = p + "self_attn.";
    parts.weights.layers.push_back(LayerWeights{
        .attention_norm = tensors.layer_norm(p + "input_layernorm", d, eps),
        .attention = {.query = tensors.linear(a + "q_proj", d, spec.q_dim(), true),
                      .key = tensors.linear(a + "k_proj", d, spec.kv_dim(), true),
                      .value = tensors.linear(a + "v_proj", d, spec.kv_dim(), true),
                      .output = tensors.linear(a + "dense", spec.q_dim(), d, true)},
        .ffn_norm = std::nullopt,  // the MLP reads the same normalized input
        .ffn = {.gate = std::nullopt,
                .up = tensors.linear(p + "mlp.fc1", d, ff, true),
                .down = tensors.linear(p + "mlp.fc2", ff, d, true)},
    });
  }
  parts.weights.token_embedding = tensors.get("embed_tokens.weight", {spec.vocab_size, d});
  parts.weights.final_norm = tensors.layer_norm("final_layernorm", d, eps);
  const bool tied = config.optional_bool("tie_word_embeddings").value_or(false);
  const float* output_weight =
      tied ? parts.weights.token_embedding : tensors.get("lm_head.weight", {spec.vocab_size, d});
  parts.weights.head =
      OutputHead{.transform = std::nullopt,
                 .transform_norm = std::nullopt,
                 .decoder = Linear{.weight = output_weight,
                                   .bias = tensors.get("lm_head.bias", {spec.vocab_size}),
                                   .in = int(d),
                                   .out = spec.vocab_size,
                                   .row_stride = int(d)}};
  return parts;
}

}  // namespace attn
