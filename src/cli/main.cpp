// attn: the command line. Lists the commands (each registers its own options and runs itself,
// src/cli/X_command.cpp), parses the arguments with CLI11, sets up logging, threads and -o, and
// runs the one command given. Every error is an exception, caught here once and printed as one
// line; the exit statuses are listed in commands.h.
#include <malloc.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/error.h"
#include "src/cli/cli_help.h"
#include "src/cli/commands.h"
#include "src/cli/text_input.h"
#include "src/io/hub_cache.h"
#include "src/io/output_file.h"
#include "src/kernels/thread_pool.h"

namespace {

using namespace attn;

// Every command, in the order attn --help lists them.
std::vector<std::unique_ptr<Command>> all_commands() {
  std::vector<std::unique_ptr<Command>> commands;
  for (auto make :
       {make_generate_command, make_chat_command, make_translate_command, make_classify_command,
        make_rerank_command, make_ner_command, make_fill_mask_command, make_embed_command,
        make_similarity_command, make_attention_command, make_heads_command, make_lens_command,
        make_ablate_command, make_tokenize_command, make_info_command, make_perplexity_command,
        make_bench_command, make_serve_command}) {
    commands.push_back(make());
  }
  return commands;
}

// "attn foo" and a bare "attn" get a plain answer, with the list of commands, instead of
// CLI11's "The following argument was not expected". Top-level options all start with '-', so
// the first other argument must be a command.
void check_command_name(const std::vector<std::unique_ptr<Command>>& commands,
                        const std::vector<std::string>& arguments) {
  std::vector<std::string> names;
  for (const auto& command : commands) names.push_back(command->name());
  std::string list;
  for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
  list = "(commands: " + list + ")";
  if (arguments.empty()) throw UsageError("no command given " + list);
  const std::string& name = arguments.front();
  const auto known = [&](const std::string& argument) {
    return std::find(names.begin(), names.end(), argument) != names.end();
  };
  if (known(name) || name == "-h" || name == "--help" || name == "--version") return;
  if (name.starts_with('-')) {
    // Options before the command (attn -m DIR fill-mask ...): say where they go.
    for (const std::string& argument : arguments) {
      if (!known(argument)) continue;
      throw UsageError("'" + name + "' comes before the command; options go after it: attn " +
                       argument + " " + name + " ...");
    }
    return;
  }
  const std::string shown = name.size() > 40 ? name.substr(0, 40) + "..." : name;
  const std::string suggestion = closest_name(name, names);
  throw UsageError("unknown command '" + shown + "'" +
                   (suggestion.empty() ? " " : " (did you mean " + suggestion + "?) ") + list);
}

// Logging at the level -v / -q ask for, the thread pool, and the model folder (a model id
// becomes its folder in the Hugging Face cache).
void configure(CommonOptions& common, const std::vector<std::string>& gpu_options) {
  auto logger = spdlog::stderr_color_mt("attn");
  logger->set_pattern("%^%v%$");
  logger->set_level(common.quiet     ? spdlog::level::err
                    : common.verbose ? spdlog::level::debug
                                     : spdlog::level::info);
  spdlog::set_default_logger(logger);
  if (!gpu_options.empty()) {
    spdlog::info("{}: attn runs on the CPU, with nothing to offload; ignored", gpu_options.front());
  }
  if (common.threads > 0) set_thread_count(common.threads);
  const std::filesystem::path given = common.model_dir;
  common.model_dir = resolve_model_folder(given, common.revision);
  if (common.model_dir != given) {
    spdlog::debug("{}: from the Hugging Face cache, {}", given.string(), common.model_dir.string());
  }
}

// Runs `command`, its options parsed, with its results on standard output or in the -o file:
// written whole or not at all (a run that ends with exit status 1, a text having failed, leaves
// no file either).
int run_with_output(Command& command, const CLI::App& app) {
  // Opened before the work, so that a bad path fails at once.
  std::optional<OutputFile> results;
  // Standard output again when the run ends, however it ends, before `results` is gone.
  const struct Restore {
    ~Restore() { send_results_to(nullptr); }
  } restore;
  if (command.common.output && *command.common.output != "-") {
    results.emplace(command.common.output, "-o");
    send_results_to(&*results);
  }
  const int status = command.run(app);
  if (results && status == 0) results->commit();
  flush_stdout();  // whatever is still buffered: a full disk shows up here at the latest
  return status;
}

// Parses the command line and runs the command; returns the exit status. Errors are thrown.
int run_command_line(int argc, char** argv) {
  CLI::App app{"attn: run Hugging Face transformer checkpoints on the CPU"};
  app.require_subcommand(1);
  app.formatter(help_formatter());
  app.set_version_flag("--version", "attn " ATTN_VERSION);
  const std::vector<std::unique_ptr<Command>> commands = all_commands();
  for (const auto& command : commands) {
    CLI::App& command_app = *app.add_subcommand(command->name(), command->summary());
    command->add_options(command_app);
    // An option given twice that takes one value keeps the last, as llama.cpp's do (a script's
    // default followed by the user's own), where CLI11 would refuse it.
    for (CLI::Option* option : command_app.get_options()) {
      if (option->get_items_expected_max() <= 1 &&
          option->get_multi_option_policy() == CLI::MultiOptionPolicy::Throw) {
        option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
      }
    }
  }

  std::vector<std::string> arguments(argv + 1, argv + argc);
  // `attn help [COMMAND]` is `attn [COMMAND] --help` (anything after the command is ignored).
  if (!arguments.empty() && arguments.front() == "help") {
    arguments = {arguments.begin() + 1,
                 arguments.begin() + std::min<std::size_t>(arguments.size(), 2)};
    arguments.push_back("--help");
  }
  check_command_name(commands, arguments);
  // The texts are taken out first, as typed, and llama.cpp's GPU options, which attn has no use
  // for; CLI11 parses the rest.
  std::vector<std::string> texts;
  std::vector<std::string> gpu_options;
  for (const auto& command : commands) {
    if (command->name() != arguments.front()) continue;
    std::vector<std::string> options(arguments.begin() + 1, arguments.end());
    gpu_options = take_gpu_options(options);
    texts = take_text_arguments(*app.get_subcommand(command->name()), options);
    options.insert(options.begin(), command->name());
    arguments = std::move(options);
  }
  std::vector<char*> rest = {argv[0]};
  for (std::string& argument : arguments) rest.push_back(argument.data());
  try {
    app.parse(static_cast<int>(rest.size()), rest.data());
  } catch (const CLI::Success& e) {  // --help, --version
    app.exit(e);
    flush_stdout();
    return 0;
  } catch (const CLI::ParseError& e) {
    const std::vector<CLI::App*> parsed =
        app.get_subcommands([](CLI::App* command) { return command->parsed(); });
    throw UsageError(describe_parse_error(e, parsed.empty() ? app : *parsed.front()));
  }

  // Exactly one command was parsed (require_subcommand(1)).
  for (const auto& command : commands) {
    const CLI::App& command_app = *app.get_subcommand(command->name());
    if (!command_app.parsed()) continue;
    command->input.arguments = texts;
    try {
      configure(command->common, gpu_options);
      return run_with_output(*command, command_app);
    } catch (const UsageError& e) {
      // Every usage error points to the help that explains the options.
      const std::string hint = help_hint(command_app);
      if (std::string_view(e.what()).find(hint) != std::string_view::npos) throw;
      throw UsageError(std::string(e.what()) + "; " + hint);
    }
  }
  throw std::logic_error("no command was run");
}

}  // namespace

