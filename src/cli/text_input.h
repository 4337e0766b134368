#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

// Declared, not included: CLI11's header costs seconds of compile time in every file that
// includes this one, and only the files that build the parser need more than the name.
namespace CLI {
class App;
}

// How every command that reads text gets it (README: "Giving text and getting results"):
//  - positional arguments, one text each;
//  - -p/--prompt TEXT, repeatable, one text each;
//  - -f/--file PATH, one text per line ("-": standard input);
//  - otherwise standard input, one text per line (on a terminal, after a one-line hint).
// Lines lose their "\n" or "\r\n", and the input its leading UTF-8 byte order mark.
namespace attn {

struct TextSources {
  std::vector<std::string> arguments;
  std::vector<std::string> prompts;
  std::optional<std::filesystem::path> file;
};

// One text and where it came from; every error about it names the source.
struct InputText {
  std::string text;
  std::string
      source;    // "argument 2", "--prompt", "--file in.txt: line 3", "standard input: line 3"
  int line = 0;  // its line in a file or standard input; 0 for an argument or --prompt

  [[noreturn]] void fail(const std::string& problem) const;
};

// What a file or standard input holds: a text per line, or one text.
enum class TextUnit {
  kLine,
  kCorpus,      // one text, every byte of it (perplexity's corpus)
  kPromptFile,  // one text less one final newline, as llama.cpp reads a prompt file
};

// Adds TEXT..., -p/--prompt and -f/--file to `command`. `texts` says what the texts are
// ("texts to embed").
void add_text_options(CLI::App& command, TextSources& sources, const std::string& texts);

// Takes the positional texts out of a command's arguments (those after its name, in order),
// leaving the options and their values: CLI11 would read an argument in brackets ("[MASK]",
// "[a,b]") as a list and split it, and an option that takes several values would swallow the
// texts after it. A text is every argument that is neither an option nor the value after one
// (each option takes one value; repeat it for more), and every argument after "--". Returned as
// typed. For a command without texts (add_text_options), nothing is taken.
std::vector<std::string> take_text_arguments(const CLI::App& command,
                                             std::vector<std::string>& arguments);

// The texts, in the order given. Arguments and --prompt texts must be UTF-8 and not empty (exit
// status 1 otherwise). Lines are returned as they are, blank ones included, for the command to
// check one by one, but an input with no text at all is an error. Giving texts two ways
// (arguments or --prompt, and --file) is a usage error.
std::vector<InputText> read_texts(const TextSources& sources, TextUnit unit = TextUnit::kLine);

// Whether a line holds nothing but spaces and tabs.
bool is_blank(std::string_view text);

// Whether `text` is a blank line of a file or standard input, which every command skips (a blank
// text given as an argument or with -p is run, as Hugging Face runs it: "[CLS] [SEP]").
inline bool is_blank_line(const InputText& text) { return text.line > 0 && is_blank(text.text); }

// Runs `work` on each text. A text that fails (an attn::Error: not UTF-8, too long, no mask...)
// is reported on stderr as one line naming its source, and the others still run; a usage error
// or an error writing the results ends the command. Returns the exit status: 1 if any text failed,
// else 0.
int for_each_text(const std::vector<InputText>& texts,
                  const std::function<void(const InputText&)>& work);

}  // namespace attn
