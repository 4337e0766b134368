// Llama-architecture decoders (LlamaForCausalLM: Llama 1-3, TinyLlama, SmolLM, OpenLLaMA;
// MistralForCausalLM; Qwen2ForCausalLM; Qwen3ForCausalLM): pre-norm blocks with RMSNorm, RoPE on
// the whole head, grouped-query attention, a gated SiLU feed-forward (SwiGLU), no biases except
// where the config asks (Llama attention_bias / mlp_bias; Qwen2 always biases q, k and v).
// Qwen3 norms each head's query and key before RoPE. Phi-3 (Phi3ForCausalLM: Phi-3, Phi-3.5-mini,
// Phi-4-mini) fuses query, key and value into one qkv_proj (rows q, then k, then v) and gate and
// up into one gate_up_proj (rows gate, then up), used in place as slices; its longrope RoPE is
// read with the other rope_scaling types. Mistral and Phi-3 attend over a sliding window on every
// layer when sliding_window is set; Qwen2 and Qwen3 only with use_sliding_window, on the layers
// from max_window_layers on. SmolLM3 (SmolLM3ForCausalLM) is Llama without RoPE on every
// no_rope_layer_interval-th layer (or those no_rope_layers marks 0), its embeddings tied by
// default.
#include <algorithm>

#include "src/base/error.h"
#include "src/model/model.h"

