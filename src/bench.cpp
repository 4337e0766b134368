#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "src/commands.h"
#include "src/error.h"

namespace attn {
namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace

int run_bench(const BenchCommand& command) {
  auto model = load_model(command.common.model_dir);
  const ArchSpec& spec = model->spec();
  if (!spec.causal) throw UsageError("bench: encoder models are not supported yet");
  if (command.prompt_tokens + command.new_tokens > spec.max_positions) {
    throw UsageError(
        "bench: -p + -n is " + std::to_string(command.prompt_tokens + command.new_tokens) +
        " tokens, more than the model's context of " + std::to_string(spec.max_positions));
  }
  // A fixed, varied prompt of ids spread over the vocabulary: speed does not depend on the ids.
  std::vector<int> prompt(command.prompt_tokens);
  for (int i = 0; i < command.prompt_tokens; ++i)
    prompt[i] = int((i * 7919L + 13) % spec.vocab_size);

  GenerateOptions options;
  options.max_new_tokens =
      command.new_tokens + 1;  // the first new token comes from the prompt pass
  options.sampling.temperature = 0;
  options.ignore_eos = true;

  std::vector<double> prompt_rates, decode_rates;
  for (int r = 0; r < command.repetitions; ++r) {
    const GenerateResult result = generate(*model, prompt, options);
    prompt_rates.push_back(result.prompt_tokens / (result.prompt_ms / 1000));
    if (result.decode_steps > 0)
      decode_rates.push_back(result.decode_steps / (result.decode_ms / 1000));
    spdlog::debug("repetition {}: prompt {:.1f} tokens/s, decode {:.1f} tokens/s", r,
                  prompt_rates.back(), decode_rates.empty() ? 0.0 : decode_rates.back());
  }
  nlohmann::json out = {{"model", model->name()},
                        {"prompt_tokens", command.prompt_tokens},
                        {"new_tokens", command.new_tokens},
                        {"repetitions", command.repetitions},
                        {"prompt_tokens_per_s", median(prompt_rates)},
                        {"decode_tokens_per_s", decode_rates.empty() ? 0.0 : median(decode_rates)},
                        {"load_ms", model->load_ms},
                        {"peak_rss_mb", peak_rss_mb()}};
  if (command.json) {
    std::cout << out.dump() << "\n";
  } else {
    std::cout << "model " << model->name() << ": prompt " << command.prompt_tokens << " tokens "
              << out["prompt_tokens_per_s"].get<double>() << " tokens/s | decode "
              << command.new_tokens << " tokens " << out["decode_tokens_per_s"].get<double>()
              << " tokens/s | load " << model->load_ms << " ms | peak RSS " << peak_rss_mb()
              << " MB\n";
  }
  return 0;
}

}  // namespace attn
