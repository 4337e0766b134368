// Gemma-2 (Gemma2ForCausalLM) and Gemma-3's text model (Gemma3ForCausalLM, model_type
// gemma3_text): pre-norm blocks with sandwich norms (each sublayer's output is normed again
// before the add), RMSNorms that scale by (1 + weight), a gated GELU feed-forward (GeGLU),
// embeddings times sqrt(hidden_size), scores scaled by query_pre_attn_scalar^-0.5, and local
// (sliding-window) layers among global ones. Gemma-2 windows every even layer and soft-caps
// scores and logits; Gemma-3 norms each head's query and key, and rotates its local layers with
// their own RoPE base (rope_local_base_freq), its global ones with rope_theta and rope_scaling.
#include <cmath>

#include "src/model/family_config.h"
#include "src/model/model.h"

namespace attn {

namespace {

// Gemma's RMSNorm, x / rms(x) * (1 + weight), as an RMSNorm whose weight is 1 + the stored one
// (float32, as Hugging Face adds them).
Norm gemma_rms_norm(TensorSource& tensors, const std::string& name, int64_t d, float eps) {
  const float* stored = tensors.get(name + ".weight", {d});
  float* weight = tensors.new_table(d);
  for (int64_t i = 0; i < d; ++i) weight[i] = 1.0f + stored[i];
  return Norm{.weight = weight, .eps = eps, .kind = NormKind::kRmsNorm};
}

// A soft-cap from config.json: absent or null is none (0).
float read_softcap(const JsonFile& config, const char* key) {
  return config.optional_float_in_range(key, 1e-6, 1e6).value_or(0.0f);
}

// What Gemma-3 changes.
struct GemmaVariant {
  bool gemma3 = false;
};

// Whether layer i attends over the sliding window: Gemma-2's even layers; Gemma-3's layer_types
// ("sliding_attention" / "full_attention") when given, else all but every
// sliding_window_pattern-th layer.
std::vector<bool> read_sliding_layers(const JsonFile& config, const ArchSpec& spec,
                                      const GemmaVariant& variant) {
  std::vector<bool> sliding(spec.n_layer);
  if (!variant.gemma3) {
    for (int i = 0; i < spec.n_layer; ++i) sliding[i] = i % 2 == 0;
    return sliding;
  }
  if (config.has("layer_types")) {
    const nlohmann::json& types = config.json()["layer_types"];
    if (!types.is_array() || int(types.size()) != spec.n_layer) {
      config.fail("layer_types",
                  "must list one type per layer (" + std::to_string(spec.n_layer) + ")");
    }
    for (int i = 0; i < spec.n_layer; ++i) {
      if (types[i] != "sliding_attention" && types[i] != "full_attention") {
        config.fail("layer_types", "has " + brief_json(types[i]) +
                                       "; attn knows sliding_attention and full_attention");
      }
      sliding[i] = types[i] == "sliding_attention";
    }
    return sliding;
  }
  const int pattern =
      config.optional_positive_int("sliding_window_pattern", kMaxLayers).value_or(6);
  for (int i = 0; i < spec.n_layer; ++i) sliding[i] = (i + 1) % pattern != 0;
  return sliding;
}

ModelParts map_gemma_like(const JsonFile& config, TensorSource& tensors,
                          const GemmaVariant& variant) {
  ModelParts parts;
  ArchSpec& spec = parts.spec;
  spec.topology = BlockTopology::kPreNorm;
  spec.gated_ffn = true;
  spec.causal = true;
  read_common_sizes(config, spec, 8192);
  spec.activation =
      read_activation(config, config.has("hidden_activation") ? "hidden_activation" : "hidden_act",
                      "gelu_pytorch_tanh");
  // sqrt(hidden_size) in float32, as Hugging Face's normalizer.
  spec.embedding_scale = float(std::sqrt(double(spec.d_model)));
  const float eps = read_norm_eps(config, "rms_norm_eps", 1e-6f);

  // RoPE table 0 rotates the global layers; Gemma-3's local layers have table 1.
  const float theta = config.optional_float_in_range("rope_theta", 1, 1e12).value_or(10000.0f);
  parts.positions.rotary = {read_rotary(config, spec, "partial_rotary_factor", 1.0f, theta)};
  if (variant.gemma3) {
    RotaryEmbedding local;
    local.dim = parts.positions.rotary[0].dim;
    local.theta = config.optional_float_in_range("rope_local_base_freq", 1, 1e12).value_or(1e4f);
    local.init();
    parts.positions.rotary.push_back(local);
  }
  const int query_pre_attn_scalar = config.positive_int("query_pre_attn_scalar");
  const int window = config.positive_int("sliding_window", kMaxPositions);
  const std::vector<bool> sliding = read_sliding_layers(config, spec, variant);
  const float score_scale = float(std::pow(double(query_pre_attn_scalar), -0.5));
  const float score_softcap = read_softcap(config, "attn_logit_softcapping");
  for (int i = 0; i < spec.n_layer; ++i) {
    spec.layers.push_back({.window = sliding[i] ? window : 0,
                           .rotary = variant.gemma3 && sliding[i] ? 1 : 0,
                           .score_scale = score_scale,
                           .score_softcap = score_softcap});
  }

  const int64_t d = spec.d_model, ff = spec.d_ff;
  for (int i = 0; i < spec.n_layer; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    const std::string a = p + "self_attn.", m = p + "mlp.";
    AttentionWeights attention = {.query = tensors.linear(a + "q_proj", d, spec.q_dim(), false),
                                  .key = tensors.linear(a + "k_proj", d, spec.kv_dim(), false),
                                  .value = tensors.linear(a + "v_proj", d, spec.kv_dim(), false),
                                  .output = tensors.linear(a + "o_proj", spec.q_dim(), d, false)};
    if (variant.gemma3) {
      attention.query_norm = gemma_rms_norm(tensors, a + "q_norm", spec.head_dim, eps);
      attention.key_norm = gemma_rms_norm(tensors, a + "k_norm", spec.head_dim, eps);
    }
    parts.weights.layers.push_back(LayerWeights{
        .attention_norm = gemma_rms_norm(tensors, p + "input_layernorm", d, eps),
        .attention = attention,
        .ffn_norm = gemma_rms_norm(tensors, p + "pre_feedforward_layernorm", d, eps),
        .ffn = {.gate = tensors.linear(m + "gate_proj", d, ff, false),
                .up = tensors.linear(m + "up_proj", d, ff, false),
                .down = tensors.linear(m + "down_proj", ff, d, false)},
        .attention_output_norm = gemma_rms_norm(tensors, p + "post_attention_layernorm", d, eps),
        .ffn_output_norm = gemma_rms_norm(tensors, p + "post_feedforward_layernorm", d, eps),
    });
  }
  parts.weights.token_embedding = tensors.embedding("embed_tokens.weight", spec.vocab_size, d);
  parts.weights.final_norm = gemma_rms_norm(tensors, "norm", d, eps);
  parts.weights.head = decoder_head(
      tensors, parts, config.optional_bool("tie_word_embeddings").value_or(true), "lm_head", false);
  parts.weights.head->logit_softcap = read_softcap(config, "final_logit_softcapping");
  return parts;
}

}  // namespace

ModelParts map_gemma2(const JsonFile& config, TensorSource& tensors) {
  return map_gemma_like(config, tensors, {.gemma3 = false});
}

ModelParts map_gemma3_text(const JsonFile& config, TensorSource& tensors) {
  return map_gemma_like(config, tensors, {.gemma3 = true});
}

}  // namespace attn
