// attn: the command line. Parses options with CLI11, sets up logging and threads, and runs one
// subcommand. Every error is an exception, caught here once and printed as one line; the exit
// statuses are listed in commands.h.
#include <malloc.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "src/base/error.h"
#include "src/cli/cli_help.h"
#include "src/cli/commands.h"
#include "src/io/hub_cache.h"
#include "src/io/output_file.h"
#include "src/kernels/thread_pool.h"

namespace {

using namespace attn;

// A check on a numeric option value that states the bound plainly ("--temp: must be >= 0, got
// -1"). CLI11's NonNegativeNumber and PositiveNumber print their range with a 309-digit upper
// bound, and let NaN through, since every comparison with NaN is false.
CLI::Validator number_check(const std::string& requirement, std::function<bool(double)> holds) {
  return CLI::Validator(
      [requirement, holds](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0') return "must be a number, got " + text;
        return holds(value) ? "" : "must be " + requirement + ", got " + text;
      },
      requirement);
}

// --dtype's names for the weight types a model can be converted to at load, in the order help
// and errors list them.
const std::vector<std::pair<std::string, WeightType>>& dtype_names() {
  static const std::vector<std::pair<std::string, WeightType>> names = {{"f32", WeightType::kF32},
                                                                        {"f16", WeightType::kF16},
                                                                        {"bf16", WeightType::kBF16},
                                                                        {"q8", WeightType::kQ8_0},
                                                                        {"q4", WeightType::kQ4_0}};
  return names;
}
// The weight type of a name in dtype_names(), or nullopt.
std::optional<WeightType> dtype_named(const std::string& name) {
  for (const auto& [dtype_name, type] : dtype_names()) {
    if (dtype_name == name) return type;
  }
  return std::nullopt;
}
// dtype_names()' names as a list: "f32, f16, bf16, q8 or q4".
std::string dtype_list() {
  std::string list;
  const auto& names = dtype_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i].first;
  }
  return list;
}
constexpr const char* kDtypeHelp =
    "f32, f16, bf16, q8 (int8 blocks of 32, ggml's q8_0) or q4 (4-bit blocks of 32, ggml's q4_0, "
    "with the output head in q8_0)";

CLI::Validator non_negative() {
  return number_check(">= 0", [](double v) { return v >= 0; });
}
CLI::Validator positive() {
  return number_check("> 0", [](double v) { return v > 0; });
}
CLI::Validator finite() {
  return number_check("finite", [](double v) { return std::isfinite(v); });
}

// A check that an integer option's value is a whole number within range, before CLI11 converts
// it: CLI11's own message for "-n 1e3" or "-n 3000000000" names neither rule.
template <class Integer>
CLI::Validator whole_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::string_view number = text;
        if (number.size() > 1 && number.starts_with('+')) number.remove_prefix(1);
        // from_chars reads no '-' into an unsigned type: read the digits after it, to tell "-1"
        // (out of range) from "-x" (not a number).
        const bool negative_unsigned = std::is_unsigned_v<Integer> && number.starts_with('-');
        if (negative_unsigned) number.remove_prefix(1);
        Integer value = 0;
        const auto [end, error] =
            std::from_chars(number.data(), number.data() + number.size(), value);
        if (number.empty() || error == std::errc::invalid_argument ||
            end != number.data() + number.size()) {
          return "must be a whole number, got " + text;
        }
        if (error == std::errc::result_out_of_range || (negative_unsigned && value != 0)) {
          return "must be a whole number from " +
                 std::to_string(std::numeric_limits<Integer>::min()) + " to " +
                 std::to_string(std::numeric_limits<Integer>::max()) + ", got " + text;
        }
        return "";
      },
      "INT");
}

// --seed: 0 to 2^53 - 1 (kMaxSeed), or -1 for a random one, as llama.cpp's.
CLI::Validator seed_check() {
  return number_check("-1 (random) or from 0 to " + std::to_string(kMaxSeed),
                      [](double v) { return v >= -1 && v <= double(kMaxSeed); });
}

CLI::Validator at_most(int limit) {
  return number_check("<= " + std::to_string(limit), [limit](double v) { return v <= limit; });
}

// Probe sequences beyond this tell nothing new about a head; the bound keeps a typo from
// running for hours.
constexpr int kMaxProbeSequences = 10000;

// More repetitions of a benchmark tell nothing new; the bound keeps a typo from running for days.
constexpr int kMaxRepetitions = 1000;

// "attn foo" and a bare "attn" get a plain answer, with the list of commands, instead of
// CLI11's "The following argument was not expected". Top-level options all start with '-', so
// the first other argument must be a command.
void check_command_name(const CLI::App& app, int argc, char** argv) {
  std::string commands;
  bool known = false;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    commands += (commands.empty() ? "" : ", ") + command->get_name();
    known = known || (argc >= 2 && command->get_name() == argv[1]);
  }
  commands = "(commands: " + commands + ")";
  if (argc < 2) throw UsageError("no command given " + commands);
  const std::string_view name = argv[1];
  if (known || name == "-h" || name == "--help" || name == "--version") return;
  if (name.starts_with('-')) {
    // Options before the command (attn -m DIR fill-mask ...): say where they go.
    for (int i = 2; i < argc; ++i) {
      for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
        if (command->get_name() != argv[i]) continue;
        throw UsageError("'" + std::string(name) +
                         "' comes before the command; options go after it: attn " +
                         command->get_name() + " " + std::string(name) + " ...");
      }
    }
    return;
  }
  const std::string shown =
      name.size() > 40 ? std::string(name.substr(0, 40)) + "..." : std::string(name);
  std::vector<std::string> names;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(command->get_name());
  }
  const std::string suggestion = closest_name(name, names);
  throw UsageError("unknown command '" + shown + "'" +
                   (suggestion.empty() ? " " : " (did you mean " + suggestion + "?) ") + commands);
}

// More threads than cores only slow attn down (the pool warns); the bound stops a typo from
// asking for more threads than the system will start.
constexpr int kMaxThreads = 1024;

