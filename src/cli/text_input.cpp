#include "src/cli/text_input.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iterator>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/cli/commands.h"
#include "src/io/output_file.h"

namespace attn {

void InputText::fail(const std::string& problem) const { throw Error(source + ": " + problem); }

void add_text_options(CLI::App& command, TextSources& sources, const std::string& texts) {
  command.add_option("text", sources.arguments, texts + ", one per argument")->type_name("TEXT");
  // One value per -p, taken as typed (a value in brackets is not a list).
  command.add_option("-p,--prompt", sources.prompts, "a text (repeatable)")
      ->allow_extra_args(false)
      ->type_name("TEXT");
  command
      .add_option("-f,--file", sources.file,
                  "one text per line ('-': standard input; the default when no text is given)")
      ->type_name("FILE");
}

namespace {

// Whether CLI11 reads `argument` as an option: "-x..." or "--name[=value]" with a name of
// letters, digits, "_", "-" and "."; not "-" (standard input), "-1.5" (a number) or
// "-- George Kerr, ..." (a text).
bool is_option(std::string_view argument) {
  const auto is_name_start = [](char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
  };
  const auto is_name_char = [&](char c) {
    return is_name_start(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.';
  };
  if (argument.size() < 2 || argument[0] != '-') return false;
  if (argument[1] != '-') return is_name_start(argument[1]);
  const std::string_view name = argument.substr(2, argument.find('=') - 2);
  return !name.empty() && is_name_start(name[0]) &&
         std::all_of(name.begin(), name.end(), is_name_char);
}

// Whether `argument` (an option) is followed by its value: an option of `command` that takes
// one, written without "=value".
bool takes_next_argument(const CLI::App& command, std::string_view argument) {
  if (argument.find('=') != std::string_view::npos) return false;
  const CLI::Option* option = command.get_option_no_throw(std::string(argument));
  return option != nullptr && option->get_expected_max() > 0;
}

}  // namespace

std::vector<std::string> take_text_arguments(const CLI::App& command,
                                             std::vector<std::string>& arguments) {
  if (command.get_option_no_throw("text") == nullptr) return {};
  std::vector<std::string> texts;
  std::vector<std::string> options;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    std::string& argument = arguments[i];
    if (argument == "--") {
      std::move(arguments.begin() + std::ptrdiff_t(i) + 1, arguments.end(),
                std::back_inserter(texts));
      break;
    }
    if (!is_option(argument)) {
      texts.push_back(std::move(argument));
      continue;
    }
    const bool value_follows = takes_next_argument(command, argument);
    options.push_back(std::move(argument));
    if (value_follows && i + 1 < arguments.size()) options.push_back(std::move(arguments[++i]));
  }
  arguments = std::move(options);
  return texts;
}

bool is_blank(std::string_view text) {
  return text.find_first_not_of(" \t") == std::string_view::npos;
}

namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

std::vector<InputText> given_texts(const TextSources& sources) {
  std::vector<InputText> texts;
  const bool numbered = sources.arguments.size() + sources.prompts.size() > 1;
  for (std::size_t i = 0; i < sources.arguments.size(); ++i) {
    texts.push_back({sources.arguments[i],
                     numbered ? "argument " + std::to_string(i + 1) : std::string("argument"), 0});
  }
  for (std::size_t i = 0; i < sources.prompts.size(); ++i) {
    texts.push_back(
        {sources.prompts[i],
         sources.prompts.size() > 1 ? "--prompt " + std::to_string(i + 1) : std::string("--prompt"),
         0});
  }
  for (const InputText& text : texts) require_utf8(text.text, text.source);
  return texts;
}

// A terminal gives no end-of-input on its own: say what attn waits for instead of hanging
// silently.
void hint_if_terminal(const std::filesystem::path& path, TextUnit unit) {
  if (path != "-" || !::isatty(STDIN_FILENO)) return;
  std::fputs(unit == TextUnit::kLine
                 ? "attn: reading the texts from the terminal, one per line; end with Ctrl-D "
                   "(or give TEXT, -p or -f)\n"
                 : "attn: reading the text from the terminal; end with Ctrl-D\n",
             stderr);
}

}  // namespace

std::vector<InputText> read_texts(const TextSources& sources, TextUnit unit) {
  const bool given = !sources.arguments.empty() || !sources.prompts.empty();
  if (given && sources.file) {
    throw UsageError("--file: give the texts one way, as arguments and -p or with --file");
  }
  if (given) return given_texts(sources);

  const std::filesystem::path path = sources.file.value_or("-");
  // generate's --prompt-file reads the file its own option names.
  const std::string option = unit == TextUnit::kPromptFile ? "--prompt-file" : "--file";
  const std::string source = path == "-" ? "standard input" : option + " " + path.string();
  hint_if_terminal(path, unit);
  std::string contents = read_input_text(path, option, kMaxInputTextBytes);
  if (contents.starts_with(kByteOrderMark)) contents.erase(0, kByteOrderMark.size());
  if (unit == TextUnit::kPromptFile && contents.ends_with('\n')) {
    contents.pop_back();
    if (contents.ends_with('\r')) contents.pop_back();
  }
  if (unit != TextUnit::kLine) {
    InputText text{std::move(contents), source, 0};
    require_utf8(text.text, text.source);
    // Only blank lines are no text either, as for an input read a line at a time.
    if (text.text.find_first_not_of(" \t\r\n") == std::string::npos) {
      text.fail(text.text.empty() ? "no text" : "no text (only blank lines)");
    }
    return {std::move(text)};
  }
  std::vector<InputText> texts;
  bool any_text = false;
  for (std::string& line : split_lines(contents)) {
    any_text = any_text || !is_blank(line);
    const int number = int(texts.size()) + 1;
    texts.push_back({std::move(line), source + ": line " + std::to_string(number), number});
  }
  if (!any_text) throw Error(source + ": no text" + (texts.empty() ? "" : " (only blank lines)"));
  return texts;
}

int for_each_text(const std::vector<InputText>& texts,
                  const std::function<void(const InputText&)>& work, TextLoop loop) {
  int status = 0;
  for (const InputText& text : texts) {
    if (is_blank_line(text) && !loop.line_for_line) continue;
    try {
      require_utf8(text.text, text.source);
      work(text);
    } catch (const UsageError&) {
      throw;
    } catch (const OutputError&) {
      throw;
    } catch (const Error& e) {
      print_error(e.what());
      if (loop.line_for_line) write_stdout(error_line(e.what()));
      status = 1;
    }
  }
  return status;
}

void warn_truncated(const InputText& text, long dropped_tokens) {
  if (dropped_tokens > 0) {
    spdlog::warn("{}: {} cut off by --truncate", text.source, plural(dropped_tokens, "token"));
  }
}

nlohmann::ordered_json text_json(const InputText& text) {
  nlohmann::ordered_json out;
  if (text.line > 0) out["line"] = text.line;
  out["text"] = text.text;
  return out;
}

}  // namespace attn
