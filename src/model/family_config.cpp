#include "src/model/family_config.h"

#include <cmath>
#include <string>

#include "src/base/error.h"

namespace attn {

void check_size_product(const JsonFile& config,
                        std::initializer_list<std::pair<const char*, int>> factors,
                        const char* what) {
  std::string names, values;
  int64_t product = 1;
  bool too_large = false;
  for (const auto& [name, value] : factors) {
    names += (names.empty() ? "" : " x ") + std::string(name);
    values += (values.empty() ? "" : " x ") + std::to_string(value);
    // Compared before multiplying, so that the product itself cannot overflow.
    too_large = too_large || value > kMaxElements / product;
    if (!too_large) product *= value;
  }
  if (too_large) {
    throw Error(config.path().string() + ": " + names + " = " + values + " (" + what +
                ") is more than attn's limit of 2^40 elements");
  }
}

void check_model_sizes(const JsonFile& config, const ArchSpec& spec, const char* vocab_key,
                       const char* width_key, const char* layers_key, const char* positions_key) {
  check_size_product(config, {{vocab_key, spec.vocab_size}, {width_key, spec.d_model}},
                     "the token embedding");
  // Named by the width field when keys and values are as wide as the model (no grouped-query
  // attention, no head_dim of its own).
  const char* kv_width_key = spec.kv_dim() == spec.d_model ? width_key : "key/value width";
  check_size_product(config,
                     {{layers_key, spec.n_layer},
                      {positions_key, spec.max_positions},
                      {kv_width_key, spec.kv_dim()}},
                     "the KV cache for the full context");
}

void read_common_sizes(const JsonFile& config, ArchSpec& spec, int default_positions) {
  spec.n_layer = config.positive_int("num_hidden_layers", kMaxLayers);
  spec.d_model = config.positive_int("hidden_size", kMaxModelWidth);
  read_attention_heads(config, spec, "num_attention_heads", "num_key_value_heads");
  spec.d_ff = config.positive_int("intermediate_size", kMaxFfWidth);
  spec.vocab_size = config.positive_int("vocab_size", kMaxVocabSize);
  spec.max_positions = default_positions > 0
                           ? config.optional_positive_int("max_position_embeddings", kMaxPositions)
                                 .value_or(default_positions)
                           : config.positive_int("max_position_embeddings", kMaxPositions);
  check_model_sizes(config, spec, "vocab_size", "hidden_size", "num_hidden_layers",
                    "max_position_embeddings");
}

Activation read_activation(const JsonFile& config, const char* key, const char* default_name) {
  const std::string name = config.optional_string(key).value_or(default_name);
  if (name == "gelu") return Activation::kGeluErf;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") {
    return Activation::kGeluTanh;
  }
  if (name == "silu" || name == "swish") return Activation::kSilu;
  if (name == "relu") return Activation::kRelu;
  config.fail(key, "is '" + brief_text(name) +
                       "', which attn does not support (known: gelu, gelu_new, "
                       "gelu_pytorch_tanh, gelu_fast, silu, swish, relu)");
}

void require_absolute_positions(const JsonFile& config) {
  const std::string type = config.optional_string("position_embedding_type").value_or("absolute");
  if (type != "absolute") {
    config.fail("position_embedding_type",
                "is '" + brief_text(type) + "'; only 'absolute' is supported");
  }
}

float read_norm_eps(const JsonFile& config, const char* key, float default_value) {
  return config.optional_float_in_range(key, kMinNormEpsilon, kMaxNormEpsilon)
      .value_or(default_value);
}

void read_attention_heads(const JsonFile& config, ArchSpec& spec, const char* heads_key,
                          const char* kv_heads_key) {
  spec.n_head = config.positive_int(heads_key, kMaxHeads);
  spec.n_kv_head = config.optional_positive_int(kv_heads_key, kMaxHeads).value_or(spec.n_head);
  if (spec.n_head % spec.n_kv_head != 0) {
    config.fail(kv_heads_key, "is " + std::to_string(spec.n_kv_head) + ", which does not divide " +
                                  heads_key + " = " + std::to_string(spec.n_head));
  }
  if (config.has("head_dim")) {
    spec.head_dim = config.positive_int("head_dim", kMaxModelWidth);
    check_size_product(config, {{heads_key, spec.n_head}, {"head_dim", spec.head_dim}},
                       "the query width");
  } else {
    if (spec.d_model % spec.n_head != 0) {
      config.fail(heads_key, "is " + std::to_string(spec.n_head) +
                                 ", which does not divide the hidden size " +
                                 std::to_string(spec.d_model) + " (and no head_dim is given)");
    }
    spec.head_dim = spec.d_model / spec.n_head;
  }
  if (int64_t(spec.n_head) * spec.head_dim > kMaxModelWidth) {
    config.fail(heads_key,
                "times head_dim is more than attn's limit of " + std::to_string(kMaxModelWidth));
  }
}