namespace attn {

namespace {

// What the Llama-shaped families change.
struct Variant {
  bool qkv_bias = false;
  bool output_bias = false;
  bool mlp_bias = false;
  bool query_key_norms = false;    // Qwen3's q_norm and k_norm
  bool fused_projections = false;  // Phi-3's qkv_proj and gate_up_proj
  // Qwen's window rules: only with use_sliding_window (false when absent), and only on layers
  // from max_window_layers on. Otherwise (Mistral) sliding_window, when set, is every layer's.
  bool qwen_window = false;
  // SmolLM3: no RoPE on the layers no_rope_layers marks 0; embeddings tied unless told not.
  bool no_rope_layers = false;
};

// SmolLM3Config's no_rope_layers: 1 (RoPE) or 0 (none) per layer, by default 0 on every
// no_rope_layer_interval-th layer (every 4th).
std::vector<bool> read_rope_layers(const JsonFile& config, const ArchSpec& spec) {
  std::vector<bool> rope(spec.n_layer);
  if (config.has("no_rope_layers") && !config.json()["no_rope_layers"].is_null()) {
    const nlohmann::json& flags = config.json()["no_rope_layers"];
    if (!flags.is_array() || int(flags.size()) != spec.n_layer) {
      config.fail("no_rope_layers",
                  "must list 0 or 1 for each of the " + std::to_string(spec.n_layer) + " layers");
    }
    for (int i = 0; i < spec.n_layer; ++i) {
      if (flags[i] != 0 && flags[i] != 1) {
        config.fail("no_rope_layers", "has " + brief_json(flags[i]) + "; each must be 0 or 1");
      }
      rope[i] = flags[i] == 1;
    }
    return rope;
  }
  const int interval =
      config.optional_positive_int("no_rope_layer_interval", kMaxLayers).value_or(4);
  for (int i = 0; i < spec.n_layer; ++i) rope[i] = (i + 1) % interval != 0;
  return rope;
}

// The first windowed layer (n_layer: none) and the window, from sliding_window,
// use_sliding_window and max_window_layers.
std::pair<int, int> read_sliding_window(const JsonFile& config, const ArchSpec& spec,
                                        const Variant& variant) {
  const std::optional<int> window = config.optional_positive_int("sliding_window", kMaxPositions);
  if (!window || !config.optional_bool("use_sliding_window").value_or(!variant.qwen_window)) {
    return {spec.n_layer, 0};
  }
  if (!variant.qwen_window) return {0, *window};
  return {config.optional_int_in_range("max_window_layers", 0, kMaxLayers).value_or(0), *window};
}

ModelParts map_llama_like(const JsonFile& config, TensorSource& tensors, const Variant& variant) {
  ModelParts parts;
  ArchSpec& spec = parts.spec;
  spec.topology = BlockTopology::kPreNorm;
  spec.gated_ffn = true;
  spec.causal = true;
  read_common_sizes(config, spec, 2048);
  const auto [first_windowed, window] = read_sliding_window(config, spec, variant);
  spec.layers.assign(spec.n_layer, spec.default_layer_spec(true));
  for (int i = first_windowed; i < spec.n_layer; ++i) spec.layers[i].window = window;
  if (variant.no_rope_layers) {
    if (window > 0) {
      config.fail("use_sliding_window", "is true; attn does not run SmolLM3's sliding window");
    }
    const std::vector<bool> rope = read_rope_layers(config, spec);
    for (int i = 0; i < spec.n_layer; ++i) spec.layers[i].rotary = rope[i] ? 0 : -1;
  }
  spec.activation = read_activation(config, "hidden_act", "silu");
  const float eps = read_norm_eps(config, "rms_norm_eps", 1e-6f);
  const float theta = config.optional_float_in_range("rope_theta", 1, 1e12).value_or(10000.0f);
  parts.positions.rotary = {read_rotary(config, spec, "partial_rotary_factor", 1.0f, theta)};

  const int64_t d = spec.d_model, ff = spec.d_ff;
  for (int i = 0; i < spec.n_layer; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    const std::string a = p + "self_attn.", m = p + "mlp.";
    const bool qkv_bias = variant.qkv_bias, mlp_bias = variant.mlp_bias;
    const int q_dim = spec.q_dim(), kv_dim = spec.kv_dim();
    // Read in the order of the file's layer: norm, attention, norm, feed-forward.
    LayerWeights layer;
    layer.attention_norm = tensors.rms_norm(p + "input_layernorm", d, eps);
    AttentionWeights& attention = layer.attention;
    if (variant.fused_projections) {
      const Linear qkv = tensors.linear(a + "qkv_proj", d, q_dim + 2 * kv_dim, qkv_bias);
      attention.query = qkv.output_slice(0, q_dim);
      attention.key = qkv.output_slice(q_dim, kv_dim);
      attention.value = qkv.output_slice(q_dim + kv_dim, kv_dim);
    } else {
      attention.query = tensors.linear(a + "q_proj", d, q_dim, qkv_bias);
      attention.key = tensors.linear(a + "k_proj", d, kv_dim, qkv_bias);
      attention.value = tensors.linear(a + "v_proj", d, kv_dim, qkv_bias);
    }
    attention.output = tensors.linear(a + "o_proj", q_dim, d, variant.output_bias);
    if (variant.query_key_norms) {
      attention.query_norm = tensors.rms_norm(a + "q_norm", spec.head_dim, eps);
      attention.key_norm = tensors.rms_norm(a + "k_norm", spec.head_dim, eps);
    }
    layer.ffn_norm = tensors.rms_norm(p + "post_attention_layernorm", d, eps);
    FeedForwardWeights& ffn = layer.ffn;
    if (variant.fused_projections) {
      const Linear gate_up = tensors.linear(m + "gate_up_proj", d, 2 * ff, mlp_bias);
      ffn.gate = gate_up.output_slice(0, int(ff));
      ffn.up = gate_up.output_slice(int(ff), int(ff));
    } else {
      ffn.gate = tensors.linear(m + "gate_proj", d, ff, mlp_bias);
      ffn.up = tensors.linear(m + "up_proj", d, ff, mlp_bias);
    }
    ffn.down = tensors.linear(m + "down_proj", ff, d, mlp_bias);
    parts.weights.layers.push_back(layer);
  }
  parts.weights.token_embedding = tensors.embedding("embed_tokens.weight", spec.vocab_size, d);
  parts.weights.final_norm = tensors.rms_norm("norm", d, eps);
  parts.weights.head = decoder_head(
      tensors, parts, config.optional_bool("tie_word_embeddings").value_or(variant.no_rope_layers),
      "lm_head", false);
  return parts;
}

}  // namespace

ModelParts map_llama(const JsonFile& config, TensorSource& tensors) {
  const bool attention_bias = config.optional_bool("attention_bias").value_or(false);
  return map_llama_like(config, tensors,
                        {.qkv_bias = attention_bias,
                         .output_bias = attention_bias,
                         .mlp_bias = config.optional_bool("mlp_bias").value_or(false)});
}

ModelParts map_qwen2(const JsonFile& config, TensorSource& tensors) {
  return map_llama_like(config, tensors, {.qkv_bias = true, .qwen_window = true});
}

ModelParts map_phi3(const JsonFile& config, TensorSource& tensors) {
  return map_llama_like(config, tensors, {.fused_projections = true});
}

ModelParts map_smollm3(const JsonFile& config, TensorSource& tensors) {
  const bool attention_bias = config.optional_bool("attention_bias").value_or(false);
  return map_llama_like(config, tensors,
                        {.qkv_bias = attention_bias,
                         .output_bias = attention_bias,
                         .mlp_bias = config.optional_bool("mlp_bias").value_or(false),
                         .qwen_window = true,
                         .no_rope_layers = true});
}

ModelParts map_qwen3(const JsonFile& config, TensorSource& tensors) {
  const bool attention_bias = config.optional_bool("attention_bias").value_or(false);
  return map_llama_like(config, tensors,
                        {.qkv_bias = attention_bias,
                         .output_bias = attention_bias,
                         .query_key_norms = true,
                         .qwen_window = true});
}

}  // namespace attn
