#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/cli/commands.h"

// The option groups that several commands share, each registered by one function, and the
// checks their values get. A command's own options are registered in its X_command.cpp.
namespace attn {

// A check on a numeric option value that states the bound plainly ("--temp: must be >= 0, got
// -1"). CLI11's NonNegativeNumber and PositiveNumber print their range with a 309-digit upper
// bound, and let NaN through, since every comparison with NaN is false.
CLI::Validator number_check(const std::string& requirement, std::function<bool(double)> holds);
CLI::Validator non_negative();
CLI::Validator positive();
CLI::Validator finite();
CLI::Validator at_most(int limit);
// A whole number that fits `Integer`, checked before CLI11 converts it: CLI11's own message for
// "-n 1e3" or "-n 3000000000" names neither rule.
template <class Integer>
CLI::Validator whole_number();
extern template CLI::Validator whole_number<int>();
extern template CLI::Validator whole_number<std::int64_t>();
extern template CLI::Validator whole_number<std::uint64_t>();
// --seed: 0 to 2^53 - 1 (kMaxSeed), or -1 for a random one, as llama.cpp's.
CLI::Validator seed_check();

// More threads than cores only slow attn down (the pool warns); the bound stops a typo from
// asking for more threads than the system will start.
constexpr int kMaxThreads = 1024;

// --dtype's names for the weight types a model can be converted to at load, in the order help
// and errors list them.
const std::vector<std::pair<std::string, WeightType>>& dtype_names();
// The weight type of a name in dtype_names(), or nullopt.
std::optional<WeightType> dtype_named(const std::string& name);
// dtype_names()' names as a list: "f32, f16, bf16, q8 or q4".
std::string dtype_list();
// What each of them is, for help.
extern const char* const kDtypeHelp;

// -m, --revision, -t, --dtype, -v, -q: on every command. default_model: a folder of the shipped
// models/, or nullptr to require -m.
void add_common_options(CLI::App& command, CommonOptions& common, const char* default_model);

// -o and --json: on every command that prints results. json_help says what --json prints.
void add_output_options(CLI::App& command, CommonOptions& common, const std::string& json_help);

// --format text|json|html for the analyses (heads, lens, ablate), `help` saying what each
// gives; --json (add_output_options) is the same as --format json.
void add_report_format_option(CLI::App& command, ReportFormat& format, const std::string& help);

// --batch-tokens: how many tokens of several inputs run packed into one forward pass.
void add_batch_tokens_option(CLI::App& command, int& batch_tokens);

// --layers, --heads, --precision: which attention weights to write, and how precisely.
std::vector<CLI::Option*> add_attention_options(CLI::App& command, AttentionOptions& attention);

// --attention-out FILE (`help` says what its JSON Lines hold), with the --layers, --heads and
// --precision that only it reads.
void add_attention_out_option(CLI::App& command, std::optional<std::filesystem::path>& path,
                              AttentionOptions& attention, const std::string& help);

// --beams (described by beams_help), --num-return, --length-penalty, --early-stopping.
void add_beam_options(CLI::App& command, BeamSearchOptions& beam, const char* beams_help);
// Whether any of --num-return, --length-penalty or --early-stopping was given.
bool beam_options_given(const CLI::App& command);

// The options of a decoder's generation that generate and chat share: length, context,
// sampling, seed and stop strings. `length_default`: what -n is without generation_config.json's
// max_new_tokens.
void add_generation_options(CLI::App& command, GenerationSettings& settings,
                            const std::string& length_default);
// Which of add_generation_options' settings `command` was given: the others come from the
// model's generation_config.json.
GenerationFlagsGiven generation_flags_given(const CLI::App& command);

// The options that turn a conversation into a prompt (attn chat, generate --chat, tokenize
// --chat); returned so that a command can make them depend on its --chat.
std::vector<CLI::Option*> add_chat_format_options(CLI::App& command, ChatFormatOptions& format);

// Ends `command`'s --help with these command lines, each shown on a line of its own.
void add_examples(CLI::App& command, const std::vector<std::string>& examples);

}  // namespace attn
