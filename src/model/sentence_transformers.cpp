#include "src/model/sentence_transformers.h"

#include <array>
#include <nlohmann/json.hpp>
#include <system_error>
#include <utility>
#include <vector>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/io/json_util.h"

namespace attn {
namespace {

constexpr std::string_view kTransformer = "sentence_transformers.models.Transformer";
constexpr std::string_view kPooling = "sentence_transformers.models.Pooling";
constexpr std::string_view kNormalize = "sentence_transformers.models.Normalize";

// One entry of modules.json: {"idx": 0, "name": "0", "path": "", "type": "..."}.
struct Module {
  std::string type;
  std::filesystem::path dir;
};

std::string short_type(std::string_view type) {
  return std::string(type.substr(type.rfind('.') + 1));
}

std::vector<Module> read_modules(const std::filesystem::path& dir,
                                 const std::filesystem::path& file) {
  const nlohmann::json json = read_json_file(file);
  const std::string where = file.string() + ": ";
  if (!json.is_array() || json.empty()) {
    throw Error(where + "expected a non-empty JSON array of modules, got " + brief_json(json));
  }
  std::vector<Module> modules;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const nlohmann::json& entry = json[i];
    const std::string module = "module " + std::to_string(i) + " ";
    if (!entry.is_object() || !entry.contains("type") || !entry["type"].is_string() ||
        !entry.contains("path") || !entry["path"].is_string()) {
      throw Error(where + module + "must be an object with string fields 'type' and 'path', got " +
                  brief_json(entry));
    }
    const std::string type = entry["type"].get<std::string>();
    if (type != kTransformer && type != kPooling && type != kNormalize) {
      throw Error(where + module + "has type '" + brief_text(type) +
                  "', which attn does not run (it runs " + std::string(kTransformer) +
                  ", Pooling and Normalize)");
    }
    // The module's folder must lie inside the model folder: no absolute path, no "..".
    const std::filesystem::path path = entry["path"].get<std::string>();
    bool inside = path.is_relative();
    for (const auto& part : path) inside = inside && part != "..";
    if (!inside) {
      throw Error(where + module + "path '" + brief_text(path.string()) +
                  "' must be a folder inside the model folder");
    }
    // An empty path is the folder itself (dir / "" would add a trailing slash).
    modules.push_back({.type = type, .dir = path.empty() ? dir : dir / path});
  }

  // The one pipeline attn implements: Transformer, Pooling, and optionally Normalize.
  std::string order;
  for (const Module& module : modules)
    order += (order.empty() ? "" : ", ") + short_type(module.type);
  const bool expected_order =
      (order == "Transformer, Pooling" || order == "Transformer, Pooling, Normalize");
  if (!expected_order) {
    throw Error(where + "modules are " + order +
                "; attn runs Transformer, Pooling and an optional Normalize, in this order");
  }
  return modules;
}

// The Transformer module's settings file: sentence_bert_config.json, or the name older
// sentence-transformers versions gave it for other families.
std::optional<std::filesystem::path> find_transformer_config(const std::filesystem::path& dir) {
  constexpr std::array<const char*, 7> kNames = {
      "sentence_bert_config.json",       "sentence_roberta_config.json",
      "sentence_distilbert_config.json", "sentence_camembert_config.json",
      "sentence_albert_config.json",     "sentence_xlm-roberta_config.json",
      "sentence_xlnet_config.json"};
  for (const char* name : kNames) {
    if (entry_exists(dir / name)) return dir / name;
  }
  return std::nullopt;
}

// The pooling modes of 1_Pooling/config.json. sentence-transformers concatenates the vectors of
// several true modes; attn takes exactly one.
struct PoolingFlag {
  const char* key;
  std::optional<Pooling> pooling;  // absent: a mode attn does not implement
  const char* mode_name;           // the value of the string field "pooling_mode" for it
};
constexpr std::array<PoolingFlag, 6> kPoolingFlags = {{
    {"pooling_mode_mean_tokens", Pooling::kMean, "mean"},
    {"pooling_mode_cls_token", Pooling::kCls, "cls"},
    {"pooling_mode_max_tokens", Pooling::kMax, "max"},
    {"pooling_mode_mean_sqrt_len_tokens", Pooling::kMeanSqrtLen, "mean_sqrt_len_tokens"},
    {"pooling_mode_weightedmean_tokens", std::nullopt, "weightedmean"},
    {"pooling_mode_lasttoken", std::nullopt, "lasttoken"},
}};

Pooling read_pooling_mode(const JsonFile& config) {
  const PoolingFlag* chosen = nullptr;
  if (const std::optional<std::string> mode = config.optional_string("pooling_mode")) {
    // Given as a string, it decides alone (sentence-transformers' Pooling(pooling_mode=...)).
    for (const PoolingFlag& flag : kPoolingFlags) {
      if (*mode == flag.mode_name) chosen = &flag;
    }
    if (!chosen) config.fail("pooling_mode", "is '" + brief_text(*mode) + "', not a pooling mode");
  } else {
    for (const PoolingFlag& flag : kPoolingFlags) {
      if (!config.optional_bool(flag.key).value_or(false)) continue;
      if (chosen) {
        throw Error(config.path().string() + ": both " + chosen->key + " and " + flag.key +
                    " are true; attn needs exactly one pooling mode");
      }
      chosen = &flag;
    }
    if (!chosen) {
      throw Error(config.path().string() +
                  ": no pooling mode is true (one of pooling_mode_mean_tokens, "
                  "pooling_mode_cls_token, pooling_mode_max_tokens, "
                  "pooling_mode_mean_sqrt_len_tokens must be)");
    }
  }
  if (!chosen->pooling) {
    throw Error(config.path().string() + ": pooling mode '" + chosen->mode_name +
                "' is not implemented in attn (it implements mean, cls, max, mean_sqrt_len)");
  }
  return *chosen->pooling;
}

}  // namespace

