#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
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

// The texts, in the order given. Arguments and --prompt texts must be UTF-8 (exit status 1
// otherwise); each is run as typed, an empty or blank one included, as Hugging Face runs it. Lines
// are returned as they are, blank ones included, for the command to check one by one, but an input
// with no text at all is an error. Giving texts two ways (arguments or --prompt, and --file) is a
// usage error.
std::vector<InputText> read_texts(const TextSources& sources, TextUnit unit = TextUnit::kLine);

// Whether a line holds nothing but spaces and tabs.
bool is_blank(std::string_view text);

// Whether `text` is a blank line of a file or standard input, which is no text: every command
// skips it (a blank text given as an argument or with -p is run, as Hugging Face runs it: "[CLS]
// [SEP]").
inline bool is_blank_line(const InputText& text) { return text.line > 0 && is_blank(text.text); }

// Every command's words for a text that leaves it nothing to run (a decoder's "" without a
// beginning-of-text token): "SOURCE: the text gives no tokens".
inline constexpr const char* kNoTokens = "the text gives no tokens";

// How for_each_text goes through the texts.
struct TextLoop {
  // Line-for-line output (translate's text: output line N answers input line N): blank lines are
  // handed to `work` too, to print an empty line, and a text that fails prints its error line
  // on standard output as well, in its place.
  bool line_for_line = false;
};

// Runs `work` on each text that is valid UTF-8 and not a blank line. A text that fails (an
// attn::Error: not UTF-8, too long, no mask...) is reported on stderr as one line naming its
// source, and the others still run; a usage error or an error writing the results ends the
// command. Returns the exit status: 1 if any text failed, else 0.
int for_each_text(const std::vector<InputText>& texts,
                  const std::function<void(const InputText&)>& work, TextLoop loop = {});

// What `encode` made of each text that for_each_text ran, in order, for a command that runs
// them packed into batches.
template <class Encoded>
struct EncodedTexts {
  std::vector<const InputText*> sources;
  std::vector<Encoded> items;  // parallel to sources
  int status = 0;              // 1 if a text failed (reported on stderr)
};

template <class Encoded>
EncodedTexts<Encoded> encode_each(const std::vector<InputText>& texts,
                                  const std::function<Encoded(const InputText&)>& encode) {
  EncodedTexts<Encoded> encoded;
  encoded.status = for_each_text(texts, [&](const InputText& text) {
    encoded.items.push_back(encode(text));
    encoded.sources.push_back(&text);
  });
  return encoded;
}

// Every command's warning for a text that --truncate cut: "SOURCE: N tokens cut off by
// --truncate".
void warn_truncated(const InputText& text, long dropped_tokens);

// The start of a text's JSON object, as every command writes it: {"line": N} for a line of a file
// or standard input, then {"text": ...}.
nlohmann::ordered_json text_json(const InputText& text);

}  // namespace attn