// The options of a decoder's generation that generate and chat share: length, context,
// sampling, seed and stop strings. `length_default`: what -n is without generation_config.json's
// max_new_tokens.
void add_generation_options(CLI::App& command, GenerateCommand& generate,
                            const std::string& length_default) {
  command
      .add_option("-n,--max-new-tokens,--n-predict", generate.options.max_new_tokens,
                  "tokens to generate (default: the model's generation_config.json, else " +
                      length_default + ")")
      ->check(whole_number<int>())
      ->check(non_negative());
  command
      .add_option("-c,--ctx-size", generate.context_size,
                  "at most this many tokens, prompt included (default: the model's context)")
      ->check(whole_number<int>())
      ->check(positive());
  command
      .add_option("--temp", generate.options.sampling.temperature,
                  "sampling temperature; 0 = greedy (default: the model's "
                  "generation_config.json, else 1)")
      ->check(non_negative())
      ->check(finite());
  command.add_option("--top-k", generate.options.sampling.top_k, "keep the k most likely; 0 = off")
      ->check(whole_number<int>())
      ->check(non_negative());
  command.add_option("--top-p", generate.options.sampling.top_p, "nucleus sampling; 1 = off")
      ->check(number_check("in (0, 1]", [](double v) { return v > 0 && v <= 1; }));
  command
      .add_option("--min-p", generate.options.sampling.min_p,
                  "keep tokens at least this fraction as likely as the most likely; 0 = off")
      ->check(number_check("in [0, 1]", [](double v) { return v >= 0 && v <= 1; }));
  command
      .add_option("--typical-p", generate.options.sampling.typical_p,
                  "keep the tokens whose surprise is nearest the entropy, up to this mass; 1 = off")
      ->check(number_check("in (0, 1]", [](double v) { return v > 0 && v <= 1; }));
  command
      .add_option("--repeat-penalty", generate.options.sampling.repetition_penalty,
                  "repetition penalty; 1 = off (default: the model's generation_config.json)")
      ->check(positive())
      ->check(finite());
  command
      .add_option("-s,--seed", generate.seed,
                  "random seed; -1 = a random one, shown with -v and in --json (default: -1)")
      ->check(whole_number<std::int64_t>())
      ->check(seed_check());
  command.add_option("--stop", generate.options.stop, "stop at this string (repeatable)")
      ->allow_extra_args(false)  // one string per --stop, as typed ("[" included)
      ->check(CLI::Validator(
          [](std::string& value) { return value.empty() ? "must not be empty" : ""; }, "",
          "non-empty"));
}

// Which of add_generation_options' settings `command` was given: the others come from the
// model's generation_config.json.
GenerationFlagsGiven generation_flags_given(const CLI::App& command) {
  const auto given = [&](const char* name) {
    return command.get_option_no_throw(name) && command.count(name) > 0;
  };
  return {.max_new_tokens = given("-n"),
          .temperature = given("--temp"),
          .top_k = given("--top-k"),
          .top_p = given("--top-p"),
          .min_p = given("--min-p"),
          .typical_p = given("--typical-p"),
          .repetition_penalty = given("--repeat-penalty"),
          .seed = given("--seed"),
          .num_return = given("--num-return"),
          .length_penalty = given("--length-penalty"),
          .early_stopping = given("--early-stopping")};
}

// The options that turn a conversation into a prompt (attn chat, generate --chat, tokenize
// --chat); returned so that a command can make them depend on its --chat.
std::vector<CLI::Option*> add_chat_format_options(CLI::App& command, ChatFormatOptions& format) {
  return {
      command
          .add_option("--chat-template-file", format.choice.file,
                      "a Jinja2 chat template to use instead of the model folder's")
          ->type_name("PATH"),
      command.add_option("--chat-template-name", format.choice.name,
                         "which of the folder's named chat templates (default: 'default')"),
      command
          .add_option("--chat-var", format.variables,
                      "a variable for the chat template as KEY=JSON (repeatable; e.g. "
                      "enable_thinking=false)")
          ->type_name("VAR"),
      command
          .add_option("--tools", format.tools,
                      "a JSON file: the list of tool schemas the chat template gets")
          ->type_name("FILE.json"),
  };
}

// The models the repository ships: where `cmake --install` put them beside the executable
// (PREFIX/bin/attn, PREFIX/share/attn/models), else in the source tree attn was built from.
// Looked up once, though every subcommand registers its default.
const std::filesystem::path& shipped_models_dir() {
  static const std::filesystem::path dir = [] {
    std::error_code error;
    const auto executable = std::filesystem::read_symlink("/proc/self/exe", error);
    if (!error) {
      const auto installed = executable.parent_path().parent_path() / "share" / "attn" / "models";
      if (std::filesystem::is_directory(installed, error)) return installed;
    }
    return std::filesystem::path(ATTN_MODELS_DIR);
  }();
  return dir;
}

// -m, -t, -v, -q: on every subcommand.
// default_model: a folder of the shipped models/, or nullptr to require -m.
void add_common_options(CLI::App& command, CommonOptions& common, const char* default_model) {
  CLI::Option* model = command.add_option(
      "-m,--model", common.model_dir,
      std::string("Hugging Face model folder, or a model id (ORG/NAME) already in the Hugging Face "
                  "cache") +
          (default_model ? std::string(" (default: the shipped models/") + default_model + ")"
                         : std::string()));
  model->type_name("PATH");
  if (default_model) {
    common.model_dir = shipped_models_dir() / default_model;
  } else {
    model->required();
  }
  command.add_option("--revision", common.revision,
                     "with a model id: the branch, tag or commit in the cache (default: main)");
  command.add_option("-t,--threads", common.threads, "threads (default: the cores attn may use)")
      ->check(whole_number<int>())
      ->check(non_negative())
      ->check(number_check("<= " + std::to_string(kMaxThreads),
                           [](double v) { return v <= kMaxThreads; }));
  command
      .add_option_function<std::string>(
          "--dtype", [&common](const std::string& name) { common.dtype = dtype_named(name); },
          std::string("weight type to compute in: ") + kDtypeHelp +
              "; converted once at load (default: as stored in the weight files)")
      ->check(CLI::IsMember(dtype_names()));
  command.add_flag("-v,--verbose", common.verbose, "debug logging on stderr");
  command.add_flag("-q,--quiet", common.quiet, "only errors on stderr");
}

// -o and --json: on every command that prints results. json_help says what --json prints.
void add_output_options(CLI::App& command, CommonOptions& common, const std::string& json_help) {
  command
      .add_option("-o,--output", common.output,
                  "write the results to this file (whole, or not at all on an error) instead of "
                  "standard output")
      ->type_name("PATH");
  command.add_flag("--json", common.json, json_help);
}

