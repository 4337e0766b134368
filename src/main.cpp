// attn: the command line. Parses options with CLI11, sets up logging and threads, and runs one
// subcommand. Every error is an exception, caught here once and printed as one line.
#include <cblas.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <thread>

#include "src/commands.h"
#include "src/error.h"
#include "src/thread_pool.h"

namespace {

using namespace attn;

// -m, -t, -v, -q: on every subcommand.
void add_common_options(CLI::App& command, CommonOptions& common, const char* default_model) {
  common.model_dir = std::filesystem::path(ATTN_MODELS_DIR) / default_model;
  command.add_option("-m,--model", common.model_dir, "Hugging Face model folder")
      ->capture_default_str();
  command.add_option("-t,--threads", common.threads, "threads (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  command.add_flag("-v,--verbose", common.verbose, "debug logging on stderr");
  command.add_flag("-q,--quiet", common.quiet, "only errors on stderr");
}

void configure(const CommonOptions& common) {
  auto logger = spdlog::stderr_color_mt("attn");
  logger->set_pattern("%^%v%$");
  logger->set_level(common.quiet     ? spdlog::level::err
                    : common.verbose ? spdlog::level::debug
                                     : spdlog::level::info);
  spdlog::set_default_logger(logger);
  // attn's own pool is the only set of worker threads: OpenBLAS runs single-threaded inside
  // its tasks, since two pools competing for the same cores would slow both.
  openblas_set_num_threads(1);
  if (common.threads > 0) set_thread_count(common.threads);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"attn: run Hugging Face GPT-2 and BERT checkpoints on the CPU"};
  app.require_subcommand(1);

  GenerateCommand generate;
  CLI::App* generate_app = app.add_subcommand("generate", "generate text with a decoder (GPT-2)");
  add_common_options(*generate_app, generate.common, "tiny-gpt2-brown");
  generate_app->add_option("-p,--prompt", generate.prompt, "prompt text (default: standard input)");
  generate_app->add_option("--file", generate.prompt_file,
                           "read the prompt from a file ('-': stdin)");
  generate_app
      ->add_option("-n,--max-new-tokens", generate.options.max_new_tokens, "tokens to generate")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  generate_app
      ->add_option("--temp", generate.options.sampling.temperature,
                   "sampling temperature; 0 = greedy")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  generate_app
      ->add_option("--top-k", generate.options.sampling.top_k, "keep the k most likely; 0 = off")
      ->check(CLI::NonNegativeNumber);
  generate_app->add_option("--top-p", generate.options.sampling.top_p, "nucleus sampling; 1 = off")
      ->check(CLI::Range(0.0, 1.0).description("in (0, 1]"))
      ->check(CLI::Validator(
          [](std::string& value) { return std::stod(value) > 0 ? "" : "must be greater than 0"; },
          "", "positive"));
  generate_app
      ->add_option("--repeat-penalty", generate.options.sampling.repetition_penalty,
                   "repetition penalty; 1 = off")
      ->check(CLI::PositiveNumber);
  generate_app->add_option("--seed", generate.options.sampling.seed, "random seed")
      ->capture_default_str();
  generate_app->add_flag("--ignore-eos", generate.options.ignore_eos, "do not stop at end-of-text");
  generate_app->add_option("--stop", generate.options.stop, "stop at this string (repeatable)");
  generate_app->add_flag("--truncate", generate.truncate,
                         "keep the end of a prompt longer than the context instead of failing");
  generate_app->add_flag("!--no-cache", generate.options.use_cache,
                         "recompute every position at every step (slow; for checking)");
  generate_app->add_flag("--json", generate.json, "print one JSON object instead of streaming");

  TokenizeCommand tokenize;
  CLI::App* tokenize_app = app.add_subcommand("tokenize", "print token ids and pieces");
  add_common_options(*tokenize_app, tokenize.common, "tiny-gpt2-brown");
  tokenize_app->add_option("text", tokenize.text, "text to tokenize")->required();
  tokenize_app->add_option("--pair", tokenize.pair, "second sentence (encoders)");
  tokenize_app->add_flag("--json", tokenize.json, "print {\"ids\": [...], \"tokens\": [...]}");

  CommonOptions info;
  bool info_json = false;
  CLI::App* info_app = app.add_subcommand("info", "describe a model folder");
  add_common_options(*info_app, info, "tiny-gpt2-brown");
  info_app->add_flag("--json", info_json, "print JSON");

  BenchCommand bench;
  CLI::App* bench_app = app.add_subcommand("bench", "measure prompt and decode speed");
  add_common_options(*bench_app, bench.common, "tiny-gpt2-brown");
  bench_app->add_option("-p,--prompt-tokens", bench.prompt_tokens, "prompt length")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bench_app->add_option("-n,--new-tokens", bench.new_tokens, "tokens to decode")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  bench_app->add_option("-r,--repetitions", bench.repetitions, "repetitions (median reported)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bench_app->add_flag("--json", bench.json, "print JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "attn: error: " << e.what() << " (see attn --help)\n";
    return 2;
  }

  try {
    if (generate_app->parsed()) {
      configure(generate.common);
      return run_generate(generate);
    }
    if (tokenize_app->parsed()) {
      configure(tokenize.common);
      return run_tokenize(tokenize);
    }
    if (info_app->parsed()) {
      configure(info);
      return run_info(info, info_json);
    }
    configure(bench.common);
    return run_bench(bench);
  } catch (const UsageError& e) {
    std::cerr << "attn: error: " << e.what() << "\n";
    return 2;
  } catch (const Error& e) {
    std::cerr << "attn: error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "attn: error: out of memory\n";
    return 1;
  }
}
