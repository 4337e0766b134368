// attn generate: text from a decoder, for each prompt given. Text output streams the prompt and
// its continuation, prompts separated by a blank line; --json prints one object per prompt.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "src/base/error.h"
#include "src/cli/commands.h"
#include "src/cli/interrupt.h"
#include "src/cli/options.h"
#include "src/io/output_file.h"

namespace attn {
namespace {

// The generation settings (options, context_size, seed, given) are GenerationSettings', shared
// with chat.
struct GenerateCommand final : Command, GenerationSettings {
  GenerateCommand()
      : Command("generate",
                "generate text with a decoder (" + family_names(ModelKind::kDecoder) + ")") {}
  void add_options(CLI::App& app) override;
  int run(const CLI::App& app) override;

  // --prompt-file: one prompt, the whole file ("-": standard input) less one final newline.
  std::optional<std::filesystem::path> prompt_file;
  BeamSearchOptions beam;  // used when beam.beams > 1
  bool truncate = false;
  bool color = false;        // --color: the generated text in colour, on a terminal
  bool hide_prompt = false;  // --no-display-prompt: the continuation alone
  bool stream = false;       // with json: JSON Lines, one per token, before the summary
  // JSON Lines with the attention row behind each generated token, when given.
  std::optional<std::filesystem::path> attention_out;
  AttentionOptions attention;
  // --chat: each prompt is a user message (after --system), rendered by the chat template.
  bool chat = false;
  std::optional<std::string> system;
  ChatFormatOptions chat_format;
};

// A prompt longer than the context, cut to its last tokens. Room is kept for the new tokens,
// but never at the cost of more than half the context: a prompt cut to a handful of tokens
// would lose what it was about. Generation then stops at the context (stop_reason "context").
void truncate_prompt(std::vector<int>& prompt_ids, const InputText& prompt, int context,
                     int max_new_tokens) {
  const int keep = std::max({1, context / 2, context - max_new_tokens});
  std::string warning = fmt::format("{}: the prompt is {} tokens, truncated to the last {}",
                                    prompt.source, prompt_ids.size(), keep);
  if (keep + max_new_tokens > context) {
    warning += fmt::format(
        "; -n {} does not fit after them, so generation stops at the context of {} tokens",
        max_new_tokens, context);
  }
  spdlog::warn("{}", warning);
  prompt_ids.erase(prompt_ids.begin(), prompt_ids.end() - keep);
}

}  // namespace

void check_sampling_options_apply(const GenerationSettings& settings, bool beams) {
  const GenerationFlagsGiven& given = settings.given;
  if (!beams) {
    const char* beam_only = given.num_return       ? "--num-return"
                            : given.length_penalty ? "--length-penalty"
                            : given.early_stopping ? "--early-stopping"
                                                   : nullptr;
    if (beam_only) throw UsageError(std::string(beam_only) + ": only with --beams 2 or more");
  }
  const std::string sampling = sampling_options_given(given, settings.options.sampling.temperature);
  if (beams && (!sampling.empty() || given.temperature)) {
    throw UsageError((sampling.empty() ? std::string("--temp") : sampling) +
                     ": beam search (--beams) is deterministic; give one or the other");
  }
  if (given.temperature && settings.options.sampling.temperature == 0 && !sampling.empty()) {
    throw UsageError(sampling + ": --temp 0 is greedy decoding, which samples nothing");
  }
}

namespace {

// generate's own options that would do nothing in the mode chosen, refused with the reason.
void check_options_apply(const GenerateCommand& command) {
  const bool beams = command.beam.beams > 1;
  check_sampling_options_apply(command, beams);
  if (beams) {
    if (command.stream) {
      throw UsageError("--stream: not with --beams, which decides its sequences only at the end");
    }
    if (command.attention_out) throw UsageError("--attention-out: not with --beams");
    if (command.color) throw UsageError("--color: not with --beams, whose text does not stream");
  }
  if (command.stream && !command.common.json) {
    throw UsageError("--stream: only with --json (the text output always streams)");
  }
  if (command.color && command.common.json) throw UsageError("--color: not with --json");
  if (command.beam.num_return > command.beam.beams) {
    throw UsageError("--num-return: must be at most --beams (" +
                     std::to_string(command.beam.beams) + "), got " +
                     std::to_string(command.beam.num_return));
  }
}

}  // namespace

namespace {

// The prompt's ids, within the context: a longer prompt fails, or with --truncate keeps its end.
std::vector<int> prompt_ids(const GenerateCommand& command, const Model& model,
                            const std::vector<int>& encoded, const InputText& prompt,
                            const GenerateOptions& options) {
  std::vector<int> ids = encoded;
  if (ids.empty()) prompt.fail(kNoTokens);
  const int context = generation_context(model.spec(), options);
  if (int(ids.size()) > context) {
    if (!command.truncate) {
      prompt.fail("the prompt is " + std::to_string(ids.size()) + " tokens, longer than the " +
                  (context < model.spec().max_positions ? "-c " : "") + "context of " +
                  std::to_string(context) + " (use --truncate to keep the last tokens)");
    }
    truncate_prompt(ids, prompt, context, options.max_new_tokens);
  }
  return ids;
}

// generate --beams N: the num_return best continuations, each with its score, best first.
// Ctrl-C prints the best so far, unfinished ones included.
void run_beam_search(const GenerateCommand& command, const Model& model, const InputText& prompt,
                     const std::vector<int>& ids, const GenerateOptions& options) {
  BeamSearchOptions beam = command.beam;
  beam.max_new_tokens = options.max_new_tokens;
  beam.eos_ids = end_of_sequence_ids(model, options);
  beam.stop = &interrupt_requested();
  const BeamSearchResult result = beam_search(model, ids, beam);
  nlohmann::json sequences = nlohmann::json::array();
  std::string text;
  for (const BeamHypothesis& hypothesis : result.sequences) {
    const std::string continuation = model.tokenizer->decode(hypothesis.ids, true);
    sequences.push_back({{"generated_ids", hypothesis.ids},
                         {"text", continuation},
                         {"score", hypothesis.score},
                         {"finished", hypothesis.finished}});
    // --chat shows the reply alone: the prompt is the template's, not the user's text.
    text += fmt::format("[{:.4f}] {}{}\n", hypothesis.score,
                        command.chat || command.hide_prompt ? "" : prompt.text, continuation);
  }
  if (command.common.json) {
    write_stdout(json_text(nlohmann::json{{"prompt", prompt.text},
                                          {"prompt_ids", ids},
                                          {"beams", beam.beams},
                                          {"steps", result.steps},
                                          {"stop_reason", result.stop_reason},
                                          {"sequences", sequences}}) +
                 "\n");
  } else {
    write_stdout(text);
  }
  if (result.stop_reason == "interrupted") {
    flush_stdout();
    spdlog::info("interrupted after {}: the best sequences so far, unfinished ones included",
                 plural(result.steps, "step"));
  }
}

// ANSI colour for the generated text, after the prompt (llama.cpp's --color).
constexpr std::string_view kGeneratedColor = "\x1b[33m";
constexpr std::string_view kColorReset = "\x1b[0m";

// One prompt, sampled or greedy; with attention_out, the attention row behind each new token
// goes there.
void run_sampling(const GenerateCommand& command, const Model& model, const InputText& prompt,
                  const std::vector<int>& ids, const GenerateOptions& options,
                  OutputFile* attention_out, bool color) {
  GenerateCallbacks callbacks;
  callbacks.stop = &interrupt_requested();
  std::optional<GenerationAttentionRecorder> recorder;
  if (attention_out) {
    recorder.emplace(select_attention(model.spec(), command.attention));
    callbacks.observer = recorder->observer();
  }
  const bool json = command.common.json;
  if (json && command.stream) {
    callbacks.on_token = [](int token_id, std::string_view text) {
      write_stdout(
          json_text(nlohmann::ordered_json{{"token_id", token_id}, {"text", std::string(text)}}) +
          "\n");
      flush_stdout();
    };
  }
  if (!json) {
    if (!command.chat && !command.hide_prompt) write_stdout(prompt.text);
    if (color) write_stdout(kGeneratedColor);
    flush_stdout();
    callbacks.on_text = [](std::string_view text) {
      write_stdout(text);
      flush_stdout();
    };
  }
  const GenerateResult result = generate(model, ids, options, callbacks);
  if (recorder) {
    recorder->write_jsonl(*attention_out, *model.tokenizer, result.generated_ids,
                          command.attention.precision);
    attention_out->commit();
  }
  if (json) {
    nlohmann::ordered_json out = {{"prompt", prompt.text},
                                  {"prompt_ids", ids},
                                  {"seed", options.sampling.seed},
                                  {"generated_ids", result.generated_ids},
                                  {"text", result.text},
                                  {"stop_reason", result.stop_reason},
                                  {"timings", generation_timings(result, model.load_ms)}};
    if (prompt.line > 0) out["line"] = prompt.line;
    write_stdout(json_text(out) + "\n");
  } else {
    write_stdout(color ? std::string(kColorReset) + "\n" : "\n");
  }
  flush_stdout();
  spdlog::info(
      "load {:.1f} ms | prompt {}, {:.1f} tokens/s | decode {}, {:.1f} tokens/s | {}, stop: {}",
      model.load_ms, plural(result.prompt_tokens, "token"), result.prompt_tokens_per_s(),
      plural(result.decode_steps, "pass", "passes"), result.decode_tokens_per_s(),
      plural(int(result.generated_ids.size()), "new token"), result.stop_reason);
}

}  // namespace

nlohmann::ordered_json generation_timings(const GenerateResult& result, double load_ms) {
  return {{"load_ms", load_ms},
          {"prompt_ms", result.prompt_ms},
          {"prompt_tokens_per_s", result.prompt_tokens_per_s()},
          {"decode_ms", result.decode_ms},
          {"decode_tokens_per_s", result.decode_tokens_per_s()}};
}

void require_decoder(const Model& model, const std::string& command) {
  model.require_single_stack(command);
  if (!model.spec().causal) {
    throw UsageError(model.dir.string() + ": " + command + " needs a decoder model; this one is " +
                     model.description());
  }
}

void GenerateCommand::add_options(CLI::App& app) {
  add_common_options(app, common, "tiny-gpt2-brown");
  add_output_options(app, common,
                     "one JSON object per prompt (ids, text, seed, stop_reason, timings) instead "
                     "of the text");
  add_text_options(app, input, "prompts");
  app.add_option("--prompt-file", prompt_file,
                 "one prompt, the whole file ('-': standard input) less one final newline, as "
                 "llama.cpp's -f")
      ->type_name("FILE");
  add_generation_options(app, *this, "64");
  add_beam_options(app, beam,
                   "beam search with this many beams (1: off); deterministic, as Hugging Face's");
  app.add_flag("--ignore-eos", options.ignore_eos, "do not stop at end-of-text");
  app.add_flag("--truncate", truncate,
               "keep the end of a prompt longer than the context instead of failing");
  app.add_flag("!--no-cache", options.use_cache,
               "recompute every position at every step (slow; for checking)");
  app.add_flag("--stream", stream,
               "with --json: first a JSON line {token_id, text} per token as it comes "
               "(text output always streams)");
  app.add_flag("--no-display-prompt", hide_prompt,
               "print the continuation alone (llama.cpp's --no-display-prompt, Hugging "
               "Face's return_full_text=False)");
  app.add_flag("--color", color,
               "show the generated text in colour after the prompt (on a terminal)");
  CLI::Option* generate_chat =
      app.add_flag("--chat", chat,
                   "each prompt is a user message, formatted by the model's chat "
                   "template (after --system), and only the reply is printed");
  app.add_option("--system", system, "with --chat: the system message")->needs(generate_chat);
  for (CLI::Option* option : add_chat_format_options(app, chat_format)) {
    option->needs(generate_chat);
  }
  add_attention_out_option(
      app, attention_out, attention,
      "write the attention row behind each generated token to this file (JSON Lines)");
  add_examples(app,
               {"attn generate \"The jury said\" -n 20",
                "attn generate -m Qwen/Qwen2.5-0.5B --temp 0.7 --seed 1 -p \"Once upon a time\"",
                "attn generate -m DIR --chat --system \"Be brief.\" \"What is a jury?\" --json"});
}

int GenerateCommand::run([[maybe_unused]] const CLI::App& app) {
  given = generation_flags_given(app);
  const GenerateCommand& command = *this;
  check_options_apply(command);
  if (command.prompt_file &&
      (!command.input.arguments.empty() || !command.input.prompts.empty() || command.input.file)) {
    throw UsageError("--prompt-file: give the prompt one way, not also as TEXT, -p or -f");
  }
  const std::vector<InputText> prompts =
      command.prompt_file
          ? read_texts({.arguments = {}, .prompts = {}, .file = command.prompt_file},
                       TextUnit::kPromptFile)
          : read_texts(command.input);
  if (command.attention_out && *command.attention_out == "-") {
    throw UsageError("--attention-out: give a file; standard output carries the generated text");
  }
  if (command.attention_out && prompts.size() > 1) {
    throw UsageError("--attention-out: only with one prompt");
  }
  // Opened before the work, so that an unwritable path fails at once.
  std::optional<OutputFile> attention_out;
  if (command.attention_out) attention_out.emplace(command.attention_out, "--attention-out");
  auto model = load_model(command.common.model_dir, command.common.dtype);
  require_decoder(*model, "generate");
  GenerateOptions options = with_generation_config(command, model->generation);
  // A prompt's ids: its text as encode() gives them; with --chat, the chat template's rendering
  // of it as a user message, tokenized as transformers tokenizes a rendered chat.
  std::optional<ChatTemplate> chat_template;
  nlohmann::ordered_json tools, variables;
  if (command.chat) {
    chat_template = load_chat_template(model->dir, command.chat_format);
    tools = chat_tools(command.chat_format);
    variables = chat_variables(command.chat_format);
    options = with_end_of_turn(*model, options);
  }
  const auto encode = [&](const std::string& text) {
    if (!chat_template) return model->tokenizer->encode(text).ids;
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (command.system) messages.push_back({{"role", "system"}, {"content", *command.system}});
    messages.push_back({{"role", "user"}, {"content", text}});
    const std::string rendered = chat_template->render(messages, true, tools, variables);
    spdlog::debug("chat prompt: {}", rendered);
    return model->tokenizer->encode_plain(rendered);
  };
  const bool color = command.color && ::isatty(STDOUT_FILENO) && !command.common.output;

  // From here on, Ctrl-C ends the prompt being generated cleanly and skips the rest.
  catch_interrupts();
  bool first = true;
  const int status = for_each_text(prompts, [&](const InputText& prompt) {
    if (interrupt_requested()) return;
    const std::vector<int> ids = prompt_ids(command, *model, encode(prompt.text), prompt, options);
    // Text output: a blank line between one prompt's text and the next prompt.
    if (!first && !command.common.json) write_stdout("\n");
    first = false;
    if (command.beam.beams > 1) {
      run_beam_search(command, *model, prompt, ids, options);
    } else {
      run_sampling(command, *model, prompt, ids, options, attention_out ? &*attention_out : nullptr,
                   color);
    }
  });
  return interrupt_requested() ? kInterruptedStatus : status;
}

std::unique_ptr<Command> make_generate_command() { return std::make_unique<GenerateCommand>(); }

}  // namespace attn