// --layers, --heads, --precision: which attention weights to write, and how precisely.
std::vector<CLI::Option*> add_attention_options(CLI::App& command, AttentionOptions& attention) {
  return {
      command.add_option("--layers", attention.layers,
                         "layers to include, e.g. 0,5-7 (default: all)"),
      command.add_option("--heads", attention.heads, "heads to include, e.g. 0,3 (default: all)"),
      command
          .add_option("--precision", attention.precision,
                      "decimal digits of each weight (default: " +
                          std::to_string(AttentionOptions{}.precision) + ")")
          ->check(whole_number<int>())
          ->check(number_check("from 1 to 9", [](double v) { return v >= 1 && v <= 9; }))};
}

// --beams (described by beams_help), --num-return, --length-penalty, --early-stopping.
void add_beam_options(CLI::App& command, BeamSearchOptions& beam, const char* beams_help) {
  command.add_option("--beams", beam.beams, beams_help)
      ->check(whole_number<int>())
      ->check(positive());
  command
      .add_option("--num-return", beam.num_return,
                  "beam search: how many of the best sequences to print (at most --beams)")
      ->check(whole_number<int>())
      ->check(positive());
  command
      .add_option("--length-penalty", beam.length_penalty,
                  "beam search: a finished sequence scores sum log p / length^this")
      ->check(finite());
  command.add_flag("--early-stopping", beam.early_stopping,
                   "beam search: stop once --beams sequences have finished");
}

// --batch-tokens: how many tokens of several inputs run packed into one forward pass.
void add_batch_tokens_option(CLI::App& command, int& batch_tokens) {
  command
      .add_option("--batch-tokens", batch_tokens,
                  "tokens per packed batch; memory grows with it (default: " +
                      std::to_string(batch_tokens) + ")")
      ->check(whole_number<int>())
      ->check(positive())
      ->check(at_most(kMaxBatchTokens));
}

// --pooling, --batch-tokens: how attn embed and attn similarity run the texts.
void add_embedding_options(CLI::App& command, EmbedCommand& embed) {
  command
      .add_option_function<std::string>(
          "--pooling", [&embed](const std::string& name) { embed.pooling = parse_pooling(name); },
          "how the token states become one vector: mean, cls, max or mean_sqrt_len (default: "
          "the folder's 1_Pooling/config.json, else mean)")
      ->check(CLI::IsMember({"mean", "cls", "max", "mean_sqrt_len"}));
  add_batch_tokens_option(command, embed.batch_tokens);
}

void configure(CommonOptions& common) {
  auto logger = spdlog::stderr_color_mt("attn");
  logger->set_pattern("%^%v%$");
  logger->set_level(common.quiet     ? spdlog::level::err
                    : common.verbose ? spdlog::level::debug
                                     : spdlog::level::info);
  spdlog::set_default_logger(logger);
  if (common.threads > 0) set_thread_count(common.threads);
  const std::filesystem::path given = common.model_dir;
  common.model_dir = resolve_model_folder(given, common.revision);
  if (common.model_dir != given) {
    spdlog::debug("{}: from the Hugging Face cache, {}", given.string(), common.model_dir.string());
  }
}

