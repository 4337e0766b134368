#pragma once

#include <cstdio>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "src/base/error.h"

namespace attn {

// Standard output, checked. Every command writes its results through these, so that a full disk
// or device (`> /dev/full`) is an error, "stdout: No space left on device", instead of a silent
// loss. SIGPIPE is ignored (main does that), so a pipe whose reader has gone (`| head -c 50`)
// shows up as EPIPE here, and is reported by throwing StdoutClosed.
void write_stdout(std::string_view bytes);
void flush_stdout();

class OutputFile;
// From now on, write_stdout writes to `file` (a command's -o) and flush_stdout leaves the
// flushing to its commit(); null, or a `file` that is standard output ("-o /dev/stdout"):
// standard output again.
void send_results_to(OutputFile* file);

// The results cannot be written (a full disk, an unwritable -o path): an error of the whole
// command, never of the one input whose results were being written.
class OutputError : public Error {
 public:
  using Error::Error;
};

// Standard output is a pipe whose reader has closed it. Not an attn::Error, so that no handler
// for bad input catches it: main ends quietly with status 141 (128 + SIGPIPE, what a shell
// reports for a tool that a closed pipe stopped).
class StdoutClosed : public std::exception {
 public:
  const char* what() const noexcept override { return "stdout: the reading end is closed"; }
};

// Removes the temporary file an OutputFile is writing, if any. Async-signal-safe: for a signal
// handler that ends attn (those OutputFile installs for SIGINT, SIGTERM and SIGHUP, and the
// second Ctrl-C's of src/cli/interrupt.h).
void remove_temporary_output() noexcept;

// Where a writer's text goes: an output file (OutputFile), or a string (StringSink).
class TextSink {
 public:
  virtual void write(std::string_view bytes) = 0;
  void write(char c) { write(std::string_view(&c, 1)); }

 protected:
  ~TextSink() = default;
};

// Text kept in memory: a document that goes inside another (the heads page holds an attention
// document).
class StringSink final : public TextSink {
 public:
  using TextSink::write;
  void write(std::string_view bytes) override { text.append(bytes); }
  std::string text;
};

// Where an output path's bytes go.
//  - Empty or "-": standard output (write_stdout).
//  - A regular file, a path that does not exist yet, or a symlink leading to either: written
//    all-or-nothing. The bytes go to a hidden temporary file next to the real target (the end of
//    the symlink chain), renamed over it by commit(); the link stays a link. An error, an
//    exception before commit, or SIGINT/SIGTERM/SIGHUP removes the temporary file, so neither a
//    partial output nor a ".name.XXXXXX" file is ever left behind. (While attn generates, the
//    first Ctrl-C only ends generation early, and the file is committed with what was
//    generated: src/cli/interrupt.h.)
//  - Anything else (/dev/null, a FIFO, a terminal, /dev/stdout, /dev/fd/N): opened and written
//    straight through; renaming over it would replace a device or a pipe with a regular file.
class OutputFile final : public TextSink {
 public:
  // `option` names the option in errors ("-o"). Opening (or creating the temporary file) fails
  // at once for an unwritable path, before any work is done.
  OutputFile(const std::optional<std::filesystem::path>& path, std::string option);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  using TextSink::write;
  void write(std::string_view bytes) override;
  // Whether the bytes go to standard output (no path, "-", or a path that is standard output).
  bool is_standard_output() const { return path_.empty(); }
  // Flushes, closes and (for a temporary file) renames it onto the target.
  void commit();

 private:
  void open_straight_through(int fd);
  // `existing_mode`: the permissions of the regular file being replaced, kept for the new one.
  void create_temporary(const std::filesystem::path& final_target,
                        std::optional<unsigned> existing_mode);
  void flush_buffer();
  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void fail_write(int error) const;

  std::string option_;
  std::filesystem::path path_;       // as given; empty for standard output
  std::filesystem::path target_;     // what the temporary replaces; empty when none
  std::filesystem::path temporary_;  // empty for standard output and straight-through files
  std::FILE* file_ = nullptr;        // null for standard output
  std::string buffer_;  // written out in large blocks: many small fwrite calls cost more
  bool committed_ = false;
};

}  // namespace attn
