#include "src/cli/commands.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/base/unicode.h"
#include "src/io/output_file.h"
#include "src/model/sentence_transformers.h"
#include "src/tasks/embed.h"

namespace attn {

void require_utf8(std::string_view text, const std::string& what) {
  if (!is_valid_utf8(text)) decode_utf8(text, what);  // throws, naming the first invalid byte
}

std::vector<std::string> split_lines(std::string_view contents) {
  std::vector<std::string> lines;
  for (std::size_t begin = 0; begin < contents.size();) {
    std::size_t end = contents.find('\n', begin);
    if (end == std::string_view::npos) end = contents.size();
    std::string_view line = contents.substr(begin, end - begin);
    if (line.ends_with('\r')) line.remove_suffix(1);
    lines.emplace_back(line);
    begin = end + 1;
  }
  return lines;
}

std::string plural(long count, std::string_view singular, std::string_view plural_form) {
  if (count == 1) return "1 " + std::string(singular);
  return std::to_string(count) + " " +
         (plural_form.empty() ? std::string(singular) + "s" : std::string(plural_form));
}

void print_error(std::string_view message) {
  // Far above any real message; a line of megabytes would only bury the terminal.
  constexpr std::size_t kMaxLineBytes = 2000;
  std::string line = "attn: error: ";
  std::size_t shown = 0;
  for (; shown < message.size() && line.size() < kMaxLineBytes; ++shown) {
    const unsigned char c = message[shown];
    if (c < 0x20 || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02X", c);
      line += escaped;
    } else {
      line += char(c);
    }
  }
  if (shown < message.size()) {
    line.resize(complete_utf8_prefix(line));
    line += "...";
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

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

std::string page_with_data(std::string_view page, std::string_view marker,
                           const nlohmann::ordered_json& data) {
  std::string json;
  for (char c : json_text(data)) {
    if (c == '<') {
      json += "\\u003c";
    } else {
      json += c;
    }
  }
  const std::size_t at = page.find(marker);
  if (at == std::string_view::npos) throw std::logic_error("page template has no marker");
  return std::string(page.substr(0, at)) + json + std::string(page.substr(at + marker.size()));
}

double shortest(float value) { return std::stod(fmt::format("{}", value)); }

int run_info(const CommonOptions& common) {
  // A sentence-transformers folder may keep the Hugging Face model in a module folder.
  const std::optional<SentenceTransformersConfig> sentence_transformers =
      read_sentence_transformers_config(common.model_dir);
  auto model =
      load_model(sentence_transformers ? sentence_transformers->transformer_dir : common.model_dir,
                 common.dtype);
  const ArchSpec& spec = model->spec();
  std::map<std::string, int> dtypes;
  nlohmann::ordered_json weight_files = nlohmann::ordered_json::array();
  for (const auto& file : model->weights->files()) {
    for (const auto& [name, tensor] : file->tensors()) ++dtypes[tensor.dtype];
    weight_files.push_back(file->path().filename().string() + " (" + file->format() + ", " +
                           std::to_string(file->tensors().size()) + " tensors)");
  }
  nlohmann::ordered_json out = {
      {"model", model->name()},
      {"model_type", model->model_type},
      {"architecture", model->architecture},
      {"kind", model->kind() == ModelKind::kEncoderDecoder ? "encoder-decoder"
               : spec.causal                               ? "decoder"
                                                           : "encoder"},
      {"n_layers", spec.n_layer},
      {"d_model", spec.d_model},
      {"n_heads", spec.n_head},
      {"n_kv_heads", spec.n_kv_head},
      {"head_dim", spec.head_dim},
      {"positions", describe_positions(model->transformer->positions())},
      {"d_ff", spec.d_ff},
      {"vocab_size", spec.vocab_size},
      {"context", spec.max_positions},
      {"parameters", model->parameter_count},
      {"weights", model->weights->source().filename().string()},
      {"weight_files", weight_files},
      {"tensor_dtypes", dtypes},
      {"compute_dtype", model->compute_dtype()},
      {"output_head", model->transformer->has_head()},
  };
  if (spec.embedding_dim > 0) out["embedding_dim"] = spec.embedding_dim;
  if (const ClassifierHead* head = model->transformer->classifier()) {
    out["classifier"] = head->pooling == ClassifierHead::Pooling::kEveryToken
                            ? "per token (attn ner)"
                            : "per sequence (attn classify)";
    out["labels"] = model->labels;
    if (!model->problem_type.empty()) out["problem_type"] = model->problem_type;
  }
  if (model->encoder) {
    // The sizes above are the decoder's; the encoder's layer count may differ.
    out["encoder_layers"] = model->encoder->spec().n_layer;
    if (model->generation.decoder_start_token_id) {
      out["decoder_start_token_id"] = *model->generation.decoder_start_token_id;
    }
  }
  if (spec.causal) out["generation_defaults"] = generation_defaults(model->generation);
  if (sentence_transformers) {
    const EmbeddingOptions embedding = embedding_options(*model, sentence_transformers);
    out["pooling"] = pooling_name(embedding.pooling);
    out["normalize"] = embedding.normalize;
    out["max_seq_length"] = embedding.max_seq_length;
    out["embedding_dimension"] = spec.d_model;
  }
  if (common.json) {
    // One line, as every --json prints one object.
    write_stdout(json_text(out) + "\n");
    return 0;
  }
  std::string lines;
  for (const auto& [key, value] : out.items()) {
    lines += key + ": " + (value.is_string() ? value.get<std::string>() : json_text(value)) + "\n";
  }
  write_stdout(lines);
  return 0;
}

}  // namespace attn
