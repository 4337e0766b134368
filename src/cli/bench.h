#pragma once

#include <optional>
#include <vector>

#include "src/cli/commands.h"

// attn bench (bench.cpp), and attn bench --kernels (bench_kernels.cpp).
namespace attn {

// attn bench runs every combination of its lists, as llama-bench does: decoders -p x -n x -t,
// encoders -p x --batch x -t, each for every --dtype (the model is loaded once per dtype).
struct BenchCommand final : Command {
  BenchCommand()
      : Command("bench",
                "measure prompt and decode speed (encoders: ms per sequence), like llama-bench") {}
  void add_options(CLI::App& app) override;
  int run(const CLI::App& app) override;

  // What standard output gets: a markdown table, a row per measurement (a decoder's prompt and
  // decode rates are two); or a line per combination, CSV or a JSON object. json and jsonl are
  // both kJsonLines: a single combination is then one JSON object, as --json always printed.
  enum class Format { kMarkdown, kCsv, kJsonLines };
  // More combinations than this are a slip (a list pasted twice), not a benchmark: refused
  // before anything runs.
  static constexpr int kMaxCombinations = 1000;

  // common.threads and common.dtype stay unset: bench has lists of its own.
  std::vector<int> prompt_tokens = {128};  // encoders: tokens per sequence
  std::vector<int> new_tokens = {128};     // decoders only
  std::vector<int> batch = {1};            // encoders only: sequences per packed batch
  std::vector<int> threads = {0};          // 0 = the cores attn may use
  std::vector<std::optional<WeightType>> dtypes = {std::nullopt};  // nullopt: as stored
  int repetitions = 5;
  Format format = Format::kMarkdown;
  // --kernels: no model; each instruction set's multiply-add peak and GEMM rate on one thread.
  bool kernels = false;
};

// attn bench --kernels: no model; each instruction set's peaks and GEMM rates.
int run_kernel_bench(const BenchCommand& command);

}  // namespace attn
