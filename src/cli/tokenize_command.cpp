// attn tokenize: a tokenizer folder's ids and pieces for texts, and text for ids, as Hugging
// Face's tokenizer(text) / tokenizer.decode(ids) give them. Needs only the tokenizer files.

#include <spdlog/spdlog.h>

#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "src/base/error.h"
#include "src/base/unicode.h"
#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/io/output_file.h"
#include "src/tokenizer/tokenizer.h"

namespace attn {
namespace {

struct TokenizeCommand final : Command {
  TokenizeCommand()
      : Command("tokenize",
                "print token ids and pieces, or decode ids (needs only the tokenizer files)") {}
  void add_options(CLI::App& app) override;
  int run(const CLI::App& app) override;

  std::optional<std::string> pair;
  bool no_special = false;    // add_special_tokens=False
  bool decode = false;        // the inputs are ids, printed back as text
  bool skip_special = false;  // with decode: skip_special_tokens=True
  bool offsets = false;       // each token's [start, end) in characters of the text
  // --chat FILE.json: a conversation (a JSON list of messages) rendered by the chat template,
  // then tokenized with add_special_tokens=False, as transformers' apply_chat_template does.
  std::optional<std::filesystem::path> chat;
  bool add_generation_prompt = false;
  ChatFormatOptions chat_format;
};

using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The texts to work on (text_input.h), one per argument or line. With --decode, the arguments
// together are the ids of one text ("1 2 3", "1,2,3", or one id an argument; CLI11 hands
// "[1,2,3]" over as three arguments).
std::vector<InputText> read_inputs(const TokenizeCommand& command) {
  if (command.decode && !command.input.arguments.empty()) {
    if (!command.input.prompts.empty() || command.input.file) {
      throw UsageError("--decode: give the ids one way, as arguments, -p or --file");
    }
    std::string ids;
    for (const std::string& text : command.input.arguments) ids += text + " ";
    return {InputText{std::move(ids), "the arguments", 0}};
  }
  return read_texts(command.input);
}

// "1 2 3", "1,2,3" or "[1, 2, 3]": the ids to decode.
std::vector<int> parse_ids(const InputText& input, int vocab_size) {
  std::vector<int> ids;
  const std::string& text = input.text;
  std::size_t position = 0;
  while (position < text.size()) {
    const char c = text[position];
    if (c == ' ' || c == ',' || c == '\t' || c == '[' || c == ']') {
      ++position;
      continue;
    }
    int id = 0;
    const auto [end, error] =
        std::from_chars(text.data() + position, text.data() + text.size(), id);
    if (error != std::errc() || end == text.data() + position) {
      throw Error(input.source +
                  ": expected token ids (numbers separated by spaces or commas), "
                  "found \"" +
                  std::string(text.substr(position, 20)) + "\"");
    }
    if (id < 0 || id >= vocab_size) {
      throw Error(input.source + ": id " + std::to_string(id) + " is outside the vocabulary (" +
                  std::to_string(vocab_size) + " ids)");
    }
    ids.push_back(id);
    position = static_cast<std::size_t>(end - text.data());
  }
  if (ids.empty()) throw Error(input.source + ": no token ids");
  return ids;
}

int run_decode(const TokenizeCommand& command, const Tokenizer& tokenizer,
               const std::vector<InputText>& inputs) {
  // A text a line, so that a failed line's error line keeps the output in step with the input.
  const auto decode = [&](const InputText& input) {
    if (is_blank_line(input)) {  // as translate keeps a blank line
      write_stdout("\n");
      return;
    }
    const std::vector<int> ids = parse_ids(input, tokenizer.vocab_size());
    // GPT-2's decode keeps raw bytes for streaming; printed text is UTF-8, as Python's is.
    const std::string text = replace_invalid_utf8(tokenizer.decode(ids, command.skip_special));
    if (!command.common.json) {
      write_stdout(text + "\n");
      return;
    }
    nlohmann::ordered_json line;
    if (input.line > 0) line["line"] = input.line;
    line["ids"] = ids;
    line["text"] = text;
    write_stdout(json_text(line) + "\n");
  };
  return for_each_text(inputs, decode, {.line_for_line = !command.common.json});
}

// tokenize --chat FILE.json: the conversation as the chat template renders it, and the ids of
// that text as apply_chat_template(tokenize=True) gives them (add_special_tokens=False). Plain
// output is the rendered text alone, as it is; --json gives {"text", "ids"}.
int run_tokenize_chat(const TokenizeCommand& command) {
  if (!command.input.arguments.empty() || !command.input.prompts.empty() || command.input.file ||
      command.pair || command.decode || command.no_special) {
    throw UsageError(
        "--chat: the conversation is the input; not with TEXT, -p, -f, --pair, --decode or "
        "--no-special");
  }
  const nlohmann::ordered_json messages = read_conversation(*command.chat, "--chat");
  const ChatTemplate chat_template =
      load_chat_template(command.common.model_dir, command.chat_format);
  const std::string text =
      chat_template.render(messages, command.add_generation_prompt, chat_tools(command.chat_format),
                           chat_variables(command.chat_format));
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(command.common.model_dir);
  const std::vector<int> ids = tokenizer->encode_plain(text);
  write_stdout(command.common.json
                   ? json_text(nlohmann::ordered_json{{"text", text}, {"ids", ids}}) + "\n"
                   : text);
  return 0;
}

}  // namespace

void TokenizeCommand::add_options(CLI::App& app) {
  add_common_options(app, common, "tiny-gpt2-brown");
  add_output_options(
      app, common,
      "one JSON object per text: {\"ids\", \"tokens\"} (--decode: {\"ids\", \"text\"})");
  add_text_options(app, input,
                   "texts to tokenize (with --decode: token ids, \"1 2 3\" or \"1,2,3\")");
  app.add_option("--pair", pair, "second sentence of the one text (encoders)");
  app.add_flag("--no-special", no_special,
               "without the special tokens the tokenizer adds (add_special_tokens=False)");
  app.add_flag("--decode", decode,
               "the inputs are token ids (\"1 2 3\" or \"1,2,3\"): print their text");
  app.add_flag("--skip-special", skip_special,
               "with --decode: leave out special tokens (skip_special_tokens=True)");
  app.add_flag("--offsets", offsets,
               "each token's [start, end) in characters (code points) of the text, as "
               "Hugging Face's return_offsets_mapping; [0, 0) for added special tokens "
               "(--json: \"offsets\": [[start, end], ...])");
  CLI::Option* tokenize_chat =
      app.add_option("--chat", chat,
                     "a conversation (a JSON list of messages; '-': standard input): print it "
                     "as the model's chat template renders it (--json: {\"text\", \"ids\"})")
          ->type_name("FILE.json");
  app.add_flag("--add-generation-prompt", add_generation_prompt,
               "with --chat: end with the start of the assistant's turn")
      ->needs(tokenize_chat);
  for (CLI::Option* option : add_chat_format_options(app, chat_format)) {
    option->needs(tokenize_chat);
  }
  add_examples(app, {"attn tokenize \"The jury said.\"",
                     "attn tokenize -m bert-base-uncased --offsets --json \"Hello, world!\"",
                     "attn tokenize --decode \"464 9002\""});
}

int TokenizeCommand::run([[maybe_unused]] const CLI::App& app) {
  const TokenizeCommand& command = *this;
  if (command.chat) return run_tokenize_chat(command);
  if (command.skip_special && !command.decode) {
    throw UsageError("--skip-special: only with --decode");
  }
  if (command.decode && (command.pair || command.no_special)) {
    throw UsageError(std::string(command.pair ? "--pair" : "--no-special") +
                     ": not with --decode, which reads ids");
  }
  if (command.pair && command.no_special) {
    throw UsageError("--pair and --no-special: a pair is joined by the special tokens");
  }
  if (command.offsets && (command.decode || command.pair || command.no_special)) {
    throw UsageError(std::string("--offsets: not with ") +
                     (command.decode ? "--decode"
                      : command.pair ? "--pair"
                                     : "--no-special") +
                     "; offsets are given for one text with its special tokens");
  }
  const std::vector<InputText> inputs = read_inputs(command);
  if (command.pair) {
    if (inputs.size() != 1) throw UsageError("--pair: only with one text");
    require_utf8(*command.pair, "--pair");
  }
  const auto load_start = Clock::now();
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(command.common.model_dir);
  const double load_ms = milliseconds_since(load_start);
  if (command.decode) return run_decode(command, *tokenizer, inputs);
  const TokenOffsets* offsets = command.offsets ? &tokenizer->offsets() : nullptr;

  const auto encode_start = Clock::now();
  const auto encoded = encode_each<Encoding>(inputs, [&](const InputText& input) {
    if (offsets) return offsets->encode_with_offsets(input.text);
    if (command.no_special) {
      Encoding encoding;
      encoding.ids = tokenizer->encode_plain(input.text);
      encoding.type_ids.assign(encoding.ids.size(), 0);
      return encoding;
    }
    return tokenizer->encode(input.text, command.pair);
  });
  const double encode_ms = milliseconds_since(encode_start);

  const bool several = inputs.size() > 1;
  std::string out;
  std::size_t token_count = 0;
  for (std::size_t n = 0; n < encoded.items.size(); ++n) {
    const Encoding& encoding = encoded.items[n];
    token_count += encoding.ids.size();
    std::vector<std::string> tokens;
    for (int id : encoding.ids) tokens.push_back(replace_invalid_utf8(tokenizer->token_string(id)));
    if (command.common.json) {
      nlohmann::ordered_json line;  // no "text": a line of tokens for each line of text
      if (encoded.sources[n]->line > 0) line["line"] = encoded.sources[n]->line;
      line["ids"] = encoding.ids;
      line["tokens"] = tokens;
      if (command.pair) line["type_ids"] = encoding.type_ids;
      if (offsets) {
        nlohmann::ordered_json& list = line["offsets"] = nlohmann::ordered_json::array();
        for (const CharSpan& span : encoding.offsets) list.push_back({span.start, span.end});
      }
      out += json_text(line) + "\n";
      continue;
    }
    if (several && n > 0) out += "\n";
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      out += std::to_string(encoding.ids[i]) + "\t";
      if (offsets) {
        out += fmt::format("[{}, {})\t", encoding.offsets[i].start, encoding.offsets[i].end);
      }
      out += tokens[i] + "\n";
    }
  }
  write_stdout(out);
  flush_stdout();
  spdlog::debug("load {:.1f} ms | encode {}, {} tokens, {:.1f} ms", load_ms,
                plural(long(encoded.items.size()), "text"), token_count, encode_ms);
  return encoded.status;
}

std::unique_ptr<Command> make_tokenize_command() { return std::make_unique<TokenizeCommand>(); }

}  // namespace attn
