// GPT-2 (GPT2LMHeadModel): pre-norm blocks, learned positions, tanh GELU, causal attention,
// output tied to the token embedding. Projections are Conv1D, stored [in, out]; c_attn holds
// the query, key and value projections side by side.
#include "src/base/error.h"
#include "src/model/model.h"

namespace attn {

ModelParts map_gpt2(const JsonFile& config, TensorSource& tensors) {
  ModelParts parts;
  ArchSpec& spec = parts.spec;
  spec.norm_placement = NormPlacement::kPre;
  spec.causal = true;
  spec.n_layer = config.positive_int("n_layer", kMaxLayers);
  spec.d_model = config.positive_int("n_embd", kMaxModelWidth);
  spec.n_head = config.positive_int("n_head");
  // n_inner null means 4 x n_embd, which kMaxModelWidth keeps within kMaxFfWidth.
  spec.d_ff = config.optional_positive_int("n_inner", kMaxFfWidth).value_or(4 * spec.d_model);
  spec.vocab_size = config.positive_int("vocab_size", kMaxVocabSize);
  spec.max_positions = config.positive_int("n_positions", kMaxPositions);
  const float eps =
      config.optional_float_in_range("layer_norm_epsilon", kMinNormEpsilon, kMaxNormEpsilon)
          .value_or(1e-5f);
  if (spec.d_model % spec.n_head != 0) config.fail("n_head", "must divide n_embd");
  check_size_product(config, {{"vocab_size", spec.vocab_size}, {"n_embd", spec.d_model}},
                     "the token embedding");
  check_size_product(
      config,
      {{"n_layer", spec.n_layer}, {"n_positions", spec.max_positions}, {"n_embd", spec.d_model}},
      "the KV cache for the full context");
  const std::string activation = config.optional_string("activation_function").value_or("gelu_new");
  if (activation == "gelu_new" || activation == "gelu_pytorch_tanh") {
    spec.activation = Activation::kGeluTanh;
  } else if (activation == "gelu") {
    spec.activation = Activation::kGeluErf;
  } else {
    config.fail("activation_function",
                "is '" + brief_text(activation) + "', which attn does not support");
  }
  for (const char* unsupported : {"scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn"}) {
    if (config.has(unsupported) && config.json()[unsupported] == true) {
      config.fail(unsupported, "is true, which attn does not support");
    }
  }

  const int64_t d = spec.d_model, ff = spec.d_ff;
  for (int i = 0; i < spec.n_layer; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    const float* qkv_weight = tensors.get(p + "attn.c_attn.weight", {d, 3 * d});
    const float* qkv_bias = tensors.get(p + "attn.c_attn.bias", {3 * d});
    auto qkv_slice = [&](int part) {
      return Linear{qkv_weight + part * d, qkv_bias + part * d, int(d), int(d), true, int(3 * d)};
    };
    auto conv1d = [&](const std::string& name, int64_t in, int64_t out) {
      return Linear{tensors.get(name + ".weight", {in, out}),
                    tensors.get(name + ".bias", {out}),
                    int(in),
                    int(out),
                    true,
                    int(out)};
    };
    parts.weights.layers.push_back(LayerWeights{
        .attention_norm = tensors.norm(p + "ln_1", d, eps),
        .query = qkv_slice(0),
        .key = qkv_slice(1),
        .value = qkv_slice(2),
        .attention_output = conv1d(p + "attn.c_proj", d, d),
        .ffn_norm = tensors.norm(p + "ln_2", d, eps),
        .ffn_up = conv1d(p + "mlp.c_fc", d, ff),
        .ffn_down = conv1d(p + "mlp.c_proj", ff, d),
    });
  }
  parts.weights.token_embedding = tensors.get("wte.weight", {spec.vocab_size, d});
  parts.positions =
      std::make_unique<LearnedPositions>(tensors.get("wpe.weight", {spec.max_positions, d}));
  parts.weights.final_norm = tensors.norm("ln_f", d, eps);
  // lm_head.weight is normally tied to wte and not stored; use it when a checkpoint has it.
  const float* output_weight = tensors.has("lm_head.weight")
                                   ? tensors.get("lm_head.weight", {spec.vocab_size, d})
                                   : parts.weights.token_embedding;
  parts.weights.head =
      OutputHead{.transform = std::nullopt,
                 .transform_norm = std::nullopt,
                 .decoder = Linear{output_weight, nullptr, int(d), spec.vocab_size, false, int(d)}};
  return parts;
}

}  // namespace attn
