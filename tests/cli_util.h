#pragma once

// Helpers for tests that run the attn binary: a scratch folder, a runner that captures stdout,
// stderr and the exit status, and a snapshot of a folder to prove that a run changed nothing.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace attn::test {

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

inline void write_file(const std::filesystem::path& path, std::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), std::streamsize(contents.size()));
  if (!out) throw std::runtime_error(path.string() + ": cannot write");
}

// A fresh folder under the system temp directory, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "attn-test-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

struct CommandResult {
  bool signaled = false;  // killed by a signal (a crash or an abort)
  int signal = 0;
  int exit_status = -1;
  std::string out;
  std::string err;
};

inline std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Runs `program args...` with stdin from `stdin_path` (default /dev/null, so that a command
// that falls back to reading stdin cannot hang the test) and captures its output.
inline CommandResult run_program(const std::filesystem::path& program,
                                 const std::vector<std::string>& args,
                                 const std::filesystem::path& stdin_path = "/dev/null") {
  TempDir capture;
  // `exec` replaces the shell, so the wait status is the program's own and a crash shows up
  // as WIFSIGNALED rather than as the shell's exit status 128 + signal.
  // Built with += only: GCC 12 gives a false -Wrestrict on `"literal" + std::string&&` here.
  std::string command = "exec ";
  command += shell_quote(program.string());
  for (const auto& arg : args) {
    command += ' ';
    command += shell_quote(arg);
  }
  command += " <";
  command += shell_quote(stdin_path.string());
  command += " >";
  command += shell_quote((capture / "out").string());
  command += " 2>";
  command += shell_quote((capture / "err").string());
  const int status = std::system(command.c_str());
  CommandResult result;
  if (status == -1) throw std::runtime_error("cannot run: " + command);
  result.signaled = WIFSIGNALED(status);
  if (result.signaled) result.signal = WTERMSIG(status);
  if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
  result.out = read_file(capture / "out");
  result.err = read_file(capture / "err");
  return result;
}

// The attn binary built with these tests.
inline CommandResult run_attn(const std::vector<std::string>& args,
                              const std::filesystem::path& stdin_path = "/dev/null") {
  return run_program(ATTN_BINARY, args, stdin_path);
}

inline std::string describe(const CommandResult& result) {
  std::ostringstream text;
  if (result.signaled) {
    text << "killed by signal " << result.signal;
  } else {
    text << "exit status " << result.exit_status;
  }
  text << "\n--- stderr ---\n" << result.err << "--- stdout ---\n" << result.out.substr(0, 2000);
  return text.str();
}

// What every failure of attn must look like: no crash, the given exit status, nothing on
// stdout, and exactly one line on stderr, "attn: error: ...", containing each of `expected`
// (the file or option it names, and the problem).
inline void expect_one_line_error(const CommandResult& result, int exit_status,
                                  std::initializer_list<std::string> expected) {
  ASSERT_FALSE(result.signaled) << describe(result);
  EXPECT_EQ(result.exit_status, exit_status) << describe(result);
  EXPECT_EQ(result.out, "") << describe(result);
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << describe(result);
  EXPECT_TRUE(result.err.ends_with("\n")) << describe(result);
  EXPECT_TRUE(result.err.starts_with("attn: error: ")) << describe(result);
  for (const auto& part : expected) {
    EXPECT_NE(result.err.find(part), std::string::npos) << "stderr lacks \"" << part << "\"\n"
                                                        << describe(result);
  }
}

// Size, modification time and a hash of the contents of every file under a folder.
struct FileState {
  std::uintmax_t size = 0;
  std::filesystem::file_time_type modified;
  std::size_t content_hash = 0;
  bool operator==(const FileState&) const = default;
};
using FolderSnapshot = std::map<std::string, FileState>;

inline FolderSnapshot snapshot(const std::filesystem::path& dir) {
  FolderSnapshot files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    files[std::filesystem::relative(entry.path(), dir).string()] = FileState{
        .size = entry.file_size(),
        .modified = entry.last_write_time(),
        .content_hash = std::hash<std::string>()(read_file(entry.path())),
    };
  }
  return files;
}

// Lists the files whose state differs between two snapshots (added, removed or changed).
inline std::vector<std::string> changed_files(const FolderSnapshot& before,
                                              const FolderSnapshot& after) {
  std::vector<std::string> changed;
  for (const auto& [name, state] : before) {
    auto it = after.find(name);
    if (it == after.end() || !(it->second == state)) changed.push_back(name);
  }
  for (const auto& [name, state] : after) {
    if (!before.contains(name)) changed.push_back(name);
  }
  return changed;
}

}  // namespace attn::test
