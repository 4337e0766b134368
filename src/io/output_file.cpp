#include "src/io/output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "src/base/error.h"

namespace attn {
namespace {

constexpr std::size_t kBufferBytes = 1 << 20;

}  // namespace

OutputFile::OutputFile(const std::optional<std::filesystem::path>& path, std::string option)
    : option_(std::move(option)) {
  buffer_.reserve(kBufferBytes);
  if (!path || path->empty() || *path == "-") {
    file_ = stdout;
    return;
  }
  target_ = *path;
  if (std::filesystem::is_directory(target_)) fail("is a directory");
  const std::filesystem::path parent =
      target_.has_parent_path() ? target_.parent_path() : std::filesystem::path(".");
  // A hidden name in the same folder, so that the final rename stays within one file system.
  std::string hidden_name = target_.filename().string();
  hidden_name.insert(0, 1, '.');
  hidden_name.append(".XXXXXX");
  std::string name = (parent / hidden_name).string();
  const int fd = mkstemp(name.data());
  if (fd < 0) fail("cannot create a file in " + parent.string() + ": " + std::strerror(errno));
  temporary_ = name;
  // mkstemp makes the file private (0600); give it the permissions a new file normally gets.
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  file_ = fdopen(fd, "wb");
  if (!file_) {
    close(fd);
    std::filesystem::remove(temporary_);
    fail(std::string("cannot open: ") + std::strerror(errno));
  }
}

OutputFile::~OutputFile() {
  if (committed_ || temporary_.empty()) return;
  std::fclose(file_);
  std::error_code ignored;
  std::filesystem::remove(temporary_, ignored);
}

void OutputFile::fail(const std::string& what) const {
  throw Error(option_ + " " + (target_.empty() ? "(standard output)" : target_.string()) + ": " +
              what);
}

void OutputFile::write(std::string_view bytes) {
  buffer_.append(bytes);
  if (buffer_.size() >= kBufferBytes) flush_buffer();
}

void OutputFile::flush_buffer() {
  if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
    fail(std::string("cannot write: ") + std::strerror(errno));
  }
  buffer_.clear();
}

void OutputFile::commit() {
  flush_buffer();
  if (std::fflush(file_) != 0) fail(std::string("cannot write: ") + std::strerror(errno));
  if (temporary_.empty()) {
    committed_ = true;
    return;
  }
  const int closed = std::fclose(file_);
  file_ = nullptr;
  committed_ = true;  // the stream is closed; only the temporary file is left to clean up
  std::error_code error;
  if (closed == 0) std::filesystem::rename(temporary_, target_, error);
  if (closed != 0 || error) {
    const std::string reason = closed != 0 ? std::strerror(errno) : error.message();
    std::filesystem::remove(temporary_, error);
    fail("cannot write: " + reason);
  }
}

}  // namespace attn
