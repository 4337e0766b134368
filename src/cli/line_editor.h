#pragma once

// The lines a person types to attn chat. On a terminal, libedit's readline: editing, and the
// up and down arrows through what was typed in this session (libedit is BSD-licensed; GNU
// readline, which is GPL-3, is not used). Elsewhere (a pipe, a file), plain lines.

#include <optional>
#include <string>

namespace attn {

class LineEditor {
 public:
  // `terminal`: standard input is a terminal (edit lines and show the prompt).
  explicit LineEditor(bool terminal);

  // The next input, without its newline: a line, or several when each but the last ends with
  // a backslash (which is dropped). Nullopt at the end of input (Ctrl-D).
  std::optional<std::string> read(const char* prompt);

 private:
  std::optional<std::string> read_line(const char* prompt);

  bool terminal_;
};

}  // namespace attn
