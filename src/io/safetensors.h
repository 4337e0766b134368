#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace attn {

struct TensorInfo {
  std::string dtype;           // "F32", "F16", "BF16", ...
  std::vector<int64_t> shape;  // row-major
  std::size_t begin = 0;       // byte range inside the data section
  std::size_t end = 0;
};

// A tensor's elements where they lie, in their own dtype ("F32", "F16" or "BF16"), aligned for
// that type.
struct TensorElements {
  const void* data = nullptr;
  const std::string& dtype;
};

// A safetensors file, memory-mapped read-only. The constructor validates everything the header
// claims before anything is used: a regular file (opened without blocking, so a FIFO cannot hang
// it), header length within the file (and at most 100 MB), valid JSON nested at most
// kMaxJsonDepth deep, each tensor named once, known dtypes, data_offsets inside the data section,
// not overlapping, and each byte range exactly shape x dtype size. Tensors are used in place (no
// copy; only a tensor misaligned for its type is copied once), either as F32 values (floats:
// F16 and BF16 converted once, when first asked for) or in their own dtype (elements).
class SafeTensors {
 public:
  explicit SafeTensors(const std::filesystem::path& path);
  ~SafeTensors();
  SafeTensors(const SafeTensors&) = delete;
  SafeTensors& operator=(const SafeTensors&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find(const std::string& name) const;

  // The tensor's values as F32, after checking that its shape is `expected_shape` and its dtype
  // is F32, F16 or BF16.
  const float* floats(const std::string& name, std::span<const int64_t> expected_shape);
  // The same tensor in its own dtype.
  TensorElements elements(const std::string& name, std::span<const int64_t> expected_shape);

  // Drops the whole pages of [data, data + bytes) from memory, where they are part of the
  // mapping: a tensor converted to another type at load is not kept twice. Reading them again
  // reads the file again.
  void release(const void* data, std::size_t bytes) const;

 private:
  const TensorInfo& checked(const std::string& name, std::span<const int64_t> expected_shape) const;

  std::filesystem::path path_;
  const std::byte* mapping_ = nullptr;
  std::size_t mapping_size_ = 0;
  const std::byte* data_ = nullptr;  // start of the data section, after the header
  std::map<std::string, TensorInfo> tensors_;
  std::deque<std::vector<float>>
      converted_;  // F32 copies of F16/BF16 tensors, copies of unaligned ones
};

std::string shape_string(std::span<const int64_t> shape);

}  // namespace attn
