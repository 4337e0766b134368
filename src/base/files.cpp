#include "src/base/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "src/base/error.h"

namespace attn {
namespace {

std::string megabytes(std::size_t bytes) { return std::to_string(bytes >> 20) + " MB"; }

// Closes the descriptor on every path out of the readers below.
struct FileDescriptor {
  int fd;
  ~FileDescriptor() {
    if (fd > 2) ::close(fd);
  }
};

// Reads until end of file, failing once more than max_bytes arrive (so /dev/zero or an endless
// pipe stops at the cap instead of filling memory).
std::string read_all(int fd, std::size_t max_bytes, const std::string& name) {
  std::string contents;
  char block[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, block, sizeof block);
    if (n == 0) return contents;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(name + ": cannot read (" + std::strerror(errno) + ")");
    }
    if (contents.size() + std::size_t(n) > max_bytes) {
      throw Error(name + ": larger than the " + megabytes(max_bytes) + " limit for this file");
    }
    contents.append(block, std::size_t(n));
  }
}

// Opens without blocking (opening a FIFO that has no writer would wait forever) and returns
// the descriptor and what it is.
FileDescriptor open_for_reading(const std::filesystem::path& path, const std::string& name,
                                struct stat& info) {
  FileDescriptor file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (file.fd < 0) throw Error(name + ": cannot open file (" + std::strerror(errno) + ")");
  if (::fstat(file.fd, &info) != 0) {
    throw Error(name + ": cannot read (" + std::strerror(errno) + ")");
  }
  if (S_ISDIR(info.st_mode)) throw Error(name + ": is a folder, not a file");
  return file;
}

}  // namespace

std::string read_model_file(const std::filesystem::path& path, std::size_t max_bytes) {
  const std::string name = path.string();
  struct stat info {};
  FileDescriptor file = open_for_reading(path, name, info);
  if (!S_ISREG(info.st_mode)) throw Error(name + ": not a regular file");
  if (std::size_t(info.st_size) > max_bytes) {
    throw Error(name + ": " + std::to_string(info.st_size) + " bytes, larger than the " +
                megabytes(max_bytes) + " limit for this file");
  }
  return read_all(file.fd, max_bytes, name);
}

std::string read_input_text(const std::filesystem::path& path, const std::string& what,
                            std::size_t max_bytes) {
  if (path == "-") return read_all(STDIN_FILENO, max_bytes, what + " (standard input)");
  const std::string name = what + " " + path.string();
  struct stat info {};
  FileDescriptor file = open_for_reading(path, name, info);
  if (!S_ISREG(info.st_mode) && !S_ISFIFO(info.st_mode)) {
    throw Error(name + ": not a regular file or pipe");
  }
  // Blocking reads from here on: a pipe's writer may be slower than we are. (A FIFO that no
  // process has open for writing reads as empty at once.)
  ::fcntl(file.fd, F_SETFL, ::fcntl(file.fd, F_GETFL) & ~O_NONBLOCK);
  return read_all(file.fd, max_bytes, name);
}

bool entry_exists(const std::filesystem::path& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::symlink_status(path, error);
  if (error) {
    // Any failure other than "not there" (a name too long, a loop, no permission) leaves it to
    // the reader to say what is wrong.
    return error != std::errc::no_such_file_or_directory && error != std::errc::not_a_directory;
  }
  return std::filesystem::exists(status);
}

}  // namespace attn