int main(int argc, char** argv) {
  // A reader that closes the pipe early (`attn ... | head -c 50`) then shows up as EPIPE in the
  // checked writes to stdout, which end attn quietly, instead of SIGPIPE killing it mid-line.
  std::signal(SIGPIPE, SIG_IGN);
  // Every pass allocates its activations and KV cache (megabytes) and frees them at its end.
  // glibc gives blocks that large their own mapping and returns it to the system when freed, so
  // the next pass faults in and zeroes fresh pages: 14% of a 128-token BERT-base pass, repeated
  // (perf: page faults and memset under run_encoder_batches). Kept in the heap up to glibc's
  // largest threshold (32 MiB), and the heap's top not trimmed below 256 MiB, they are reused.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  try {
    return run_command_line(argc, argv);
  } catch (const StdoutClosed&) {
    return 128 + SIGPIPE;
  } catch (const UsageError& e) {
    print_error(e.what());
    return 2;
  } catch (const Error& e) {
    print_error(e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    print_error("out of memory");
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    print_error(e.path1().empty() ? e.what() : e.path1().string() + ": " + e.code().message());
    return 1;
  } catch (const std::exception& e) {
    // A last resort: every expected failure is an attn::Error with a precise message.
    print_error(e.what());
    return 1;
  }
}
