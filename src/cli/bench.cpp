#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>

#include "src/base/error.h"
#include "src/cli/commands.h"
#include "src/io/output_file.h"
#include "src/tasks/fill_mask.h"

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

// A fixed, varied input of n ids spread over the vocabulary: speed does not depend on the ids.
std::vector<int> benchmark_ids(int n, int vocab_size) {
  std::vector<int> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = int((i * 7919L + 13) % vocab_size);
  return ids;
}

// Encoders: the full fill-mask path (forward pass, head at one mask per sequence, softmax, top 5
// and their decoded sequences) over `batch` sequences of -p tokens packed into one batch.
int run_encoder_bench(const BenchCommand& command, const Model& model) {
  check_fill_mask_model(model);
  const ArchSpec& spec = model.spec();
  if (command.prompt_tokens > spec.max_positions) {
    throw UsageError("bench: -p is " + std::to_string(command.prompt_tokens) +
                     " tokens, more than the model's max_position_embeddings of " +
                     std::to_string(spec.max_positions));
  }
  // In 64 bits: --batch and -p are each at most 2^31 - 1.
  const std::int64_t batch_tokens = std::int64_t(command.batch) * command.prompt_tokens;
  if (batch_tokens > kMaxBatchTokens) {
    throw UsageError("bench: --batch x -p is " + std::to_string(batch_tokens) +
                     " tokens, more than the limit of " + std::to_string(kMaxBatchTokens) +
                     " tokens per batch");
  }
  // Benchmark ids with a mask in the middle.
  MaskedInput input;
  input.ids = benchmark_ids(command.prompt_tokens, spec.vocab_size);
  input.type_ids.assign(input.ids.size(), 0);
  input.mask_positions = {command.prompt_tokens / 2};
  input.ids[input.mask_positions[0]] = *model.tokenizer->mask_id();
  const std::vector<MaskedInput> inputs(command.batch, input);
  const FillMaskOptions options{.top_k = 5, .max_batch_tokens = int(batch_tokens)};

  std::vector<double> batch_ms;
  for (int r = 0; r < command.repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    fill_mask(model, inputs, options);
    batch_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    spdlog::info("repetition {}/{}: {:.1f} ms per batch of {}", r + 1, command.repetitions,
                 batch_ms.back(), command.batch);
  }
  const double ms_per_sequence = median(batch_ms) / command.batch;
  const nlohmann::json out = {{"model", model.name()},
                              {"dtype", model.compute_dtype()},
                              {"sequence_tokens", command.prompt_tokens},
                              {"batch", command.batch},
                              {"repetitions", command.repetitions},
                              {"ms_per_sequence", ms_per_sequence},
                              {"sequences_per_s", 1000 / ms_per_sequence},
                              {"load_ms", model.load_ms},
                              {"peak_rss_mb", peak_rss_mb()}};
  if (command.json) {
    write_stdout(json_text(out) + "\n");
  } else {
    std::ostringstream line;
    line << "model " << model.name() << " (" << out["dtype"].get<std::string>() << "): fill-mask, "
         << command.batch << " x " << command.prompt_tokens
         << " tokens per batch: " << ms_per_sequence << " ms per sequence, "
         << out["sequences_per_s"].get<double>() << " sequences/s | load " << model.load_ms
         << " ms | peak RSS " << peak_rss_mb() << " MB\n";
    write_stdout(line.str());
  }
  return 0;
}

}  // namespace

int run_bench(const BenchCommand& command) {
  auto model = load_model(command.common.model_dir, command.common.dtype);
  model->require_single_stack("bench");
  const ArchSpec& spec = model->spec();
  if (!spec.causal) return run_encoder_bench(command, *model);
  // In 64 bits: -p and -n are each at most 2^31 - 1.
  const std::int64_t total_tokens = std::int64_t(command.prompt_tokens) + command.new_tokens;
  if (total_tokens > spec.max_positions) {
    throw UsageError("bench: -p + -n is " + std::to_string(total_tokens) +
                     " tokens, more than the model's context of " +
                     std::to_string(spec.max_positions));
  }
  const std::vector<int> prompt = benchmark_ids(command.prompt_tokens, spec.vocab_size);

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
    spdlog::info("repetition {}/{}: prompt {:.1f} tokens/s | decode {:.1f} tokens/s", r + 1,
                 command.repetitions, prompt_rates.back(),
                 decode_rates.empty() ? 0.0 : decode_rates.back());
  }
  // Decode reads every weight matrix once per token (the embeddings only one row): that many
  // bytes times tokens/s is the memory bandwidth decode achieves.
  int64_t bytes_per_token = 0;
  for (int64_t bytes : model->transformer->matrix_bytes_per_token()) bytes_per_token += bytes;
  const double decode_rate = decode_rates.empty() ? 0.0 : median(decode_rates);
  nlohmann::json out = {{"model", model->name()},
                        {"dtype", model->compute_dtype()},
                        {"prompt_tokens", command.prompt_tokens},
                        {"new_tokens", command.new_tokens},
                        {"repetitions", command.repetitions},
                        {"prompt_tokens_per_s", median(prompt_rates)},
                        {"decode_tokens_per_s", decode_rate},
                        {"weight_bytes_per_token", bytes_per_token},
                        {"decode_gb_per_s", decode_rate * double(bytes_per_token) / 1e9},
                        {"load_ms", model->load_ms},
                        {"peak_rss_mb", peak_rss_mb()}};
  if (command.json) {
    write_stdout(json_text(out) + "\n");
  } else {
    std::ostringstream line;
    line << "model " << model->name() << " (" << out["dtype"].get<std::string>() << "): prompt "
         << command.prompt_tokens << " tokens " << out["prompt_tokens_per_s"].get<double>()
         << " tokens/s | decode " << command.new_tokens << " tokens " << decode_rate
         << " tokens/s, " << out["decode_gb_per_s"].get<double>() << " GB/s of weights | load "
         << model->load_ms << " ms | peak RSS " << peak_rss_mb() << " MB\n";
    write_stdout(line.str());
  }
  return 0;
}

}  // namespace attn
