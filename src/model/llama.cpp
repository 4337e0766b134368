// Llama-architecture decoders (LlamaForCausalLM: Llama 1-3, TinyLlama, SmolLM, OpenLLaMA;
// MistralForCausalLM; Qwen2ForCausalLM): pre-norm blocks with RMSNorm, RoPE on the whole head,
// grouped-query attention, a gated SiLU feed-forward (SwiGLU), no biases except where the
// config asks (Llama attention_bias / mlp_bias; Qwen2 always biases q, k and v).
#include <algorithm>

#include "src/base/error.h"
#include "src/model/model.h"

namespace attn {

namespace {

struct Biases {
  bool qkv = false;
  bool output = false;
  bool mlp = false;
};

ModelParts map_llama_like(const JsonFile& config, TensorSource& tensors, Biases biases) {
  ModelParts parts;
  ArchSpec& spec = parts.spec;
  spec.topology = BlockTopology::kPreNorm;
  spec.gated_ffn = true;
  spec.causal = true;
  read_common_sizes(config, spec, 2048);
  // Sliding-window attention (Mistral, Qwen2 with use_sliding_window) is not implemented:
  // within the window it equals full attention, so the window is the context attn offers.
  const bool windowed =
      config.has("sliding_window") && config.optional_bool("use_sliding_window").value_or(true);
  if (windowed) {
    spec.max_positions =
        std::min(spec.max_positions, config.positive_int("sliding_window", kMaxPositions));
  }
  spec.activation = read_activation(config, "hidden_act", "silu");
  const float eps = read_norm_eps(config, "rms_norm_eps", 1e-6f);
  const float theta = config.optional_float_in_range("rope_theta", 1, 1e12).value_or(10000.0f);
  parts.positions.rotary = read_rotary(config, spec, "partial_rotary_factor", 1.0f, theta);

  const int64_t d = spec.d_model, ff = spec.d_ff;
  for (int i = 0; i < spec.n_layer; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    const std::string a = p + "self_attn.", m = p + "mlp.";
    parts.weights.layers.push_back(LayerWeights{
        .attention_norm = tensors.rms_norm(p + "input_layernorm", d, eps),
        .attention = {.query = tensors.linear(a + "q_proj", d, spec.q_dim(), biases.qkv),
                      .key = tensors.linear(a + "k_proj", d, spec.kv_dim(), biases.qkv),
                      .value = tensors.linear(a + "v_proj", d, spec.kv_dim(), biases.qkv),
                      .output = tensors.linear(a + "o_proj", spec.q_dim(), d, biases.output)},
        .ffn_norm = tensors.rms_norm(p + "post_attention_layernorm", d, eps),
        .ffn = {.gate = tensors.linear(m + "gate_proj", d, ff, biases.mlp),
                .up = tensors.linear(m + "up_proj", d, ff, biases.mlp),
                .down = tensors.linear(m + "down_proj", ff, d, biases.mlp)},
    });
  }
  parts.weights.token_embedding = tensors.embedding("embed_tokens.weight", spec.vocab_size, d);
  parts.weights.final_norm = tensors.rms_norm("norm", d, eps);
  parts.weights.head =
      decoder_head(tensors, parts, config.optional_bool("tie_word_embeddings").value_or(false),
                   "lm_head", false);
  return parts;
}

}  // namespace

ModelParts map_llama(const JsonFile& config, TensorSource& tensors) {
  const bool attention_bias = config.optional_bool("attention_bias").value_or(false);
  return map_llama_like(config, tensors,
                        {.qkv = attention_bias,
                         .output = attention_bias,
                         .mlp = config.optional_bool("mlp_bias").value_or(false)});
}

ModelParts map_qwen2(const JsonFile& config, TensorSource& tensors) {
  return map_llama_like(config, tensors, {.qkv = true, .output = false, .mlp = false});
}

}  // namespace attn
