#include "src/cli/line_editor.h"

#include <editline/readline.h>

#include <cstdlib>
#include <iostream>
#include <memory>

namespace attn {

LineEditor::LineEditor(bool terminal) : terminal_(terminal) {
  if (terminal_) using_history();
}

std::optional<std::string> LineEditor::read_line(const char* prompt) {
  if (!terminal_) {
    std::string line;
    if (!std::getline(std::cin, line)) return std::nullopt;
    if (line.ends_with('\r')) line.pop_back();
    return line;
  }
  const std::unique_ptr<char, decltype(&std::free)> line(readline(prompt), &std::free);
  if (!line) return std::nullopt;
  if (*line) add_history(line.get());
  return std::string(line.get());
}

std::optional<std::string> LineEditor::read(const char* prompt) {
  std::optional<std::string> text = read_line(prompt);
  while (text && text->ends_with('\\')) {
    text->back() = '\n';
    const std::optional<std::string> more = read_line("");
    if (!more) break;
    *text += *more;
  }
  return text;
}

}  // namespace attn