// Parses the command line and runs the subcommand; returns the exit status. Errors are thrown.
int run_command_line(int argc, char** argv) {
  CLI::App app{"attn: run Hugging Face transformer checkpoints on the CPU"};
  app.require_subcommand(1);
  app.formatter(help_formatter());
  app.set_version_flag("--version", "attn " ATTN_VERSION);

  GenerateCommand generate;
  CLI::App* generate_app = app.add_subcommand(
      "generate", "generate text with a decoder (GPT-2, Llama, Qwen2, GPT-NeoX, Phi, BLOOM, ...)");
  add_common_options(*generate_app, generate.common, "tiny-gpt2-brown");
  add_output_options(*generate_app, generate.common,
                     "one JSON object per prompt (ids, text, seed, stop_reason, timings) instead "
                     "of the text");
  add_text_options(*generate_app, generate.input, "prompts");
  generate_app
      ->add_option("--prompt-file", generate.prompt_file,
                   "one prompt, the whole file ('-': standard input) less one final newline, as "
                   "llama.cpp's -f")
      ->type_name("PATH");
  add_generation_options(*generate_app, generate, "64");
  add_beam_options(*generate_app, generate.beam,
                   "beam search with this many beams (1: off); deterministic, as Hugging Face's");
  generate_app->add_flag("--ignore-eos", generate.options.ignore_eos, "do not stop at end-of-text");
  generate_app->add_flag("--truncate", generate.truncate,
                         "keep the end of a prompt longer than the context instead of failing");
  generate_app->add_flag("!--no-cache", generate.options.use_cache,
                         "recompute every position at every step (slow; for checking)");
  generate_app->add_flag("--stream", generate.stream,
                         "with --json: first a JSON line {token_id, text} per token as it comes "
                         "(text output always streams)");
  generate_app->add_flag("--no-display-prompt", generate.hide_prompt,
                         "print the continuation alone (llama.cpp's --no-display-prompt, Hugging "
                         "Face's return_full_text=False)");
  generate_app->add_flag("--color", generate.color,
                         "show the generated text in colour after the prompt (on a terminal)");
  CLI::Option* generate_chat =
      generate_app->add_flag("--chat", generate.chat,
                             "each prompt is a user message, formatted by the model's chat "
                             "template (after --system), and only the reply is printed");
  generate_app->add_option("--system", generate.system, "with --chat: the system message")
      ->needs(generate_chat);
  for (CLI::Option* option : add_chat_format_options(*generate_app, generate.chat_format)) {
    option->needs(generate_chat);
  }
  CLI::Option* attention_out = generate_app->add_option(
      "--attention-out", generate.attention_out,
      "write the attention row behind each generated token to this file (JSON Lines)");
  for (CLI::Option* option : add_attention_options(*generate_app, generate.attention)) {
    option->needs(attention_out);
  }

  ChatCommand chat;
  CLI::App* chat_app = app.add_subcommand(
      "chat",
      "talk with an instruct model, formatted by its chat template; on a terminal turn by turn "
      "(/help), else the next message of a conversation read as JSON from standard input");
  add_common_options(*chat_app, chat.common, "tiny-gpt2-brown");
  add_output_options(*chat_app, chat.common,
                     "when standard input is a conversation: the next message with its timings, "
                     "as one JSON object");
  add_generation_options(*chat_app, chat.generate, "until the end of the turn or the context");
  add_chat_format_options(*chat_app, chat.chat_format);
  chat_app->add_option("--system", chat.system, "the system message");
  chat_app->add_flag("-i,--interactive", chat.interactive,
                     "turn by turn, one message per line, even when standard input is no "
                     "terminal");
  chat_app->add_flag("--truncate", chat.truncate,
                     "when the conversation outgrows the context, drop its oldest turns (the "
                     "system message stays) instead of refusing the message");
  chat_app->add_flag("!--no-cache-reuse", chat.reuse_cache,
                     "compute each turn's whole prompt instead of continuing the last turn's KV "
                     "cache (for comparison)");

  TranslateCommand translate;
  CLI::App* translate_app =
      app.add_subcommand("translate", "translate with an encoder-decoder (Marian, T5)");
  add_common_options(*translate_app, translate.common, nullptr);
  add_output_options(*translate_app, translate.common,
                     "one JSON object per source (ids, text, stop_reason) instead of the text");
  add_text_options(*translate_app, translate.input, "source texts");
  translate_app
      ->add_option("-n,--max-new-tokens", translate.max_new_tokens,
                   "most tokens to generate (default: the model's generation_config.json, "
                   "else 256)")
      ->check(whole_number<int>())
      ->check(positive());
  add_beam_options(*translate_app, translate.beam,
                   "beam search with this many beams (default: the model's num_beams, else 1: "
                   "greedy)");
  translate_app->add_flag("--truncate", translate.truncate,
                          "keep the first tokens of a source longer than the context instead of "
                          "failing");
  CLI::Option* translate_attention_out = translate_app->add_option(
      "--attention-out", translate.attention_out,
      "write the cross-attention row over the source behind each generated token (JSON Lines)");
  for (CLI::Option* option : add_attention_options(*translate_app, translate.attention)) {
    option->needs(translate_attention_out);
  }

  ClassifyCommand classify;
  CLI::App* classify_app = app.add_subcommand(
      "classify", "labels and scores from a sequence classifier (sentiment, NLI, rerankers)");
  add_common_options(*classify_app, classify.common, nullptr);
  add_output_options(*classify_app, classify.common,
                     "one JSON object per text: {text, text_pair, logits, scores, labels}");
  add_text_options(*classify_app, classify.input, "texts to classify");
  classify_app->add_option("--pair", classify.pair,
                           "the second text of every input (NLI, rerankers)");
  classify_app->add_option("-k,--top-k", classify.top_k, "the best k labels (default: all)")
      ->check(whole_number<int>())
      ->check(non_negative());
  const std::map<std::string, ScoreFunction> score_functions = {
      {"softmax", ScoreFunction::kSoftmax},
      {"sigmoid", ScoreFunction::kSigmoid},
      {"none", ScoreFunction::kNone}};
  classify_app
      ->add_option_function<std::string>(
          "--function",
          [&](const std::string& name) { classify.function = score_functions.at(name); },
          "softmax, sigmoid or none (default: as Hugging Face's pipeline, from the model)")
      ->check(CLI::IsMember({"softmax", "sigmoid", "none"}))
      ->type_name("NAME");
  classify_app->add_flag("--truncate", classify.truncate,
                         "cut an input longer than the model's context (a pair: its longer text)");
  add_batch_tokens_option(*classify_app, classify.batch_tokens);
  classify_app
      ->add_option("--labels", classify.candidate_labels,
                   "zero-shot: candidate labels separated by commas, scored by an NLI model")
      ->type_name("LIST");
  classify_app->add_option("--template", classify.hypothesis_template,
                           "zero-shot: the hypothesis, {} standing for a label "
                           "(default: \"This example is {}.\")");
  classify_app->add_flag("--multi-label", classify.multi_label,
                         "zero-shot: score each label on its own (entailment against "
                         "contradiction) instead of over all labels");

  RerankCommand rerank;
  CLI::App* rerank_app = app.add_subcommand(
      "rerank", "passages sorted by a cross-encoder's relevance score for a query");
  add_common_options(*rerank_app, rerank.common, nullptr);
  add_output_options(*rerank_app, rerank.common,
                     "one JSON object: {query, results: [{corpus_id, score, text}, ...]}");
  add_text_options(*rerank_app, rerank.input, "passages to rank");
  rerank_app->add_option("--query", rerank.query, "the query every passage is scored against")
      ->required();
  rerank_app->add_option("-k,--top-k", rerank.top_k, "the best k passages (default: all)")
      ->check(whole_number<int>())
      ->check(non_negative());
  rerank_app->add_flag("--activation", rerank.activation,
                       "score with the sigmoid of the logit (default: the raw logit)");
  rerank_app->add_flag("--truncate", rerank.truncate,
                       "cut a pair longer than the model's context (its longer text)");
  add_batch_tokens_option(*rerank_app, rerank.batch_tokens);
  NerCommand ner;
  CLI::App* ner_app = app.add_subcommand(
      "ner", "named entities from a token classifier (per-token labels, entity groups)");
  add_common_options(*ner_app, ner.common, nullptr);
  add_output_options(*ner_app, ner.common,
                     "one JSON object per text: {text, entities}, each entity with the "
                     "pipeline's fields");
  add_text_options(*ner_app, ner.input, "texts to find entities in");
  const std::map<std::string, Aggregation> aggregations = {{"none", Aggregation::kNone},
                                                           {"simple", Aggregation::kSimple},
                                                           {"first", Aggregation::kFirst},
                                                           {"average", Aggregation::kAverage},
                                                           {"max", Aggregation::kMax}};
  ner_app
      ->add_option_function<std::string>(
          "--aggregation",
          [&](const std::string& name) { ner.aggregation = aggregations.at(name); },
          "how tokens become entities, as Hugging Face's pipeline: none (every token), simple "
          "(B-/I- runs of tokens), first, average or max (whole words, labelled by their first "
          "token, mean scores or best token) (default: simple)")
      ->check(CLI::IsMember({"none", "simple", "first", "average", "max"}))
      ->type_name("NAME");
  ner_app
      ->add_option("--ignore-labels", ner.ignore_labels,
                   "labels left out, separated by commas (default: O)")
      ->delimiter(',')
      ->type_name("LIST");
  ner_app->add_flag("--truncate", ner.truncate,
                    "keep the first tokens of a text longer than the model's context instead of "
                    "failing");
  add_batch_tokens_option(*ner_app, ner.batch_tokens);

  FillMaskCommand fill_mask;
  CLI::App* fill_mask_app =
      app.add_subcommand("fill-mask",
                         "predict the masked tokens with an encoder (BERT, RoBERTa, "
                         "DistilBERT, ALBERT, XLM-R, ModernBERT)");
  add_common_options(*fill_mask_app, fill_mask.common, "tiny-bert-brown");
  add_output_options(*fill_mask_app, fill_mask.common,
                     "JSON: for one text, its masks; for several, one object a line");
  add_text_options(*fill_mask_app, fill_mask.input,
                   "texts with one or more masks: the model's own mask token (BERT's [MASK], "
                   "RoBERTa's <mask>), or [MASK] for every model");
  fill_mask_app->add_option("--pair", fill_mask.pair,
                            "second sentence of the one text, joined as the model's tokenizer "
                            "joins pairs");
  fill_mask_app->add_option("-k,--top-k", fill_mask.top_k, "candidates per mask (default: 5)")
      ->check(whole_number<int>());
  add_batch_tokens_option(*fill_mask_app, fill_mask.batch_tokens);
  fill_mask_app->add_flag("--truncate", fill_mask.truncate,
                          "keep the first (context - 1) tokens and the final [SEP] (or </s>) "
                          "of a longer input instead of failing");

  EmbedCommand embed;
  CLI::App* embed_app = app.add_subcommand(
      "embed", "sentence embeddings with an encoder, as sentence-transformers computes them");
  add_common_options(*embed_app, embed.common, "tiny-bert-brown");
  add_output_options(*embed_app, embed.common,
                     "one JSON object per text: {\"text\", \"embedding\"} (with --similarity: "
                     "the matrix); -o FILE.npy writes a float32 matrix, one row per text");
  add_text_options(*embed_app, embed.input, "texts to embed");
  add_embedding_options(*embed_app, embed);
  CLI::Option* normalize = embed_app->add_flag_callback(
      "--normalize", [&embed] { embed.normalize = true; },
      "L2-normalize the vectors (default: whether the folder has a Normalize module)");
  embed_app
      ->add_flag_callback(
          "--no-normalize", [&embed] { embed.normalize = false; }, "do not L2-normalize")
      ->excludes(normalize);
  embed_app->add_flag("--similarity", embed.similarity,
                      "print the cosine similarity of every pair of texts (as attn similarity)");

  EmbedCommand similarity;
  similarity.similarity = true;
  CLI::App* similarity_app = app.add_subcommand(
      "similarity", "cosine similarity of every pair of texts' sentence embeddings");
  add_common_options(*similarity_app, similarity.common, "tiny-bert-brown");
  add_output_options(*similarity_app, similarity.common,
                     "{\"texts\": [...], \"similarity\": [[...]]}");
  add_text_options(*similarity_app, similarity.input, "two or more texts");
  add_embedding_options(*similarity_app, similarity);

  AttentionCommand attention;
  CLI::App* attention_app =
      app.add_subcommand("attention", "write the attention weights of every layer and head");
  add_common_options(*attention_app, attention.common, "tiny-gpt2-brown");
  add_output_options(*attention_app, attention.common, "the same as --format json");
  add_text_options(*attention_app, attention.input, "the text to run through the model (one)");
  attention_app->add_option("--pair", attention.pair, "second sentence (encoders)");
  attention_app->add_option("--target", attention.target,
                            "encoder-decoders: the decoder's text, teacher-forced (default: the "
                            "model's own translation of TEXT)");
  const std::map<std::string, AttentionFormat> attention_formats = {
      {"json", AttentionFormat::kJson},
      {"html", AttentionFormat::kHtml},
      {"bertviz", AttentionFormat::kBertviz}};
  attention_app
      ->add_option_function<std::string>(
          "--format",
          [&](const std::string& name) { attention.format = attention_formats.at(name); },
          "json (the default), html (a page with a heat map) or bertviz (bertviz's JSON layout)")
      ->check(CLI::IsMember(attention_formats))
      ->excludes("--json");
  add_attention_options(*attention_app, attention.attention);
  attention_app->add_flag("--rollout", attention.rollout,
                          "add attention rollout (Abnar & Zuidema 2020): what each input token "
                          "contributes to each position of each layer, through the residuals "
                          "(an encoder-decoder's encoder)");
  attention_app->add_flag("--flow", attention.flow,
                          "add attention flow (Abnar & Zuidema 2020): the same as maximum flows "
                          "through the layers (slow past about 64 tokens)");

  HeadsCommand heads;
  CLI::App* heads_app =
      app.add_subcommand("heads", "what every attention head does: statistics and a role per head");
  add_common_options(*heads_app, heads.common, "tiny-gpt2-brown");
  add_output_options(*heads_app, heads.common, "the same as --format json");
  add_text_options(*heads_app, heads.input, "texts to run through the model");
  const std::map<std::string, HeadsFormat> heads_formats = {
      {"text", HeadsFormat::kText}, {"json", HeadsFormat::kJson}, {"html", HeadsFormat::kHtml}};
  heads_app
      ->add_option_function<std::string>(
          "--format", [&](const std::string& name) { heads.format = heads_formats.at(name); },
          "text (the default: a table and the roles), json (every number) or html (a page with "
          "every layer and head on the first input)")
      ->check(CLI::IsMember(heads_formats))
      ->excludes("--json");
  add_batch_tokens_option(*heads_app, heads.batch_tokens);
  heads_app
      ->add_option_function<std::string>(
          "--probe", [&](const std::string& name) { heads.probe = name == "induction"; },
          "induction: score induction heads on random sequences repeated twice (decoders; the "
          "default for them), or none")
      ->check(CLI::IsMember({"induction", "none"}));
  heads_app
      ->add_option("--probe-sequences", heads.probe_options.sequences,
                   "random sequences in the induction probe (default: " +
                       std::to_string(heads.probe_options.sequences) + ")")
      ->check(whole_number<int>())
      ->check(positive())
      ->check(at_most(kMaxProbeSequences));
  heads_app
      ->add_option("--probe-length", heads.probe_options.length,
                   "tokens of each probe sequence, before it is repeated; at most half the "
                   "context (default: " +
                       std::to_string(heads.probe_options.length) + ")")
      ->check(whole_number<int>())
      ->check(number_check(">= 2", [](double v) { return v >= 2; }));
  heads_app
      ->add_option("-s,--seed", heads.probe_options.seed,
                   "random seed of the probe sequences (default: " +
                       std::to_string(heads.probe_options.seed) + ")")
      ->check(whole_number<std::uint64_t>())
      ->check(number_check("from 0 to " + std::to_string(kMaxSeed),
                           [](double v) { return v >= 0 && v <= double(kMaxSeed); }));
  heads_app->add_option("--deps", heads.deps,
                        "score every head against a dependency treebank (CoNLL-U) as Clark et "
                        "al. 2019 do: which heads find a word's syntactic head (an "
                        "encoder-decoder's encoder heads)");
  heads_app->add_flag("--cross", heads.cross,
                      "encoder-decoders: the cross-attention heads (target tokens over the source) "
                      "instead of the encoder's and decoder's self-attention heads");
  heads_app
      ->add_option("-n,--max-new-tokens", heads.max_new_tokens,
                   "encoder-decoders: the decoder reads the model's greedy translation of each "
                   "text, at most this many tokens (default: " +
                       std::to_string(kHeadsTargetTokens) + ")")
      ->check(whole_number<int>())
      ->check(positive());

  LensCommand lens;
  CLI::App* lens_app = app.add_subcommand(
      "lens", "the logit lens: what each layer predicts at each position (nostalgebraist 2020)");
  add_common_options(*lens_app, lens.common, "tiny-gpt2-brown");
  add_output_options(*lens_app, lens.common, "the same as --format json");
  add_text_options(*lens_app, lens.input,
                   "texts to run through the model, each alone (an encoder-decoder's decoder "
                   "reads the model's own translation)");
  const std::map<std::string, LensFormat> lens_formats = {
      {"text", LensFormat::kText}, {"json", LensFormat::kJson}, {"html", LensFormat::kHtml}};
  lens_app
      ->add_option_function<std::string>(
          "--format", [&](const std::string& name) { lens.format = lens_formats.at(name); },
          "text (the default: a table per text, positions down, layers across), json (the top "
          "5 of every layer and position, one object per text) or html (a page: layers x "
          "positions)")
      ->check(CLI::IsMember(lens_formats))
      ->excludes("--json");
  lens_app->add_option("--target", lens.target,
                       "a token whose rank and probability are followed through the layers, at "
                       "the last position (encoders: the first mask; default: the model's own "
                       "prediction there)");

  AblateCommand ablate;
  CLI::App* ablate_app = app.add_subcommand("ablate",
                                            "head ablation: the loss with each head removed or "
                                            "replaced by its mean (Michel et al. 2019)");
  add_common_options(*ablate_app, ablate.common, "tiny-gpt2-brown");
  add_output_options(*ablate_app, ablate.common, "the same as --format json");
  add_text_options(*ablate_app, ablate.input,
                   "texts whose loss is measured (a decoder's next tokens, an encoder's masks, "
                   "an encoder-decoder's translation of each)");
  const std::map<std::string, AblateFormat> ablate_formats = {
      {"text", AblateFormat::kText}, {"json", AblateFormat::kJson}, {"html", AblateFormat::kHtml}};
  ablate_app
      ->add_option_function<std::string>(
          "--format", [&](const std::string& name) { ablate.format = ablate_formats.at(name); },
          "text (the default: the heads ranked, and grids), json (every number) or html (the "
          "grids as a page)")
      ->check(CLI::IsMember(ablate_formats))
      ->excludes("--json");
  ablate_app->add_option("--layers", ablate.layers,
                         "layers whose heads to ablate, e.g. 0,5-7 (default: all)");
  ablate_app->add_option("--heads", ablate.heads, "heads to ablate in those layers (default: all)");
  ablate_app->add_option("--targets", ablate.targets,
                         "a file with a line per text: for an encoder, the original word behind "
                         "each of its masks, separated by spaces; for an encoder-decoder, the "
                         "reference translation (default: the model's own greedy translation)");
  add_batch_tokens_option(*ablate_app, ablate.batch_tokens);

  TokenizeCommand tokenize;
  CLI::App* tokenize_app = app.add_subcommand(
      "tokenize", "print token ids and pieces, or decode ids (needs only the tokenizer files)");
  add_common_options(*tokenize_app, tokenize.common, "tiny-gpt2-brown");
  add_output_options(
      *tokenize_app, tokenize.common,
      "one JSON object per text: {\"ids\", \"tokens\"} (--decode: {\"ids\", \"text\"})");
  add_text_options(*tokenize_app, tokenize.input,
                   "texts to tokenize (with --decode: token ids, \"1 2 3\" or \"1,2,3\")");
  tokenize_app->add_option("--pair", tokenize.pair, "second sentence of the one text (encoders)");
  tokenize_app->add_flag(
      "--no-special", tokenize.no_special,
      "without the special tokens the tokenizer adds (add_special_tokens=False)");
  tokenize_app->add_flag("--decode", tokenize.decode,
                         "the inputs are token ids (\"1 2 3\" or \"1,2,3\"): print their text");
  tokenize_app->add_flag("--skip-special", tokenize.skip_special,
                         "with --decode: leave out special tokens (skip_special_tokens=True)");
  tokenize_app->add_flag("--offsets", tokenize.offsets,
                         "each token's [start, end) in characters (code points) of the text, as "
                         "Hugging Face's return_offsets_mapping; [0, 0) for added special tokens "
                         "(--json: \"offsets\": [[start, end], ...])");
  CLI::Option* tokenize_chat =
      tokenize_app
          ->add_option("--chat", tokenize.chat,
                       "a conversation (a JSON list of messages; '-': standard input): print it "
                       "as the model's chat template renders it (--json: {\"text\", \"ids\"})")
          ->type_name("FILE.json");
  tokenize_app
      ->add_flag("--add-generation-prompt", tokenize.add_generation_prompt,
                 "with --chat: end with the start of the assistant's turn")
      ->needs(tokenize_chat);
  for (CLI::Option* option : add_chat_format_options(*tokenize_app, tokenize.chat_format)) {
    option->needs(tokenize_chat);
  }

  CommonOptions info;
  CLI::App* info_app = app.add_subcommand("info", "describe a model folder");
  add_common_options(*info_app, info, "tiny-gpt2-brown");
  add_output_options(*info_app, info, "print JSON");

  PerplexityCommand perplexity;
  CLI::App* perplexity_app =
      app.add_subcommand("perplexity", "how well a decoder predicts a text (sliding windows)");
  add_common_options(*perplexity_app, perplexity.common, "tiny-gpt2-brown");
  add_output_options(*perplexity_app, perplexity.common,
                     "one JSON object per text, with every window");
  add_text_options(*perplexity_app, perplexity.input,
                   "texts to score (a file or standard input is one text, a corpus)");
  perplexity_app
      ->add_option("--window", perplexity.window,
                   "tokens per window (default: the model's context)")
      ->check(whole_number<int>())
      ->check(positive());
  perplexity_app
      ->add_option("--stride", perplexity.stride,
                   "tokens between window starts; less than --window overlaps the windows, "
                   "giving every scored token more context (default: the window)")
      ->check(whole_number<int>())
      ->check(positive());
  perplexity_app
      ->add_option("--batch-tokens", perplexity.batch_tokens,
                   "windows shorter than this are packed into batches of this many tokens; "
                   "memory grows with it (default: " +
                       std::to_string(perplexity.batch_tokens) + ")")
      ->check(whole_number<int>())
      ->check(positive())
      ->check(at_most(kMaxBatchTokens));
  perplexity_app->add_option("--per-token", perplexity.per_token,
                             "write each token's NLL to this file as JSON Lines");

  BenchCommand bench;
  CLI::App* bench_app = app.add_subcommand(
      "bench", "measure prompt and decode speed (encoders: ms per sequence), like llama-bench");
  add_common_options(*bench_app, bench.common, "tiny-gpt2-brown");
  bench_app->footer(
      "-p, -n, -b, -t and --dtype take comma lists (-p 128,512 -t 1,2): every combination is run "
      "(at most " +
      std::to_string(BenchCommand::kMaxCombinations) +
      "), the model loaded once per dtype. Progress goes to stderr, results to stdout.");
  // bench's -t and --dtype take lists, a run for each value, so they replace the single-value
  // options every command has. Removing those here keeps the list rules with bench: the common
  // ones are left unset, so configure() sizes no pool and bench sets each combination's own.
  bench_app->remove_option(bench_app->get_option("--threads"));
  bench_app->remove_option(bench_app->get_option("--dtype"));
  // The items of a comma list, empty ones included ("8,,16" has three), for the checks to refuse.
  // CLI11's own delimiter would drop empty items silently.
  const auto list_items = [](const std::string& list) {
    std::vector<std::string> items;
    std::size_t begin = 0;
    for (std::size_t comma; (comma = list.find(',', begin)) != std::string::npos;
         begin = comma + 1) {
      items.push_back(list.substr(begin, comma - begin));
    }
    items.push_back(list.substr(begin));
    return items;
  };
  // Runs `item_checks` on every item of a comma list. The message names the bad item, and the
  // list when it has several: "--prompt-tokens: must be a whole number, got x in '128,x'".
  const auto each_item = [list_items](std::vector<CLI::Validator> item_checks) {
    return CLI::Validator(
        [list_items, item_checks](std::string& list) -> std::string {
          for (std::string& item : list_items(list)) {
            if (item.empty()) return "must be a comma list without empty items, got '" + list + "'";
            for (const CLI::Validator& check : item_checks) {
              const std::string problem = check(item);
              if (problem.empty()) continue;
              return list.find(',') == std::string::npos ? problem : problem + " in '" + list + "'";
            }
          }
          return "";
        },
        "");
  };
  const auto add_int_list = [&](const std::string& names, std::vector<int>& values,
                                const std::string& help, std::vector<CLI::Validator> item_checks) {
    return bench_app
        ->add_option_function<std::string>(
            names,
            [&values, list_items](const std::string& list) {
              values.clear();
              for (const std::string& item : list_items(list)) values.push_back(std::stoi(item));
            },
            help)
        ->check(each_item(std::move(item_checks)))
        ->type_name("N,...");
  };
  add_int_list("-p,--prompt-tokens", bench.prompt_tokens,
               "prompt lengths (encoders: tokens per sequence)", {whole_number<int>(), positive()})
      ->default_str("128");
  add_int_list("-n,--new-tokens", bench.new_tokens, "decoders: tokens to decode after the prompt",
               {whole_number<int>(), non_negative()})
      ->default_str("128");
  add_int_list("-b,--batch", bench.batch, "encoders: sequences of -p tokens packed into one batch",
               {whole_number<int>(), positive()})
      ->default_str("1");
  add_int_list("-t,--threads", bench.threads, "threads; 0 = the cores attn may use",
               {whole_number<int>(), non_negative(), at_most(kMaxThreads)})
      ->default_str("0");
  bench_app
      ->add_option_function<std::string>(
          "--dtype",
          [&bench, list_items](const std::string& list) {
            bench.dtypes.clear();
            for (const std::string& name : list_items(list)) {
              bench.dtypes.push_back(*dtype_named(name));
            }
          },
          std::string("weight types to compute in, each converted once at load: ") + kDtypeHelp +
              " (default: as stored in the weight files)")
      ->check(each_item({CLI::Validator(
          [](std::string& name) -> std::string {
            return dtype_named(name) ? "" : "must be " + dtype_list() + ", got " + name;
          },
          "")}))
      ->type_name("TYPE,...");
  bench_app
      ->add_option("-r,--repetitions", bench.repetitions,
                   "timed runs of each combination, after one untimed warm-up (mean ± sample "
                   "standard deviation reported)")
      ->check(whole_number<int>())
      ->check(positive())
      ->check(at_most(kMaxRepetitions))
      ->capture_default_str();
  const std::map<std::string, BenchCommand::Format> bench_formats = {
      {"md", BenchCommand::Format::kMarkdown},
      {"csv", BenchCommand::Format::kCsv},
      {"json", BenchCommand::Format::kJsonLines},
      {"jsonl", BenchCommand::Format::kJsonLines}};
  CLI::Option* bench_format =
      bench_app
          ->add_option_function<std::string>(
              "-o,--output",
              [&](const std::string& name) { bench.format = bench_formats.at(name); },
              "md (a table, a row per measurement), csv (a header and a line per combination) "
              "or json / jsonl (the same: a JSON object per combination, one per line)")
          ->check(CLI::Validator(
              [&bench_formats](std::string& name) -> std::string {
                return bench_formats.contains(name) ? ""
                                                    : "must be md, csv, json or jsonl, got " + name;
              },
              ""))
          ->type_name("FORMAT")
          ->default_str("md");
  CLI::Option* kernels_flag = bench_app->add_flag(
      "--kernels", bench.kernels,
      "no model: the read bandwidth of one core and of all cores; each instruction set's "
      "multiply-add peaks on one core (f32, int8 byte products and, with AVX512_BF16, bf16 "
      "pairs), its GEMM rates on BERT-base's layer shapes (128 rows) as fractions of the peak of "
      "the same kind (q8_0 and q4_0 multiply in int8, bf16 in bf16 with AVX512_BF16), and its "
      "one-row kernels' rates (a decode step's dot_rows and accumulate_rows over 256 MiB of "
      "weights) as a fraction of one core's read bandwidth; then the same GEMM shapes through "
      "OpenBLAS and oneDNN where they are installed");
  // The options that say what model run to measure do not apply to the kernels' own.
  for (const char* name :
       {"--model", "--prompt-tokens", "--new-tokens", "--batch", "--threads", "--dtype"}) {
    kernels_flag->excludes(bench_app->get_option(name));
  }
  bench_app
      ->add_flag_callback(
          "--json", [&] { bench.format = BenchCommand::Format::kJsonLines; },
          "the same as -o json: one JSON object, or JSON Lines for several combinations")
      ->excludes(bench_format);

  // `attn help [COMMAND]` is `attn [COMMAND] --help`.
  std::vector<char*> help_arguments;
  if (argc >= 2 && std::string_view(argv[1]) == "help" && argc <= 3) {
    static char help_flag[] = "--help";
    help_arguments = {argv[0]};
    if (argc == 3) help_arguments.push_back(argv[2]);
    help_arguments.push_back(help_flag);
    argc = static_cast<int>(help_arguments.size());
    argv = help_arguments.data();
  }
  check_command_name(app, argc, argv);
  // The texts are taken out first, as typed; CLI11 parses the rest.
  std::vector<std::string> arguments(argv + 1, argv + argc);
  std::vector<std::string> texts;
  const std::vector<CLI::App*> named =
      app.get_subcommands([&](CLI::App* command) { return command->get_name() == argv[1]; });
  if (!named.empty()) {
    arguments.erase(arguments.begin());
    refuse_other_tools_options(*named.front(), arguments);
    texts = take_text_arguments(*named.front(), arguments);
    arguments.insert(arguments.begin(), argv[1]);
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

  // embed -o FILE.npy: the vectors, written by embed itself, not the results file opened below.
  if (embed.common.output && embed.common.output->extension() == ".npy") {
    embed.npy_output = std::exchange(embed.common.output, std::nullopt);
  }

  // Exactly one subcommand was parsed (require_subcommand(1)): set up and run it.
  const struct {
    CLI::App* app;
    CommonOptions& common;
    std::function<int()> run;
    TextSources* input = nullptr;  // for the commands that read texts
  } subcommands[] = {
      {generate_app, generate.common,
       [&] {
         generate.given = generation_flags_given(*generate_app);
         return run_generate(generate);
       },
       &generate.input},
      {chat_app, chat.common,
       [&] {
         chat.generate.given = generation_flags_given(*chat_app);
         return run_chat(chat);
       }},
      {classify_app, classify.common, [&] { return run_classify(classify); }, &classify.input},
      {rerank_app, rerank.common, [&] { return run_rerank(rerank); }, &rerank.input},
      {ner_app, ner.common, [&] { return run_ner(ner); }, &ner.input},
      {tokenize_app, tokenize.common, [&] { return run_tokenize(tokenize); }, &tokenize.input},
      {info_app, info, [&] { return run_info(info); }},
      {fill_mask_app, fill_mask.common, [&] { return run_fill_mask(fill_mask); }, &fill_mask.input},
      {attention_app, attention.common,
       [&] {
         if (attention.common.json) attention.format = AttentionFormat::kJson;
         return run_attention(attention);
       },
       &attention.input},
      {embed_app, embed.common, [&] { return run_embed(embed); }, &embed.input},
      {heads_app, heads.common,
       [&] {
         if (heads.common.json) heads.format = HeadsFormat::kJson;
         heads.probe_options_given = heads_app->count("--probe-sequences") > 0 ||
                                     heads_app->count("--probe-length") > 0 ||
                                     heads_app->count("--seed") > 0;
         return run_heads(heads);
       },
       &heads.input},
      {ablate_app, ablate.common,
       [&] {
         if (ablate.common.json) ablate.format = AblateFormat::kJson;
         return run_ablate(ablate);
       },
       &ablate.input},
      {lens_app, lens.common,
       [&] {
         if (lens.common.json) lens.format = LensFormat::kJson;
         return run_lens(lens);
       },
       &lens.input},
      {similarity_app, similarity.common, [&] { return run_embed(similarity); }, &similarity.input},
      {perplexity_app, perplexity.common, [&] { return run_perplexity(perplexity); },
       &perplexity.input},
      {bench_app, bench.common,
       [&] { return bench.kernels ? run_kernel_bench(bench) : run_bench(bench); }},
      {translate_app, translate.common,
       [&] {
         translate.beams_given = translate_app->count("--beams") > 0;
         translate.beam_options_given = translate_app->count("--num-return") > 0 ||
                                        translate_app->count("--length-penalty") > 0 ||
                                        translate_app->count("--early-stopping") > 0;
         return run_translate(translate);
       },
       &translate.input},
  };
  for (const auto& subcommand : subcommands) {
    if (!subcommand.app->parsed()) continue;
    if (subcommand.input) subcommand.input->arguments = texts;
    configure(subcommand.common);
    // -o: the results go to a file, opened before the work so that a bad path fails at once.
    std::optional<OutputFile> results;
    // Standard output again when the run ends, however it ends, before `results` is gone.
    const struct Restore {
      ~Restore() { send_results_to(nullptr); }
    } restore;
    if (subcommand.common.output && *subcommand.common.output != "-") {
      results.emplace(subcommand.common.output, "-o");
      send_results_to(&*results);
    }
    const int status = subcommand.run();
    // Whole or not at all: a run in which a text failed (exit status 1) leaves no file either.
    if (results && status == 0) results->commit();
    flush_stdout();  // whatever is still buffered: a full disk shows up here at the latest
    return status;
  }
  throw std::logic_error("no subcommand was run");
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
