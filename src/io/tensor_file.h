#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace attn {

struct TensorInfo {
  std::string dtype;           // safetensors' names: "F32", "F16", "BF16", "I64", ...
  std::vector<int64_t> shape;  // row-major
  // Where the elements lie, in bytes, as the file's format places them (safetensors: a range of
  // the data section). Only the file that made the entry reads these.
  std::size_t begin = 0;
  std::size_t end = 0;
};

// A tensor's elements, contiguous and row-major, in their own dtype ("F32", "F16" or "BF16"),
// aligned for that type.
struct TensorElements {
  const void* data = nullptr;
  const std::string& dtype;
};

// Bytes per element of a dtype named as safetensors names them; 0 for a name it does not define.
std::size_t dtype_size(const std::string& dtype);

std::string shape_string(std::span<const int64_t> shape);

// One file of named tensors (model.safetensors, pytorch_model.bin, or one shard of either),
// validated when opened: every tensor it lists can be read. Weights are used in place where the
// file allows it, otherwise copied once.
class TensorFile {
 public:
  virtual ~TensorFile() = default;

  virtual const std::filesystem::path& path() const = 0;
  // "safetensors" or "pytorch"
  virtual const char* format() const = 0;
  virtual const std::map<std::string, TensorInfo>& tensors() const = 0;
  const TensorInfo* find(const std::string& name) const;

  // The tensor's elements, after checking that its shape is `expected_shape` and its dtype is
  // F32, F16 or BF16 (check_weight).
  virtual TensorElements elements(const std::string& name,
                                  std::span<const int64_t> expected_shape) = 0;
  // Lets the pages of [data, data + bytes) go, where they are the file's own (see MappedFile).
  virtual void release(const void* data, std::size_t bytes) const = 0;
  // Whether [data, data + bytes) lies in the file's mapping (not in a copy).
  virtual bool maps(const void* data, std::size_t bytes) const = 0;
};

// The checks of TensorFile::elements: `name` is in `file`, with shape `expected_shape` and a
// float dtype. Errors name the file and the tensor.
const TensorInfo& check_weight(const TensorFile& file, const std::string& name,
                               std::span<const int64_t> expected_shape);

}  // namespace attn
