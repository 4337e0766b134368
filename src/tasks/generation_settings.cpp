#include "src/tasks/generation_settings.h"

#include <spdlog/spdlog.h>

#include <random>

namespace attn {

std::string sampling_options_given(const GenerationFlagsGiven& given, float temperature) {
  std::string names;
  const auto add = [&](bool was_given, const char* name) {
    if (was_given) names += (names.empty() ? "" : ", ") + std::string(name);
  };
  add(given.temperature && temperature > 0, "--temp");
  add(given.top_k, "--top-k");
  add(given.top_p, "--top-p");
  add(given.min_p, "--min-p");
  add(given.typical_p, "--typical-p");
  add(given.seed, "--seed");
  return names;
}

// The command line's settings, with those it did not give taken from the model's
// generation_config.json as Hugging Face reads it: do_sample false means greedy; do_sample true
// samples with its temperature, top_k, top_p, min_p and typical_p (Hugging Face's defaults 1, 50,
// 1, off and 1 where it names none). A folder that says nothing keeps attn's defaults. A sampling
// option on the command line turns sampling on over do_sample false, as llama.cpp's flags do.
GenerateOptions with_generation_config(const GenerationSettings& command,
                                       const GenerationConfig& config) {
  GenerateOptions options = command.options;
  const GenerationFlagsGiven& given = command.given;
  SamplingOptions& sampling = options.sampling;
  // Without --seed (or with -1), a fresh one each run, reported so that the run can be repeated:
  // below 2^53, so that JSON tools that read numbers as doubles keep it exact.
  if (command.seed < 0) {
    sampling.seed = (uint64_t(std::random_device{}()) << 32 | std::random_device{}()) & kMaxSeed;
  } else {
    sampling.seed = uint64_t(command.seed);
  }
  spdlog::debug("seed {}", sampling.seed);
  if (!given.max_new_tokens && config.max_new_tokens)
    options.max_new_tokens = *config.max_new_tokens;
  bool do_sample = config.do_sample.value_or(false);
  if (config.do_sample == false && !given.temperature) {
    const std::string asked = sampling_options_given(given, sampling.temperature);
    if (asked.empty()) {
      sampling.temperature = 0;
    } else {
      spdlog::debug("{}: sampling, over generation_config.json's do_sample false", asked);
      do_sample = true;
    }
  }
  if (do_sample) {
    if (!given.temperature) sampling.temperature = config.temperature.value_or(1.0f);
    if (!given.top_k) sampling.top_k = config.top_k.value_or(50);
    if (!given.top_p) sampling.top_p = config.top_p.value_or(1.0f);
    if (!given.min_p) sampling.min_p = config.min_p.value_or(0.0f);
    if (!given.typical_p) sampling.typical_p = config.typical_p.value_or(1.0f);
  }
  if (!given.repetition_penalty && config.repetition_penalty) {
    sampling.repetition_penalty = *config.repetition_penalty;
  }
  if (given.repeat_last_n && sampling.repetition_penalty == 1.0f) {
    spdlog::warn("--repeat-last-n: does nothing without a repetition penalty (--repeat-penalty)");
  }
  if (command.context_size) options.max_context = *command.context_size;
  return options;
}

}  // namespace attn
