#pragma once

// Helpers for tests that run the attn binary: a scratch folder, a runner that captures stdout,
// stderr and the exit status, and a snapshot of a folder to prove that a run changed nothing.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
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

#include "tests/golden.h"  // read_file

namespace attn::test {

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
  bool timed_out = false;  // still running at the time limit, and killed
  double seconds = 0;      // wall-clock time
  double peak_rss_mb = 0;  // largest resident set of the program
  std::string out;
  std::string err;
};

// The lines of a program's output, without their "\n".
inline std::vector<std::string> split_lines_of(const std::string& text) {
  std::vector<std::string> lines;
  for (std::size_t begin = 0, end; (end = text.find('\n', begin)) != std::string::npos;
       begin = end + 1) {
    lines.push_back(text.substr(begin, end - begin));
  }
  return lines;
}

inline std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Every program a test runs is killed after this long (or $ATTN_TEST_TIME_LIMIT seconds): a
// hang fails one test, not the suite.
inline double run_time_limit_seconds() {
  const char* limit = std::getenv("ATTN_TEST_TIME_LIMIT");
  return limit && *limit ? std::atof(limit) : 120;
}

// Runs `program args...` with stdin from `stdin_path` (default /dev/null, so that a command
// that falls back to reading stdin cannot hang the test) and captures its output, exit status
// or signal, time and peak memory.
inline CommandResult run_program(const std::filesystem::path& program,
                                 const std::vector<std::string>& args,
                                 const std::filesystem::path& stdin_path = "/dev/null",
                                 double time_limit_seconds = run_time_limit_seconds()) {
  TempDir capture;
  const std::string out_path = (capture / "out").string();
  const std::string err_path = (capture / "err").string();
  std::vector<std::string> argv_strings = {program.string()};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);

  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    // The child: only async-signal-safe calls until exec.
    const int in = ::open(stdin_path.c_str(), O_RDONLY);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0 || err < 0) ::_exit(127);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  CommandResult result;
  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, WNOHANG, &usage) == 0) {
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    if (elapsed.count() > time_limit_seconds && !result.timed_out) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
    }
    ::usleep(2000);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.peak_rss_mb = usage.ru_maxrss / 1024.0;  // KiB on Linux
  result.signaled = WIFSIGNALED(status) && !result.timed_out;
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
  result.out = read_file(capture / "out");
  result.err = read_file(capture / "err");
  return result;
}

// The attn binary under test: the one built with these tests, or $ATTN_TEST_BINARY (to run the
// same suite against another build, such as an older release).
inline std::filesystem::path attn_binary() {
  const char* other = std::getenv("ATTN_TEST_BINARY");
  return other && *other ? std::filesystem::path(other) : std::filesystem::path(ATTN_BINARY);
}

inline CommandResult run_attn(const std::vector<std::string>& args,
                              const std::filesystem::path& stdin_path = "/dev/null") {
  return run_program(attn_binary(), args, stdin_path);
}

inline std::string describe(const CommandResult& result) {
  std::ostringstream text;
  if (result.signaled) {
    text << "killed by signal " << result.signal;
  } else {
    text << "exit status " << result.exit_status;
  }
  if (result.timed_out) text << " (killed at the time limit)";
  text << ", " << result.seconds << " s, peak RSS " << result.peak_rss_mb << " MB";
  text << "\n--- stderr ---\n" << result.err << "--- stdout ---\n" << result.out.substr(0, 2000);
  return text.str();
}

// What identifies a file's state: inode, size, modification and status-change times (any write,
// rename-over or chmod changes one of them), and a hash of the contents of files up to 1 MB.
struct FileState {
  ino_t inode = 0;
  off_t size = 0;
  timespec modified{};
  timespec changed{};
  std::size_t content_hash = 0;
  bool operator==(const FileState& other) const {
    auto same = [](const timespec& a, const timespec& b) {
      return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
    };
    return inode == other.inode && size == other.size && same(modified, other.modified) &&
           same(changed, other.changed) && content_hash == other.content_hash;
  }
};
using FolderSnapshot = std::map<std::string, FileState>;

// Every entry under a folder (files, links, FIFOs, folders), without following links.
inline FolderSnapshot snapshot(const std::filesystem::path& dir) {
  constexpr off_t kHashedBytes = 1 << 20;
  FolderSnapshot files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    struct stat info {};
    if (::lstat(entry.path().c_str(), &info) != 0) continue;
    FileState state{.inode = info.st_ino,
                    .size = info.st_size,
                    .modified = info.st_mtim,
                    .changed = info.st_ctim,
                    .content_hash = 0};
    if (S_ISREG(info.st_mode) && info.st_size <= kHashedBytes) {
      state.content_hash = std::hash<std::string>()(read_file(entry.path()));
    }
    files[entry.path().lexically_relative(dir).string()] = state;
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
