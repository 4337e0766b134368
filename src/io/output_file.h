#pragma once

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace attn {

// A buffered output that is either standard output or a file written all-or-nothing: the bytes
// go to a temporary file next to the target, renamed over it by commit(). An error (or an
// exception before commit) removes the temporary file, so no partial output is ever left.
class OutputFile {
 public:
  // `path` empty or "-" means standard output; `option` names the option in errors ("-o").
  // Creating the temporary file fails at once for an unwritable path, before any work is done.
  OutputFile(const std::optional<std::filesystem::path>& path, std::string option);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view bytes);
  void write(char c) { write(std::string_view(&c, 1)); }
  // Flushes, closes and renames the temporary file onto the target.
  void commit();

 private:
  void flush_buffer();
  [[noreturn]] void fail(const std::string& what) const;

  std::string option_;
  std::filesystem::path target_;     // empty for standard output
  std::filesystem::path temporary_;  // empty for standard output
  std::FILE* file_ = nullptr;
  std::string buffer_;  // written out in large blocks: many small fwrite calls cost more
  bool committed_ = false;
};

}  // namespace attn
