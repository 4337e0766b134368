#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/error.h"
#include "src/cli/text_input.h"
#include "src/io/json_util.h"
#include "src/kernels/weight_type.h"
#include "src/tasks/attention_capture.h"
#include "src/tasks/beam_search.h"
#include "src/tasks/chat.h"
#include "src/tasks/generate.h"
#include "src/tasks/generation_settings.h"

// What every command of the attn command line shares: the Command interface main.cpp runs them
// through, the settings several of them have, and small helpers for their output.
//
// Exit status: 0 success; 1 bad input data (a model file, or text that is not UTF-8, empty or
// longer than the context, whether given as an option, a positional argument, a file or standard
// input); 2 bad command-line usage (an unknown command or option, a bad option value or
// combination); 130 Ctrl-C stopped generate or translate, which printed what it had
// (src/cli/interrupt.h; 128 + SIGINT, as a shell reports for it); 141 standard output was a pipe
// that closed (as a shell reports for SIGPIPE).
namespace attn {

// Tokens in one packed batch, at most (fill-mask --batch-tokens, bench --batch x -p): the
// activations grow with it, about 100 kB per token for BERT-base.
constexpr int kMaxBatchTokens = 16384;

struct CommonOptions {
  // -m: a model folder or, once resolve_model_folder has run, the Hugging Face cache's snapshot
  // of a repository id (ORG/NAME) at --revision.
  std::filesystem::path model_dir;
  std::optional<std::string> revision;
  std::optional<WeightType> dtype;  // --dtype: compute in this type; default, the file's
  int threads = 0;                  // 0 = all cores
  bool verbose = false;
  bool quiet = false;
  // -o: the results go to this file, written whole or not at all, instead of standard output.
  std::optional<std::filesystem::path> output;
  bool json = false;  // --json: one JSON object per input (JSON Lines for several)
};

// How a conversation becomes a prompt (attn chat, generate --chat, tokenize --chat): the model
// folder's chat template or another, and the variables it gets beyond the messages.
struct ChatFormatOptions {
  ChatTemplateChoice choice;                   // --chat-template-file, --chat-template-name
  std::vector<std::string> variables;          // --chat-var KEY=JSON, as given
  std::optional<std::filesystem::path> tools;  // --tools FILE.json: a JSON list of tool schemas
};

// What an analysis prints (heads, lens, ablate: --format; --json is --format json).
enum class ReportFormat {
  kText,  // tables for a person
  kJson,  // every number, in the reference files' field names
  kHtml,  // a page (src/tasks/*_view.html)
};

// One command of the command line (attn generate, attn embed, ...). Its X_command.cpp defines
// the settings it has, registers their options and runs it; main.cpp only lists the commands.
class Command {
 public:
  Command(std::string name, std::string summary)
      : name_(std::move(name)), summary_(std::move(summary)) {}
  virtual ~Command() = default;
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  const std::string& name() const { return name_; }
  const std::string& summary() const { return summary_; }  // its line in attn --help

  // Registers the command's options on `app`, its CLI11 subcommand, bound to its own fields.
  virtual void add_options(CLI::App& app) = 0;
  // Runs the command once its options are parsed (`app` tells which were given); returns the
  // exit status. main.cpp has set up logging, threads and -o, and resolved common.model_dir.
  virtual int run(const CLI::App& app) = 0;

  CommonOptions common;
  // The texts, for a command that reads them (add_text_options); main.cpp puts the positional
  // arguments here, as typed.
  TextSources input;

 private:
  std::string name_;
  std::string summary_;
};

// The commands, in the order attn --help lists them; each defined in its X_command.cpp.
std::unique_ptr<Command> make_generate_command();
std::unique_ptr<Command> make_chat_command();
std::unique_ptr<Command> make_translate_command();
std::unique_ptr<Command> make_classify_command();
std::unique_ptr<Command> make_rerank_command();
std::unique_ptr<Command> make_ner_command();
std::unique_ptr<Command> make_fill_mask_command();
std::unique_ptr<Command> make_embed_command();
std::unique_ptr<Command> make_similarity_command();
std::unique_ptr<Command> make_attention_command();
std::unique_ptr<Command> make_heads_command();
std::unique_ptr<Command> make_lens_command();
std::unique_ptr<Command> make_ablate_command();
std::unique_ptr<Command> make_tokenize_command();
std::unique_ptr<Command> make_info_command();
std::unique_ptr<Command> make_perplexity_command();
std::unique_ptr<Command> make_bench_command();
std::unique_ptr<Command> make_serve_command();

// The "timings" object of generate's and chat's --json: load, prompt and decode times and
// rates.
nlohmann::ordered_json generation_timings(const GenerateResult& result, double load_ms);

// Refuses a model that cannot generate text (an encoder, or an encoder-decoder), for `command`.
void require_decoder(const Model& model, const std::string& command);

// Sampling options that would do nothing are refused, with the reason: a user who gives one
// expects it to change something (--top-k with --temp 0, ...). `beams`: beam search is on.
void check_sampling_options_apply(const GenerationSettings& settings, bool beams);

// The chat template of command.common.model_dir as `format` chooses it
// (chat_format.cpp).
ChatTemplate load_chat_template(const std::filesystem::path& model_dir,
                                const ChatFormatOptions& format);
// --chat-var KEY=JSON ... as one object; UsageError for an item that is not KEY=JSON.
nlohmann::ordered_json chat_variables(const ChatFormatOptions& format);
// --tools FILE.json: its list of tool schemas; null without --tools.
nlohmann::ordered_json chat_tools(const ChatFormatOptions& format);
// A conversation file ("-": standard input): a JSON list of messages, checked as
// Conversation::set_messages checks it.
nlohmann::ordered_json read_conversation(const std::filesystem::path& path,
                                         const std::string& what);

// Throws Error "<what>: invalid UTF-8 at byte N" for text that is not UTF-8.
void require_utf8(std::string_view text, const std::string& what);

// The lines of an input file (--file), without their "\n" or "\r\n"; lines[i] is line i + 1. A
// final "\n" does not start another line.
std::vector<std::string> split_lines(std::string_view contents);

// `page`, an HTML template, with `data` as JSON in place of `marker`. '<' (only ever inside a
// JSON string) is written \u003c, so that no "</script>" in the data ends its element early.
std::string page_with_data(std::string_view page, std::string_view marker,
                           const nlohmann::ordered_json& data);

// "1 token", "2 tokens"; "1 pass", "3 passes" with plural_form "passes".
std::string plural(long count, std::string_view singular, std::string_view plural_form = {});

// "attn: error: <message>\n" as exactly one line: control characters (a newline in a file name,
// an escape sequence) are shown as \xNN, and a very long message is cut short.
std::string error_line(std::string_view message);
// Prints error_line(message) on stderr.
void print_error(std::string_view message);

}  // namespace attn
