// ModernBERT (ModernBertForMaskedLM, or the bare ModernBertModel of a sentence-transformers
// folder): a pre-norm encoder with no position table. Its LayerNorms have no bias unless
// norm_bias; layer 0 has no attention norm (its input is the normed embeddings already). Wqkv
// fuses the projections (rows q, then k, then v) and Wi the feed-forward's input and gate (rows
// input, then gate: Wo(act(input) * gate)), both used in place as slices. Every
// global_attn_every_n_layers-th layer (from layer 0) attends over all keys with RoPE at
// global_rope_theta; the others over a band of local_attention / 2 keys on either side, with
// RoPE at local_rope_theta. The masked-LM head is norm(act(dense(x))), then the decoder tied to
// the token embedding with decoder.bias.
#include "src/model/family_config.h"
#include "src/model/model.h"

namespace attn {

ModelParts map_modernbert(const JsonFile& config, TensorSource& tensors) {
  ModelParts parts;
  ArchSpec& spec = parts.spec;
  spec.topology = BlockTopology::kPreNorm;
  spec.causal = false;
  spec.gated_ffn = true;
  read_common_sizes(config, spec, 8192);
  spec.activation = read_activation(config, "hidden_activation", "gelu");
  const float eps = read_norm_eps(config, "norm_eps", 1e-5f);
  const bool norm_bias = config.optional_bool("norm_bias").value_or(false);
  const bool attention_bias = config.optional_bool("attention_bias").value_or(false);
  const bool mlp_bias = config.optional_bool("mlp_bias").value_or(false);

  // RoPE table 0 rotates the global layers, table 1 the local ones.
  const float global_theta =
      config.optional_float_in_range("global_rope_theta", 1, 1e12).value_or(160000.0f);
  const float local_theta =
      config.optional_float_in_range("local_rope_theta", 1, 1e12).value_or(global_theta);
  parts.positions.rotary = {read_rotary(config, spec, "partial_rotary_factor", 1.0f, global_theta),
                            read_rotary(config, spec, "partial_rotary_factor", 1.0f, local_theta)};
  const int every =
      config.optional_positive_int("global_attn_every_n_layers", kMaxLayers).value_or(1);
  const int window = config.optional_positive_int("local_attention", kMaxPositions).value_or(128);
  for (int i = 0; i < spec.n_layer; ++i) {
    const bool global = i % every == 0;
    LayerSpec layer = spec.default_layer_spec(true);
    layer.window = global ? 0 : window;
    layer.rotary = global ? 0 : 1;
    spec.layers.push_back(layer);
  }

  const int64_t d = spec.d_model, ff = spec.d_ff;
  parts.weights.token_embedding =
      tensors.embedding("embeddings.tok_embeddings.weight", spec.vocab_size, d);
  parts.weights.embedding_norm = tensors.layer_norm("embeddings.norm", d, eps, norm_bias);
  for (int i = 0; i < spec.n_layer; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    LayerWeights layer;
    layer.attention_norm =
        i == 0 ? identity_norm() : tensors.layer_norm(p + "attn_norm", d, eps, norm_bias);
    const int q_dim = spec.q_dim(), kv_dim = spec.kv_dim();
    const Linear qkv = tensors.linear(p + "attn.Wqkv", d, q_dim + 2 * kv_dim, attention_bias);
    layer.attention.query = qkv.output_slice(0, q_dim);
    layer.attention.key = qkv.output_slice(q_dim, kv_dim);
    layer.attention.value = qkv.output_slice(q_dim + kv_dim, kv_dim);
    layer.attention.output = tensors.linear(p + "attn.Wo", q_dim, d, attention_bias);
    layer.ffn_norm = tensors.layer_norm(p + "mlp_norm", d, eps, norm_bias);
    const Linear input_gate = tensors.linear(p + "mlp.Wi", d, 2 * ff, mlp_bias);
    layer.ffn.gate = input_gate.output_slice(0, int(ff));  // the activated half
    layer.ffn.up = input_gate.output_slice(int(ff), int(ff));
    layer.ffn.down = tensors.linear(p + "mlp.Wo", ff, d, mlp_bias);
    parts.weights.layers.push_back(layer);
  }
  parts.weights.final_norm = tensors.layer_norm("final_norm", d, eps, norm_bias);

  // The masked-LM head, or (a bare ModernBertModel) none.
  if (!tensors.has("head.dense.weight")) {
    parts.missing_head = "the weights have no masked-LM head (missing head.dense.weight)";
    return parts;
  }
  const bool head_bias = config.optional_bool("classifier_bias").value_or(false);
  Linear decoder = tensors.has("decoder.weight")
                       ? tensors.output_head("decoder", d, spec.vocab_size)
                       : tensors.tied_head(parts.weights.token_embedding);
  if (config.optional_bool("decoder_bias").value_or(true)) {
    decoder.bias = tensors.get("decoder.bias", {spec.vocab_size});
  }
  parts.weights.head = OutputHead{
      .transform =
          HeadTransform{.dense = tensors.linear("head.dense", d, d, head_bias),
                        .activation = read_activation(config, "classifier_activation", "gelu"),
                        .norm = tensors.layer_norm("head.norm", d, eps, norm_bias)},
      .decoder = decoder};
  return parts;
}

}  // namespace attn
