// attn chat: a conversation with an instruct model. On a terminal (or with -i) it goes turn by
// turn: each line typed is a user message, the reply streams, and the KV cache carries from one
// turn to the next. Otherwise standard input is a conversation (a JSON list of messages) and
// attn prints the assistant's next message.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "src/base/error.h"
#include "src/cli/commands.h"
#include "src/cli/interrupt.h"
#include "src/cli/line_editor.h"
#include "src/cli/options.h"
#include "src/io/output_file.h"

namespace attn {
namespace {

// attn chat: a conversation with an instruct model, on a terminal (or -i) turn by turn, else
// the next assistant message of a conversation read from standard input.
struct ChatCommand final : Command {
  ChatCommand()
      : Command("chat",
                "talk with an instruct model, formatted by its chat template; on a terminal turn "
                "by turn (/help), else the next message of a conversation read as JSON from "
                "standard input") {}
  void add_options(CLI::App& app) override;
  int run(const CLI::App& app) override;

  GenerationSettings generation;  // -n, -c, --temp, ..., as generate has them
  ChatFormatOptions chat_format;
  std::optional<std::string> system;  // --system: the system message
  bool interactive = false;           // -i: turn by turn even when standard input is no terminal
  bool truncate = false;              // drop the oldest turns when the context fills
  bool reuse_cache = true;            // --no-cache-reuse: compute every turn's prompt whole
};

using Clock = std::chrono::steady_clock;
using nlohmann::ordered_json;

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

constexpr const char* kHelp =
    "/reset          forget the conversation (the system message stays)\n"
    "/system [TEXT]  set the system message (none: remove it); the conversation stays\n"
    "/save FILE      write the conversation to FILE as JSON (a list of messages)\n"
    "/exit, /quit    end the chat (as Ctrl-D does)\n"
    "/help           this list\n"
    "Ctrl-C stops a reply; at the prompt, Ctrl-C or Ctrl-D ends; a line ending in \\ goes on.\n";

// A reply, its statistics on one log line, and what the user should know about how it ended.
struct TurnReport {
  const ChatReply& reply;
  double first_token_ms;  // from the message to the first reply token chosen
  int context;
};

void log_turn(const TurnReport& report) {
  const GenerateResult& result = report.reply.generation;
  spdlog::debug(
      "prompt {} ({} from the cache) {:.1f} ms | first token after {:.1f} ms | decode {}, "
      "{:.1f} tokens/s | stop: {}",
      plural(result.prompt_tokens, "token"), result.reused_tokens, result.prompt_ms,
      report.first_token_ms, plural(result.decode_steps, "pass", "passes"),
      result.decode_tokens_per_s(), result.stop_reason);
  if (report.reply.dropped_messages > 0) {
    spdlog::warn("--truncate: dropped the oldest {} to fit the context of {} tokens",
                 plural(report.reply.dropped_messages, "message"), report.context);
  }
  if (result.stop_reason == "context") {
    spdlog::warn(
        "the context of {} tokens is full: the reply stops here; /reset starts again, "
        "--truncate drops the oldest turns",
        report.context);
  }
}

// Generates the next reply, its text streamed to standard output when `stream`, and the time
// from here to its first token.
ChatReply timed_reply(Conversation& conversation, bool stream, double& first_token_ms) {
  const auto start = Clock::now();
  first_token_ms = 0;
  GenerateCallbacks callbacks;
  callbacks.stop = &interrupt_requested();
  callbacks.on_token = [&](int, std::string_view) {
    if (first_token_ms == 0) first_token_ms = milliseconds_since(start);
  };
  if (stream) {
    callbacks.on_text = [](std::string_view text) {
      write_stdout(text);
      flush_stdout();
    };
  }
  return conversation.reply(callbacks);
}

// /save FILE: the conversation as indented JSON, written whole or not at all.
void save_conversation(const Conversation& conversation, const std::string& path) {
  if (path.empty()) throw UsageError("/save: give a file name");
  OutputFile file(std::filesystem::path(path), "/save");
  if (file.is_standard_output()) throw UsageError("/save: give a file name, not standard output");
  file.write(json_text(conversation.messages(), 2) + "\n");
  file.commit();
}

// What a line starting with '/' did.
enum class SessionCommand { kRan, kUnknown, kEnd };

// A line starting with '/': a command of the session.
SessionCommand run_session_command(Conversation& conversation, const std::string& line) {
  const std::size_t space = line.find(' ');
  const std::string name = line.substr(0, space);
  const std::string argument = space == std::string::npos ? "" : line.substr(space + 1);
  if (name == "/reset") {
    conversation.reset();
    std::cerr << "(the conversation is forgotten)\n";
  } else if (name == "/system") {
    conversation.set_system(argument);
    std::cerr << (argument.empty() ? "(no system message)\n" : "(system message set)\n");
  } else if (name == "/save") {
    save_conversation(conversation, argument);
    std::cerr << "(saved to " << argument << ")\n";
  } else if (name == "/help") {
    std::cerr << kHelp;
  } else if (name == "/exit" || name == "/quit") {
    return SessionCommand::kEnd;
  } else {
    return SessionCommand::kUnknown;
  }
  return SessionCommand::kRan;
}

// Turn by turn until the end of input.
void run_interactive(const ChatCommand& command, Conversation& conversation, int context) {
  const bool terminal = ::isatty(STDIN_FILENO);
  if (!command.common.quiet && terminal) {
    std::cerr << "attn chat: " << conversation.chat_template().origin()
              << "; /help lists the commands\n";
  }
  LineEditor editor(terminal);
  while (std::optional<std::string> line = editor.read(terminal ? "> " : "")) {
    clear_interrupt();  // the Ctrl-C that stopped the last reply has been dealt with
    if (is_blank(*line)) continue;
    try {
      require_utf8(*line, "input");
      if (line->starts_with('/')) {
        const SessionCommand done = run_session_command(conversation, *line);
        if (done == SessionCommand::kEnd) break;
        if (done == SessionCommand::kUnknown) {
          print_error("unknown command " + line->substr(0, line->find(' ')) +
                      " (/help lists them; a message starting with / needs a space first)");
        }
        continue;
      }
      conversation.add_message("user", *line);
      double first_token_ms = 0;
      const ChatReply reply = [&] {
        try {
          return timed_reply(conversation, true, first_token_ms);
        } catch (const Error&) {
          conversation.remove_last_message();  // the message that did not fit is not kept
          throw;
        }
      }();
      write_stdout("\n");
      flush_stdout();
      log_turn({reply, first_token_ms, context});
      if (reply.generation.stop_reason == "interrupted") std::cerr << "(stopped)\n";
    } catch (const OutputError&) {
      throw;
    } catch (const Error& error) {
      print_error(error.what());
    }
  }
  if (terminal) std::cerr << "\n";
}

// Standard input is a conversation: print the next assistant message.
void run_once(const ChatCommand& command, Conversation& conversation, const ordered_json& messages,
              const Model& model, int context) {
  conversation.set_messages(messages, "standard input");
  if (command.system) conversation.set_system(*command.system);
  double first_token_ms = 0;
  const ChatReply reply = timed_reply(conversation, !command.common.json, first_token_ms);
  if (!command.common.json) {
    write_stdout("\n");
    log_turn({reply, first_token_ms, context});
    return;
  }
  const GenerateResult& result = reply.generation;
  const ordered_json out = {{"message", {{"role", "assistant"}, {"content", reply.text}}},
                            {"prompt_tokens", result.prompt_tokens},
                            {"generated_ids", result.generated_ids},
                            {"stop_reason", result.stop_reason},
                            {"dropped_messages", reply.dropped_messages},
                            {"seed", conversation.options().generation.sampling.seed},
                            {"timings", generation_timings(result, model.load_ms)}};
  write_stdout(json_text(out) + "\n");
  log_turn({reply, first_token_ms, context});
}

}  // namespace

void ChatCommand::add_options(CLI::App& app) {
  add_common_options(app, common, "tiny-gpt2-brown");
  add_output_options(app, common,
                     "when standard input is a conversation: the next message with its timings, "
                     "as one JSON object");
  add_generation_options(app, generation, "until the end of the turn or the context");
  add_chat_format_options(app, chat_format);
  app.add_option("--system", system, "the system message");
  app.add_flag("-i,--interactive", interactive,
               "turn by turn, one message per line, even when standard input is no terminal");
  app.add_flag("--truncate", truncate,
               "when the conversation outgrows the context, drop its oldest turns (the system "
               "message stays) instead of refusing the message");
  app.add_flag("!--no-cache-reuse", reuse_cache,
               "compute each turn's whole prompt instead of continuing the last turn's KV cache "
               "(for comparison)");
  add_examples(app,
               {"attn chat -m Qwen/Qwen2.5-0.5B-Instruct",
                "attn chat -m HuggingFaceTB/SmolLM2-135M-Instruct --system \"Answer briefly.\"",
                "echo '[{\"role\": \"user\", \"content\": \"Hi!\"}]' | attn chat -m DIR --json"});
}

int ChatCommand::run([[maybe_unused]] const CLI::App& app) {
  generation.given = generation_flags_given(app);
  const ChatCommand& command = *this;
  check_sampling_options_apply(command.generation, false);
  const bool interactive = command.interactive || ::isatty(STDIN_FILENO);
  if (interactive && command.common.json) {
    throw UsageError("--json: only when standard input is a conversation (not with -i)");
  }
  // Read before the model loads, so that a bad conversation fails at once.
  const ordered_json messages =
      interactive ? ordered_json::array() : read_conversation("-", "standard input");
  auto model = load_model(command.common.model_dir, command.common.dtype);
  require_decoder(*model, "chat");
  ChatOptions options;
  options.generation = with_generation_config(command.generation, model->generation);
  const int context = generation_context(model->spec(), options.generation);
  // A reply runs to the end of its turn unless -n or the folder says otherwise.
  if (!command.generation.given.max_new_tokens && !model->generation.max_new_tokens) {
    options.generation.max_new_tokens = context;
  }
  options.tools = chat_tools(command.chat_format);
  options.variables = chat_variables(command.chat_format);
  options.truncate = command.truncate;
  options.reuse_cache = command.reuse_cache;
  Conversation conversation(*model, load_chat_template(model->dir, command.chat_format),
                            std::move(options));
  catch_interrupts();
  if (!interactive) {
    run_once(command, conversation, messages, *model, context);
    return interrupt_requested() ? kInterruptedStatus : 0;
  }
  if (command.system) conversation.set_system(*command.system);
  run_interactive(command, conversation, context);
  return 0;
}

std::unique_ptr<Command> make_chat_command() { return std::make_unique<ChatCommand>(); }

}  // namespace attn
