#pragma once

#include <cstddef>
#include <filesystem>
#include <span>

namespace attn {

// A regular file mapped read-only into memory, the whole of it. Opened without blocking, so a
// FIFO in place of a weight file is refused instead of hanging attn. Errors name the path:
// "<path>: cannot open file (No such file or directory)", "<path>: is a folder, not a file",
// "<path>: not a regular file", "<path>: cannot memory-map file".
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  bool contains(const void* data, std::size_t bytes) const;

  // Drops the whole pages of [data, data + bytes) from memory, where they are part of the
  // mapping: a tensor converted to another type at load is not kept twice. Reading them again
  // reads the file again. Advice only: should the kernel decline, the pages merely stay.
  void release(const void* data, std::size_t bytes) const;

 private:
  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace attn
