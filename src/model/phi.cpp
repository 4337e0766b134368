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
  read_common_sizes(config, spec, 2048);
  spec.activation = read_activation(config, "hidden_act", "gelu_new");
  const float eps = read_norm_eps(config, "layer_norm_eps", 1e-5f);
  if (config.optional_bool("qk_layernorm").value_or(false)) {
    config.fail("qk_layernorm", "is true, which attn does not support");
  }
  const float theta = config.optional_float_in_range("rope_theta", 1, 1e12).value_or(10000.0f);
  parts.positions.rotary = {read_rotary(config, spec, "partial_rotary_factor", 0.5f, theta)};

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
  parts.weights.token_embedding = tensors.embedding("embed_tokens.weight", spec.vocab_size, d);
  parts.weights.final_norm = tensors.layer_norm("final_layernorm", d, eps);
  parts.weights.head = decoder_head(
      tensors, parts, config.optional_bool("tie_word_embeddings").value_or(false), "lm_head", true);
  return parts;
}

}  // namespace attn
