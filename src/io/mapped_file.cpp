#include "src/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "src/base/error.h"

namespace attn {

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
  const std::string file = path.string();
  // Without O_NONBLOCK, opening a FIFO that has no writer would wait forever.
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw Error(file + ": cannot open file (" + std::strerror(errno) + ")");
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    const bool is_folder = S_ISDIR(info.st_mode);
    ::close(fd);
    throw Error(file + (is_folder ? ": is a folder, not a file" : ": not a regular file"));
  }
  size_ = static_cast<std::size_t>(info.st_size);
  if (size_ == 0) {  // mmap refuses a length of 0; an empty file is simply no bytes
    ::close(fd);
    return;
  }
  void* mapping = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (mapping == MAP_FAILED) throw Error(file + ": cannot memory-map file");
  data_ = static_cast<const std::byte*>(mapping);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

bool MappedFile::contains(const void* data, std::size_t bytes) const {
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const auto mapping_begin = reinterpret_cast<uintptr_t>(data_);
  return data_ && begin >= mapping_begin && begin - mapping_begin <= size_ &&
         bytes <= size_ - (begin - mapping_begin);
}

void MappedFile::release(const void* data, std::size_t bytes) const {
  if (!contains(data, bytes)) return;  // a copy, not part of the mapping
  const auto begin = reinterpret_cast<uintptr_t>(data), end = begin + bytes;
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (first < last) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace attn
