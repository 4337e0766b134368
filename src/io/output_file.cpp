#include "src/io/output_file.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>

#include "src/base/error.h"

namespace attn {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kBufferBytes = 1 << 20;
// Symlinks followed before giving up, as the kernel does (ELOOP).
constexpr int kMaxSymlinkHops = 40;

std::string error_text(int error) { return std::strerror(error != 0 ? error : EIO); }

[[noreturn]] void fail_stdout(int error) {
  if (error == EPIPE) throw StdoutClosed();
  throw OutputError("stdout: " + error_text(error));
}

// ---- Removing the temporary file on Ctrl-C ----

// The temporary file being written, for the signal handler to remove. A handler may call only
// async-signal-safe functions (unlink, signal, raise), so the path lives in a static buffer;
// the flag is a lock-free atomic because the handler may run on any thread (a process-directed
// signal goes to whichever thread does not block it, often a worker of the thread pool).
// attn writes at most one output file at a time.
char g_temporary_path[PATH_MAX];
std::atomic<bool> g_has_temporary{false};
static_assert(std::atomic<bool>::is_always_lock_free);

constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void remove_temporary_and_reraise(int signal_number) {
  remove_temporary_output();
  // Die of the signal as if there were no handler, so the parent sees what stopped attn.
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

void install_cleanup_handlers() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  for (int signal_number : kCleanupSignals) {
    struct sigaction previous {};
    ::sigaction(signal_number, nullptr, &previous);
    // SIG_IGN: for example SIGHUP under nohup. Another handler: SIGINT's while attn generates
    // (src/cli/interrupt.cpp), which calls remove_temporary_output itself before it ends attn.
    if (previous.sa_handler != SIG_DFL) continue;
    struct sigaction action {};
    action.sa_handler = remove_temporary_and_reraise;
    sigemptyset(&action.sa_mask);
    ::sigaction(signal_number, &action, nullptr);
  }
}

// Creates a new file named `prefix` + 6 random characters (as mkstemp would), registering its name
// with the signal handler before the file exists: a signal in between finds nothing to remove,
// never a file it does not know about (which blocking signals cannot promise in a process with
// several threads). Returns the descriptor, or -1 with errno set.
int create_registered_temporary(const std::string& prefix, std::string& name) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  static std::mt19937_64 random(std::random_device{}());
  for (int attempt = 0; attempt < 100; ++attempt) {
    name = prefix;
    for (int i = 0; i < 6; ++i) name += kAlphabet[random() % (sizeof kAlphabet - 1)];
    std::memcpy(g_temporary_path, name.c_str(), name.size() + 1);
    g_has_temporary.store(true, std::memory_order_release);
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    const int error = errno;
    g_has_temporary.store(false, std::memory_order_release);
    errno = error;
    if (error != EEXIST) return -1;
  }
  errno = EEXIST;
  return -1;
}

// ---- What an output path is ----

// The descriptor a path names when it is one of the current process's own: /dev/stdout,
// /dev/stderr, /dev/fd/N, /proc/self/fd/N. Such a target is duplicated rather than opened, so
// that writes continue where the shell's redirection left off (opening /proc/self/fd/1 anew
// would start at offset 0 of a file opened with >>).
std::optional<int> own_descriptor(const fs::path& path) {
  const std::string name = path.string();
  if (name == "/dev/stdout") return 1;
  if (name == "/dev/stderr") return 2;
  for (std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (!name.starts_with(prefix) || name.size() == prefix.size()) continue;
    int fd = -1;
    const char* end = name.data() + name.size();
    const auto [stop, error] = std::from_chars(name.data() + prefix.size(), end, fd);
    if (error == std::errc() && stop == end) return fd;
  }
  return std::nullopt;
}

// Where a chain of symlinks ends: the first path that is not a symlink, with its lstat (absent
// when nothing is there yet). `through_proc` is set when a link leads into /proc or /dev/fd
// (a process's descriptors, which must be written straight through). `error` is an errno
// value when the chain cannot be followed.
struct SymlinkEnd {
  fs::path path;
  std::optional<struct stat> info;
  bool through_proc = false;
  int error = 0;
};

SymlinkEnd follow_symlinks(const fs::path& path) {
  SymlinkEnd end;
  end.path = path;
  for (int hops = 0;; ++hops) {
    struct stat info {};
    if (::lstat(end.path.c_str(), &info) != 0) {
      if (errno != ENOENT) end.error = errno;  // ENOENT: a new file, or a dangling link's target
      return end;
    }
    if (!S_ISLNK(info.st_mode)) {
      end.info = info;
      return end;
    }
    if (hops == kMaxSymlinkHops) {
      end.error = ELOOP;
      return end;
    }
    char link[PATH_MAX];
    const ssize_t length = ::readlink(end.path.c_str(), link, sizeof link - 1);
    if (length < 0) {
      end.error = errno;
      return end;
    }
    const fs::path next(std::string(link, std::size_t(length)));
    end.path = next.is_absolute() ? next : end.path.parent_path() / next;
    const std::string text = end.path.string();
    if (text.starts_with("/proc/") || text.starts_with("/dev/fd/")) {
      end.through_proc = true;
      return end;
    }
  }
}

// Where write_stdout sends the results instead of standard output (-o), or null.
OutputFile* results_file = nullptr;

}  // namespace

void send_results_to(OutputFile* file) {
  // An OutputFile on standard output writes through write_stdout: sending those bytes back to it
  // would lose them.
  results_file = file && !file->is_standard_output() ? file : nullptr;
}