std::string pooling_name(Pooling pooling) {
  switch (pooling) {
    case Pooling::kMean:
      return "mean";
    case Pooling::kCls:
      return "cls";
    case Pooling::kMax:
      return "max";
    case Pooling::kMeanSqrtLen:
      return "mean_sqrt_len";
  }
  return "unknown";
}

std::optional<Pooling> parse_pooling(std::string_view name) {
  for (Pooling pooling : {Pooling::kMean, Pooling::kCls, Pooling::kMax, Pooling::kMeanSqrtLen}) {
    if (name == pooling_name(pooling)) return pooling;
  }
  return std::nullopt;
}

std::optional<SentenceTransformersConfig> read_sentence_transformers_config(
    const std::filesystem::path& dir) {
  // Anything named modules.json makes this a sentence-transformers folder, for read_json_file
  // to refuse if it is not a readable file. When the folder itself cannot be searched (or is no
  // folder, or its path is too long), load_model reports that, naming the folder.
  const std::filesystem::path modules_file = dir / "modules.json";
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::symlink_status(modules_file, error);
  if (error || !std::filesystem::exists(status)) return std::nullopt;
  const std::vector<Module> modules = read_modules(dir, modules_file);

  SentenceTransformersConfig config;
  config.transformer_dir = modules[0].dir;
  config.transformer_config_file = find_transformer_config(config.transformer_dir);
  if (config.transformer_config_file) {
    const JsonFile settings(*config.transformer_config_file);
    config.max_seq_length = settings.optional_positive_int("max_seq_length");
    config.do_lower_case = settings.optional_bool("do_lower_case").value_or(false);
  }

  config.pooling_config_file = modules[1].dir / "config.json";
  const JsonFile pooling(config.pooling_config_file);
  config.pooling = read_pooling_mode(pooling);
  config.word_embedding_dimension = pooling.positive_int("word_embedding_dimension");
  config.normalize = modules.size() == 3;

  // sentence-transformers prepends the default prompt to every text it encodes.
  const std::filesystem::path model_config_file = dir / "config_sentence_transformers.json";
  if (entry_exists(model_config_file)) {
    const JsonFile model_config(model_config_file);
    if (const auto prompt = model_config.optional_string("default_prompt_name")) {
      model_config.fail("default_prompt_name",
                        "is '" + brief_text(*prompt) +
                            "'; attn adds no prompts (write the prompt at the start of each text)");
    }
  }
  return config;
}

}  // namespace attn
