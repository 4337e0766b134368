#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "src/model/generation_config.h"
#include "src/tasks/generate.h"

// A generation's settings as a caller gave them (attn generate's and chat's options, a server
// request's fields), and the rest from the model's generation_config.json.
namespace attn {

// Which generation settings the caller gave: the others come from the model folder's
// generation_config.json when it has them.
struct GenerationFlagsGiven {
  bool max_new_tokens = false;
  bool temperature = false;
  bool top_k = false;
  bool top_p = false;
  bool min_p = false;
  bool typical_p = false;
  bool repetition_penalty = false;
  bool seed = false;
  bool num_return = false;
  bool length_penalty = false;
  bool early_stopping = false;
  bool repeat_last_n = false;
};

// Seeds stay below 2^53, so that a seed printed in JSON survives tools that read numbers as
// doubles (jq) and can be given back to repeat a run.
constexpr std::uint64_t kMaxSeed = (std::uint64_t(1) << 53) - 1;

// What a caller sets: attn generate and chat (their options), attn serve (a request's fields).
struct GenerationSettings {
  GenerateOptions options;
  std::optional<int> context_size;  // -c: generation stops when the sequence reaches this
  std::int64_t seed = -1;           // --seed; -1: a random one
  GenerationFlagsGiven given;       // which of them the command line gave
};

// The sampling options given, by their command-line names ("--temp, --top-k"), for the messages
// that say why sampling is on or why an option is refused; empty when none was given.
std::string sampling_options_given(const GenerationFlagsGiven& given, float temperature);

// The settings, with those not given taken from the model's generation_config.json as Hugging
// Face reads it (below).
GenerateOptions with_generation_config(const GenerationSettings& settings,
                                       const GenerationConfig& config);

}  // namespace attn
