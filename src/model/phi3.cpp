// Phi-3, Phi-3.5-mini and Phi-4-mini (Phi3ForCausalLM): Llama's pre-norm block with RMSNorm and
// a gated SiLU feed-forward, but query, key and value come from one fused qkv_proj (rows q, then
// k, then v) and gate and up from one gate_up_proj (rows gate, then up), used in place as slices.
// RoPE over partial_rotary_factor of each head, with longrope scaling (short and long factors);
// a sliding window on every layer when sliding_window is set, as Mistral.
#include "src/model/family_config.h"
#include "src/model/model.h"

namespace attn {

ModelParts map_phi3(const JsonFile& config, TensorSource& tensors) {
  ModelParts parts;
  ArchSpec& spec = parts.spec;
  spec.topology = BlockTopology::kPreNorm;
  spec.gated_ffn = true;
  spec.causal = true;
  read_common_sizes(config, spec, 4096);
  spec.activation = read_activation(config, "hidden_act", "silu");
  const float eps = read_norm_eps(config, "rms_norm_eps", 1e-5f);
  const float theta = config.optional_float_in_range("rope_theta", 1, 1e12).value_or(10000.0f);
  parts.positions.rotary = {read_rotary(config, spec, "partial_rotary_factor", 1.0f, theta)};
  const int window = config.optional_positive_int("sliding_window", kMaxPositions).value_or(0);
  spec.layers.assign(spec.n_layer, spec.default_layer_spec(true));
  for (LayerSpec& layer : spec.layers) layer.window = window;

  const int64_t d = spec.d_model, ff = spec.d_ff;
  const int q_dim = spec.q_dim(), kv_dim = spec.kv_dim();
  for (int i = 0; i < spec.n_layer; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    const std::string a = p + "self_attn.", m = p + "mlp.";
    const Linear qkv = tensors.linear(a + "qkv_proj", d, q_dim + 2 * kv_dim, false);
    const Linear gate_up = tensors.linear(m + "gate_up_proj", d, 2 * ff, false);
    parts.weights.layers.push_back(LayerWeights{
        .attention_norm = tensors.rms_norm(p + "input_layernorm", d, eps),
        .attention = {.query = qkv.output_slice(0, q_dim),
                      .key = qkv.output_slice(q_dim, kv_dim),
                      .value = qkv.output_slice(q_dim + kv_dim, kv_dim),
                      .output = tensors.linear(a + "o_proj", q_dim, d, false)},
        .ffn_norm = tensors.rms_norm(p + "post_attention_layernorm", d, eps),
        .ffn = {.gate = gate_up.output_slice(0, int(ff)),
                .up = gate_up.output_slice(int(ff), int(ff)),
                .down = tensors.linear(m + "down_proj", ff, d, false)},
    });
  }
  parts.weights.token_embedding = tensors.embedding("embed_tokens.weight", spec.vocab_size, d);
  parts.weights.final_norm = tensors.rms_norm("norm", d, eps);
  parts.weights.head =
      decoder_head(tensors, parts, config.optional_bool("tie_word_embeddings").value_or(false),
                   "lm_head", false);
  return parts;
}

}  // namespace attn
