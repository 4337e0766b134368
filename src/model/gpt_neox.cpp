// GPT-NeoX (GPTNeoXForCausalLM: Pythia, GPT-NeoX-20B): LayerNorm, RoPE on the first rotary_pct
// of each head, a fused query_key_value projection grouped per head, and (by default) parallel
// residual blocks: x + attn(ln1(x)) + mlp(ln2(x)).
#include "src/base/error.h"
#include "src/model/model.h"

namespace attn {

ModelParts map_gpt_neox(const JsonFile& config, TensorSource& tensors) {
  ModelParts parts;
  ArchSpec& spec = parts.spec;
  spec.topology = config.optional_bool("use_parallel_residual").value_or(true)
                      ? BlockTopology::kParallel
                      : BlockTopology::kPreNorm;
  spec.causal = true;
  for (const char* key : {"head_dim", "num_key_value_heads"}) {
    if (config.has(key)) config.fail(key, "is not a GPT-NeoX setting");
  }
  read_common_sizes(config, spec, 2048);
  spec.activation = read_activation(config, "hidden_act", "gelu");
  const float eps = read_norm_eps(config, "layer_norm_eps", 1e-5f);
  if (!config.optional_bool("attention_bias").value_or(true)) {
    config.fail("attention_bias", "is false, which attn does not support for GPT-NeoX");
  }
  // Newer configs name the base rope_theta, older ones rotary_emb_base.
  const char* theta_key = config.has("rope_theta") ? "rope_theta" : "rotary_emb_base";
  const float theta = config.optional_float_in_range(theta_key, 1, 1e12).value_or(10000.0f);
  parts.positions.rotary = {read_rotary(config, spec, "rotary_pct", 0.25f, theta)};

  const int64_t d = spec.d_model, ff = spec.d_ff;
  for (int i = 0; i < spec.n_layer; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    AttentionWeights attention = tensors.per_head_fused_qkv(p + "attention.query_key_value", spec);
    attention.output = tensors.linear(p + "attention.dense", d, d, true);
    parts.weights.layers.push_back(LayerWeights{
        .attention_norm = tensors.layer_norm(p + "input_layernorm", d, eps),
        .attention = attention,
        .ffn_norm = tensors.layer_norm(p + "post_attention_layernorm", d, eps),
        .ffn = {.gate = std::nullopt,
                .up = tensors.linear(p + "mlp.dense_h_to_4h", d, ff, true),
                .down = tensors.linear(p + "mlp.dense_4h_to_h", ff, d, true)},
    });
  }
  parts.weights.token_embedding = tensors.embedding("embed_in.weight", spec.vocab_size, d);
  parts.weights.final_norm = tensors.layer_norm("final_layer_norm", d, eps);
  parts.weights.head =
      decoder_head(tensors, parts, config.optional_bool("tie_word_embeddings").value_or(false),
                   "embed_out", false);
  return parts;
}

}  // namespace attn
