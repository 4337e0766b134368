// Marian (MarianMTModel: the OPUS-MT translation models): the original transformer's
// encoder-decoder. Post-norm blocks with biases everywhere, fixed sinusoidal positions, token
// embeddings scaled by sqrt(d_model) (scale_embedding), no norm after the embeddings or after
// either stack; one embedding shared by encoder, decoder and the tied output, which adds
// final_logits_bias.
#include <cmath>

#include "src/base/error.h"
#include "src/model/model.h"

namespace attn {

namespace {

// Hugging Face's BART-family attention: q_proj, k_proj, v_proj, out_proj, all biased.
AttentionWeights read_attention(TensorSource& tensors, const std::string& prefix, int64_t d) {
  auto dense = [&](const char* name) { return tensors.linear(prefix + name, d, d, true); };
  return {.query = dense("q_proj"),
          .key = dense("k_proj"),
          .value = dense("v_proj"),
          .output = dense("out_proj")};
}

// One stack ("encoder" or "decoder"): its sizes from config.json's encoder_* / decoder_* keys,
// its layers, and the shared embedding and position table.
ModelParts read_stack(const JsonFile& config, TensorSource& tensors, const std::string& stack,
                      const Linear& embedding, const float* position_table) {
  const bool decoder = stack == "decoder";
  ModelParts parts;
  ArchSpec& spec = parts.spec;
  spec.topology = BlockTopology::kPostNorm;
  spec.causal = decoder;
  spec.d_model = config.positive_int("d_model", kMaxModelWidth);
  spec.n_layer = config.positive_int(stack + "_layers", kMaxLayers);
  read_attention_heads(config, spec, (stack + "_attention_heads").c_str(), "num_key_value_heads");
  spec.d_ff = config.positive_int(stack + "_ffn_dim", kMaxFfWidth);
  spec.vocab_size = config.positive_int("vocab_size", kMaxVocabSize);
  spec.max_positions = config.positive_int("max_position_embeddings", kMaxPositions);
  check_model_sizes(config, spec, "vocab_size", "d_model", (stack + "_layers").c_str(),
                    "max_position_embeddings");
  spec.activation = read_activation(config, "activation_function", "gelu");
  if (config.optional_bool("scale_embedding").value_or(false)) {
    spec.embedding_scale = std::sqrt(float(spec.d_model));
  }

  // nn.LayerNorm's default epsilon: Marian's config has none.
  const float eps = 1e-5f;
  const int64_t d = spec.d_model, ff = spec.d_ff;
  for (int i = 0; i < spec.n_layer; ++i) {
    const std::string p = stack + ".layers." + std::to_string(i) + ".";
    LayerWeights layer{
        .attention_norm = tensors.layer_norm(p + "self_attn_layer_norm", d, eps),
        .attention = read_attention(tensors, p + "self_attn.", d),
        .ffn_norm = tensors.layer_norm(p + "final_layer_norm", d, eps),
        .ffn = {.gate = std::nullopt,
                .up = tensors.linear(p + "fc1", d, ff, true),
                .down = tensors.linear(p + "fc2", ff, d, true)},
    };
    if (decoder) {
      layer.cross =
          CrossAttentionWeights{.norm = tensors.layer_norm(p + "encoder_attn_layer_norm", d, eps),
                                .attention = read_attention(tensors, p + "encoder_attn.", d)};
    }
    parts.weights.layers.push_back(layer);
  }
  parts.weights.token_embedding = embedding;
  parts.positions.learned_table = position_table;
  parts.positions.sinusoidal = true;
  return parts;
}

}  // namespace

ModelParts map_marian(const JsonFile& config, TensorSource& tensors) {
  if (!config.optional_bool("share_encoder_decoder_embeddings").value_or(true)) {
    config.fail("share_encoder_decoder_embeddings",
                "is false (separate source and target vocabularies), which attn does not support");
  }
  const int vocab = config.positive_int("vocab_size", kMaxVocabSize);
  const int d = config.positive_int("d_model", kMaxModelWidth);
  if (d % 2 != 0) config.fail("d_model", "must be even for the sinusoidal positions");
  if (config.optional_positive_int("decoder_vocab_size", kMaxVocabSize).value_or(vocab) != vocab) {
    config.fail("decoder_vocab_size", "differs from vocab_size, which attn does not support");
  }
  const int n_positions = config.positive_int("max_position_embeddings", kMaxPositions);
  check_size_product(config, {{"max_position_embeddings", n_positions}, {"d_model", d}},
                     "the position table");
  // Computed, never read from the file: checkpoints may or may not store the (fixed) table.
  const std::vector<float> sinusoids = sinusoidal_position_table(n_positions, d);
  float* position_table = tensors.new_table(int64_t(sinusoids.size()));
  std::copy(sinusoids.begin(), sinusoids.end(), position_table);
  const Linear embedding = tensors.embedding("shared.weight", vocab, d);

  ModelParts parts = read_stack(config, tensors, "decoder", embedding, position_table);
  parts.encoder = std::make_unique<ModelParts>(
      read_stack(config, tensors, "encoder", embedding, position_table));
  // lm_head and final_logits_bias sit outside the "model." prefix.
  parts.weights.head = decoder_head(
      tensors, parts, config.optional_bool("tie_word_embeddings").value_or(true), "lm_head", false);
  parts.weights.head->decoder.bias = tensors.get("final_logits_bias", {1, vocab});
  return parts;
}

}  // namespace attn