namespace {

// config.json's rope_scaling: null, or {"type" (or "rope_type"): ..., "factor": ..., ...}.
// rope_scaling of type longrope (Phi-3's "su" before): short_factor and long_factor, one per
// rotated pair; original_max_position_embeddings there or in config.json; attention_factor
// there, else sqrt(1 + ln(max / original) / ln(original)) when the context was extended.
void read_long_rope(const JsonFile& config, const JsonFile& scaling, const ArchSpec& spec,
                    RotaryEmbedding& rotary) {
  rotary.scaling = RotaryEmbedding::Scaling::kLongRope;
  const char* original_key = "original_max_position_embeddings";
  rotary.original_max_positions = scaling.has(original_key)
                                      ? scaling.positive_int(original_key, kMaxPositions)
                                      : config.positive_int(original_key, kMaxPositions);
  for (auto [key, factors] : {std::pair{"short_factor", &rotary.short_factor},
                              std::pair{"long_factor", &rotary.long_factor}}) {
    const nlohmann::json& values = scaling.json().contains(key) ? scaling.json()[key] : nullptr;
    if (!values.is_array() || int(values.size()) != rotary.dim / 2) {
      scaling.fail(
          key, "must list " + std::to_string(rotary.dim / 2) + " numbers (one per rotated pair)");
    }
    for (const nlohmann::json& value : values) {
      if (!value.is_number() || !(value.get<double>() > 0) || value.get<double>() > 1e6) {
        scaling.fail(key, "must hold positive numbers, got " + brief_json(value));
      }
      factors->push_back(value.get<float>());
    }
  }
  const double extension = double(spec.max_positions) / rotary.original_max_positions;
  rotary.attention_factor =
      scaling.optional_float_in_range("attention_factor", 1e-6, 1e6)
          .value_or(extension <= 1
                        ? 1.0f
                        : float(std::sqrt(1 + std::log(extension) /
                                                  std::log(rotary.original_max_positions))));
}

void read_rope_scaling(const JsonFile& config, const ArchSpec& spec, RotaryEmbedding& rotary) {
  const std::optional<JsonFile> scaling = config.optional_object("rope_scaling");
  if (!scaling) return;
  const char* type_key = scaling->has("rope_type") ? "rope_type" : "type";
  const std::string type = scaling->string(type_key);
  if (type == "default") return;
  if (type == "longrope" || type == "su") {
    read_long_rope(config, *scaling, spec, rotary);
    return;
  }
  if (type != "linear" && type != "dynamic" && type != "llama3") {
    scaling->fail(type_key, "is '" + brief_text(type) +
                                "', which attn does not implement (known: linear, dynamic, "
                                "llama3, longrope)");
  }
  rotary.factor = scaling->float_in_range("factor", 1e-6, 1e6);
  if (type == "linear") {
    rotary.scaling = RotaryEmbedding::Scaling::kLinear;
  } else if (type == "dynamic") {
    rotary.scaling = RotaryEmbedding::Scaling::kDynamic;
    rotary.original_max_positions = spec.max_positions;
  } else {  // llama3
    rotary.scaling = RotaryEmbedding::Scaling::kLlama3;
    rotary.low_freq_factor = scaling->float_in_range("low_freq_factor", 1e-6, 1e6);
    rotary.high_freq_factor = scaling->float_in_range("high_freq_factor", 1e-6, 1e6);
    if (rotary.high_freq_factor <= rotary.low_freq_factor) {
      scaling->fail("high_freq_factor", "must be larger than low_freq_factor");
    }
    rotary.original_max_positions =
        scaling->positive_int("original_max_position_embeddings", kMaxPositions);
  }
}

}  // namespace

RotaryEmbedding read_rotary(const JsonFile& config, const ArchSpec& spec, const char* fraction_key,
                            float default_fraction, float theta) {
  double fraction = default_fraction;
  if (config.has(fraction_key)) {
    fraction = config.float_in_range(fraction_key, 0, 1);
    fraction = config.json()[fraction_key].get<double>();  // the exact value, not its float
    if (fraction <= 0) config.fail(fraction_key, "must be more than 0 and at most 1, got 0");
  }
  RotaryEmbedding rotary;
  // As Hugging Face: int(head_dim * fraction).
  rotary.dim = int(spec.head_dim * fraction);
  if (rotary.dim < 2 || rotary.dim % 2 != 0) {
    config.fail(fraction_key, "gives a rotary dimension of " + std::to_string(rotary.dim) +
                                  " (of head_dim " + std::to_string(spec.head_dim) +
                                  "); it must be even and at least 2");
  }
  rotary.theta = theta;
  read_rope_scaling(config, spec, rotary);
  rotary.init();
  return rotary;
}

}  // namespace attn
