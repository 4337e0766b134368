#include "src/cli/options.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <type_traits>

#include "src/cli/text_input.h"

namespace attn {

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

const std::vector<std::pair<std::string, WeightType>>& dtype_names() {
  static const std::vector<std::pair<std::string, WeightType>> names = {{"f32", WeightType::kF32},
                                                                        {"f16", WeightType::kF16},
                                                                        {"bf16", WeightType::kBF16},
                                                                        {"q8", WeightType::kQ8_0},
                                                                        {"q4", WeightType::kQ4_0}};
  return names;
}
std::optional<WeightType> dtype_named(const std::string& name) {
  for (const auto& [dtype_name, type] : dtype_names()) {
    if (dtype_name == name) return type;
  }
  return std::nullopt;
}
std::string dtype_list() {
  std::string list;
  const auto& names = dtype_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i].first;
  }
  return list;
}
const char* const kDtypeHelp =
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

CLI::Validator seed_check() {
  return number_check("-1 (random) or from 0 to " + std::to_string(kMaxSeed),
                      [](double v) { return v >= -1 && v <= double(kMaxSeed); });
}

CLI::Validator at_most(int limit) {
  return number_check("<= " + std::to_string(limit), [limit](double v) { return v <= limit; });
}

template CLI::Validator whole_number<int>();
template CLI::Validator whole_number<std::int64_t>();
template CLI::Validator whole_number<std::uint64_t>();

namespace {

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

}  // namespace

void add_common_options(CLI::App& command, CommonOptions& common, const char* default_model) {
  CLI::Option* model = command.add_option(
      "-m,--model", common.model_dir,
      std::string("Hugging Face model folder, or a model id (ORG/NAME) already in the Hugging Face "
                  "cache") +
          (default_model ? std::string(" (default: the shipped models/") + default_model + ")"
                         : std::string()));
  model->type_name("DIR");
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

void add_output_options(CLI::App& command, CommonOptions& common, const std::string& json_help) {
  command
      .add_option("-o,--output", common.output,
                  "write the results to this file (whole, or not at all on an error) instead of "
                  "standard output")
      ->type_name("FILE");
  command.add_flag("--json", common.json, json_help);
}

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

void add_attention_out_option(CLI::App& command, std::optional<std::filesystem::path>& path,
                              AttentionOptions& attention, const std::string& help) {
  CLI::Option* file = command.add_option("--attention-out", path, help)->type_name("FILE");
  for (CLI::Option* option : add_attention_options(command, attention)) option->needs(file);
}

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

void add_report_format_option(CLI::App& command, ReportFormat& format, const std::string& help) {
  const std::map<std::string, ReportFormat> formats = {
      {"text", ReportFormat::kText}, {"json", ReportFormat::kJson}, {"html", ReportFormat::kHtml}};
  command
      .add_option_function<std::string>(
          "--format", [&format, formats](const std::string& name) { format = formats.at(name); },
          help)
      ->check(CLI::IsMember(formats))
      ->excludes("--json");
  // --json is --format json; read once parsing is done, as the --json flag lands in common.json.
  command.parse_complete_callback([&command, &format] {
    if (command.count("--json") > 0) format = ReportFormat::kJson;
  });
}

bool beam_options_given(const CLI::App& command) {
  const GenerationFlagsGiven given = generation_flags_given(command);
  return given.num_return || given.length_penalty || given.early_stopping;
}

void add_batch_tokens_option(CLI::App& command, int& batch_tokens) {
  command
      .add_option("--batch-tokens", batch_tokens,
                  "tokens per packed batch; memory grows with it (default: " +
                      std::to_string(batch_tokens) + ")")
      ->check(whole_number<int>())
      ->check(positive())
      ->check(at_most(kMaxBatchTokens));
}

// Besides attn's own names, llama.cpp's --n-predict, --temperature, --max-tokens (its server's)
// and --repeat-last-n.
void add_generation_options(CLI::App& command, GenerationSettings& generate,
                            const std::string& length_default) {
  command
      .add_option("-n,--max-new-tokens,--n-predict,--max-tokens", generate.options.max_new_tokens,
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
      .add_option("--temp,--temperature", generate.options.sampling.temperature,
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
      .add_option("--repeat-last-n", generate.options.sampling.repeat_last_n,
                  "the last N tokens the repetition penalty looks back over, as llama.cpp's; -1 = "
                  "the whole text, prompt included, as Hugging Face's (the default); 0 = none")
      ->check(whole_number<int>())
      ->check(number_check(">= -1", [](double v) { return v >= -1; }));
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
          .early_stopping = given("--early-stopping"),
          .repeat_last_n = given("--repeat-last-n")};
}

std::vector<CLI::Option*> add_chat_format_options(CLI::App& command, ChatFormatOptions& format) {
  return {
      command
          .add_option("--chat-template-file", format.choice.file,
                      "a Jinja2 chat template to use instead of the model folder's")
          ->type_name("FILE"),
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

void add_examples(CLI::App& command, const std::vector<std::string>& examples) {
  std::string footer = "Examples:";
  for (const std::string& example : examples) footer += "\n  " + example;
  command.footer(footer);
}

}  // namespace attn
