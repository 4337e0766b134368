// GPT-2 (GPT2LMHeadModel): pre-norm blocks, learned positions, tanh GELU, causal attention,
// output tied to the token embedding. Projections are Conv1D, stored [in, out]; c_attn holds
// the query, key and value projections side by side.
#include "src/base/error.h"
#include "src/model/model.h"

namespace attn {

ModelParts map_gpt2(const JsonFile& config, TensorSource& tensors) {
  ModelParts parts;
  ArchSpec& spec = parts.spec;
  spec.topology = BlockTopology::kPreNorm;
  spec.causal = true;
  spec.n_layer = config.positive_int("n_layer", kMaxLayers);
  spec.d_model = config.positive_int("n_embd", kMaxModelWidth);
  spec.n_head = config.positive_int("n_head", kMaxHeads);
  if (spec.d_model % spec.n_head != 0) config.fail("n_head", "must divide n_embd");
  spec.n_kv_head = spec.n_head;
  spec.head_dim = spec.d_model / spec.n_head;
  // n_inner null means 4 x n_embd, which kMaxModelWidth keeps within kMaxFfWidth.
  spec.d_ff = config.optional_positive_int("n_inner", kMaxFfWidth).value_or(4 * spec.d_model);
  spec.vocab_size = config.positive_int("vocab_size", kMaxVocabSize);
  spec.max_positions = config.positive_int("n_positions", kMaxPositions);
  const float eps = read_norm_eps(config, "layer_norm_epsilon", 1e-5f);
  check_model_sizes(config, spec, "vocab_size", "n_embd", "n_layer", "n_positions");
  spec.activation = read_activation(config, "activation_function", "gelu_new");
  for (const char* unsupported : {"scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn"}) {
    if (config.optional_bool(unsupported).value_or(false)) {
      config.fail(unsupported, "is true, which attn does not support");
    }
  }

  const int64_t d = spec.d_model, ff = spec.d_ff;
  auto conv1d = [&](const std::string& name, int64_t in, int64_t out) {
    return tensors.conv1d(name, in, out);
  };
  for (int i = 0; i < spec.n_layer; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    const Linear qkv = conv1d(p + "attn.c_attn", d, 3 * d);
    auto qkv_slice = [&](int part) { return qkv.output_slice(int(part * d), int(d)); };
    parts.weights.layers.push_back(LayerWeights{
        .attention_norm = tensors.layer_norm(p + "ln_1", d, eps),
        .attention = {.query = qkv_slice(0),
                      .key = qkv_slice(1),
                      .value = qkv_slice(2),
                      .output = conv1d(p + "attn.c_proj", d, d)},
        .ffn_norm = tensors.layer_norm(p + "ln_2", d, eps),
        .ffn = {.gate = std::nullopt,
                .up = conv1d(p + "mlp.c_fc", d, ff),
                .down = conv1d(p + "mlp.c_proj", ff, d)},
    });
  }
  parts.weights.token_embedding = tensors.embedding("wte.weight", spec.vocab_size, d);
  parts.positions.learned_table = tensors.get("wpe.weight", {spec.max_positions, d});
  parts.weights.final_norm = tensors.layer_norm("ln_f", d, eps);
  // Tied by default, as Hugging Face does (a stored lm_head.weight then holds the same values).
  parts.weights.head = decoder_head(
      tensors, parts, config.optional_bool("tie_word_embeddings").value_or(true), "lm_head", false);
  return parts;
}

}  // namespace attn