void remove_temporary_output() noexcept {
  if (g_has_temporary.load(std::memory_order_acquire)) ::unlink(g_temporary_path);
}

void write_stdout(std::string_view bytes) {
  if (bytes.empty()) return;
  if (results_file) {
    results_file->write(bytes);
    return;
  }
  errno = 0;
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size()) fail_stdout(errno);
}

void flush_stdout() {
  if (results_file) return;  // written out whole by its commit()
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) fail_stdout(errno);
}

OutputFile::OutputFile(const std::optional<fs::path>& path, std::string option)
    : option_(std::move(option)) {
  buffer_.reserve(kBufferBytes);
  if (!path || path->empty() || *path == "-") return;
  path_ = *path;
  if (const std::optional<int> fd = own_descriptor(path_)) {
    if (*fd == STDOUT_FILENO) {
      path_.clear();  // the same as "-": checked standard output
      return;
    }
    const int copy = ::fcntl(*fd, F_DUPFD_CLOEXEC, 3);
    if (copy < 0) fail("cannot write: " + error_text(errno));
    open_straight_through(copy);
    return;
  }

  const SymlinkEnd end = follow_symlinks(path_);
  if (end.error == ENAMETOOLONG) {
    fail("the name is too long (at most " + std::to_string(NAME_MAX) +
         " bytes per file or folder name)");
  }
  if (end.error != 0) fail("cannot open: " + error_text(end.error));
  if (!end.through_proc && (!end.info || S_ISREG(end.info->st_mode))) {
    create_temporary(end.path,
                     end.info ? std::optional<unsigned>(end.info->st_mode & 0777) : std::nullopt);
    return;
  }
  if (end.info && S_ISDIR(end.info->st_mode)) fail("is a folder, not a file");
  // A device, a FIFO (which waits for its reader, as for any program writing to one), a socket,
  // or a process's descriptor.
  const int fd = ::open(path_.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) fail("cannot open: " + error_text(errno));
  open_straight_through(fd);
}

void OutputFile::open_straight_through(int fd) {
  file_ = ::fdopen(fd, "wb");
  if (!file_) {
    const int error = errno;
    ::close(fd);
    fail("cannot open: " + error_text(error));
  }
}

void OutputFile::create_temporary(const fs::path& final_target,
                                  std::optional<unsigned> existing_mode) {
  const fs::path parent =
      final_target.has_parent_path() ? final_target.parent_path() : fs::path(".");
  // A hidden name in the same folder, so that the final rename stays within one file system;
  // cut short when the target's own name leaves no room for the dot and the suffix.
  const std::string suffix = ".XXXXXX";
  // (Built with +=: GCC 12 gives a false -Wrestrict on `"literal" + std::string&&`.)
  std::string hidden_name = ".";
  hidden_name += final_target.filename().string();
  if (hidden_name.size() + suffix.size() > NAME_MAX) {
    hidden_name.resize(NAME_MAX - suffix.size());
  }
  const std::string prefix = (parent / (hidden_name + ".")).string();
  if (prefix.size() + suffix.size() >= sizeof g_temporary_path) {
    fail("cannot open: " + error_text(ENAMETOOLONG));
  }
  if (g_has_temporary) throw std::logic_error("two output files written at the same time");
  install_cleanup_handlers();
  std::string name;
  const int fd = create_registered_temporary(prefix, name);
  if (fd < 0) {
    fail("cannot create a file in " + parent.string() + ": " + error_text(errno));
  }
  temporary_ = name;
  target_ = final_target;
  // It was created private (0600). Give it the permissions of the file it replaces,
  // or those a new file normally gets.
  mode_t mode = 0;
  if (existing_mode) {
    mode = mode_t(*existing_mode);
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  ::fchmod(fd, mode);
  file_ = ::fdopen(fd, "wb");
  if (!file_) {
    const int error = errno;
    ::close(fd);
    ::unlink(name.c_str());
    g_has_temporary = false;
    fail("cannot open: " + error_text(error));
  }
}

OutputFile::~OutputFile() {
  if (committed_) return;
  if (file_) std::fclose(file_);
  if (!temporary_.empty()) {
    ::unlink(temporary_.c_str());
    g_has_temporary = false;
  }
}

void OutputFile::fail(const std::string& what) const {
  throw OutputError(option_ + " " + path_.string() + ": " + what);
}

void OutputFile::fail_write(int error) const {
  if (!file_) fail_stdout(error);
  throw OutputError(option_ + " " + path_.string() + ": cannot write: " + error_text(error));
}

void OutputFile::write(std::string_view bytes) {
  buffer_.append(bytes);
  if (buffer_.size() >= kBufferBytes) flush_buffer();
}

void OutputFile::flush_buffer() {
  if (!file_) {
    write_stdout(buffer_);
  } else {
    errno = 0;
    if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
      fail_write(errno);
    }
  }
  buffer_.clear();
}

void OutputFile::commit() {
  flush_buffer();
  if (!file_) {
    flush_stdout();
    committed_ = true;
    return;
  }
  errno = 0;
  if (std::fflush(file_) != 0) fail_write(errno);
  // Closed here, so that a failed close (a full disk on some file systems) is seen.
  const int closed = std::fclose(file_);
  const int close_error = errno;
  file_ = nullptr;
  if (closed != 0) fail("cannot write: " + error_text(close_error));
  if (!temporary_.empty()) {
    std::error_code error;
    fs::rename(temporary_, target_, error);
    if (error) fail("cannot write: " + error.message());
    g_has_temporary = false;  // after the rename: until then, a signal must still remove it
  }
  committed_ = true;
}

}  // namespace attn
