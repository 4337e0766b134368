#include "src/tasks/model_info.h"

#include <spdlog/fmt/fmt.h>

#include <map>
#include <string>

#include "src/io/json_util.h"
#include "src/tasks/embed.h"

namespace attn {
namespace {

// "learned", "learned (from row 2)", "rotary (32 dims per head, theta 10000, linear x2)",
// "alibi".
std::string describe_positions(const PositionScheme& positions) {
  if (positions.relative_bias) {
    return fmt::format("relative buckets ({}, up to distance {})",
                       positions.relative_bias->num_buckets, positions.relative_bias->max_distance);
  }
  if (positions.sinusoidal) return "sinusoidal";
  if (positions.learned_table) {
    return positions.table_offset == 0
               ? "learned"
               : "learned (from row " + std::to_string(positions.table_offset) + ")";
  }
  if (!positions.alibi_slopes.empty()) return "alibi";
  if (positions.rotary.empty()) return "none";
  // "rotary (64 dims per head, theta 10000)", or one such description per table.
  std::string tables;
  for (const RotaryEmbedding& rotary : positions.rotary) {
    std::string text = "rotary (" + std::to_string(rotary.dim) + " dims per head, theta " +
                       fmt::format("{}", rotary.theta);
    switch (rotary.scaling) {
      case RotaryEmbedding::Scaling::kNone:
        break;
      case RotaryEmbedding::Scaling::kLinear:
        text += fmt::format(", linear x{}", rotary.factor);
        break;
      case RotaryEmbedding::Scaling::kDynamic:
        text += fmt::format(", dynamic x{}", rotary.factor);
        break;
      case RotaryEmbedding::Scaling::kLlama3:
        text += fmt::format(", llama3 x{}", rotary.factor);
        break;
      case RotaryEmbedding::Scaling::kLongRope:
        text += fmt::format(", longrope from {}", rotary.original_max_positions);
        break;
    }
    tables += (tables.empty() ? "" : " / ") + text + ")";
  }
  return tables;
}

// The fields of generation_config.json that generate uses, as given.
nlohmann::ordered_json generation_defaults(const GenerationConfig& config) {
  nlohmann::ordered_json out = {{"eos_token_ids", config.eos_token_ids}};
  if (config.do_sample) out["do_sample"] = *config.do_sample;
  if (config.temperature) out["temperature"] = shortest(*config.temperature);
  if (config.top_k) out["top_k"] = *config.top_k;
  if (config.top_p) out["top_p"] = shortest(*config.top_p);
  if (config.min_p) out["min_p"] = shortest(*config.min_p);
  if (config.typical_p) out["typical_p"] = shortest(*config.typical_p);
  if (config.repetition_penalty) out["repetition_penalty"] = shortest(*config.repetition_penalty);
  if (config.max_new_tokens) out["max_new_tokens"] = *config.max_new_tokens;
  return out;
}

}  // namespace

nlohmann::ordered_json model_info(
    const Model& model, const std::optional<SentenceTransformersConfig>& sentence_transformers) {
  const ArchSpec& spec = model.spec();
  std::map<std::string, int> dtypes;
  nlohmann::ordered_json weight_files = nlohmann::ordered_json::array();
  for (const auto& file : model.weights->files()) {
    for (const auto& [name, tensor] : file->tensors()) ++dtypes[tensor.dtype];
    weight_files.push_back(file->path().filename().string() + " (" + file->format() + ", " +
                           std::to_string(file->tensors().size()) + " tensors)");
  }
  nlohmann::ordered_json out = {
      {"model", model.name()},
      {"model_type", model.model_type},
      {"architecture", model.architecture},
      {"kind", model.kind() == ModelKind::kEncoderDecoder ? "encoder-decoder"
               : spec.causal                              ? "decoder"
                                                          : "encoder"},
      {"n_layers", spec.n_layer},
      {"d_model", spec.d_model},
      {"n_heads", spec.n_head},
      {"n_kv_heads", spec.n_kv_head},
      {"head_dim", spec.head_dim},
      {"positions", describe_positions(model.transformer->positions())},
      {"d_ff", spec.d_ff},
      {"vocab_size", spec.vocab_size},
      {"context", spec.max_positions},
      {"parameters", model.parameter_count},
      {"weights", model.weights->source().filename().string()},
      {"weight_files", weight_files},
      {"tensor_dtypes", dtypes},
      {"compute_dtype", model.compute_dtype()},
      {"output_head", model.transformer->has_head()},
  };
  if (spec.embedding_dim > 0) out["embedding_dim"] = spec.embedding_dim;
  if (const ClassifierHead* head = model.transformer->classifier()) {
    out["classifier"] = head->pooling == ClassifierHead::Pooling::kEveryToken
                            ? "per token (attn ner)"
                            : "per sequence (attn classify)";
    out["labels"] = model.labels;
    if (!model.problem_type.empty()) out["problem_type"] = model.problem_type;
  }
  if (model.encoder) {
    // The sizes above are the decoder's; the encoder's layer count may differ.
    out["encoder_layers"] = model.encoder->spec().n_layer;
    if (model.generation.decoder_start_token_id) {
      out["decoder_start_token_id"] = *model.generation.decoder_start_token_id;
    }
  }
  if (spec.causal) out["generation_defaults"] = generation_defaults(model.generation);
  if (sentence_transformers) {
    const EmbeddingOptions embedding = embedding_options(model, sentence_transformers);
    out["pooling"] = pooling_name(embedding.pooling);
    out["normalize"] = embedding.normalize;
    out["max_seq_length"] = embedding.max_seq_length;
    out["embedding_dimension"] = spec.d_model;
  }
  return out;
}

}  // namespace attn
