#pragma once

#include <deque>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "src/io/mapped_file.h"
#include "src/io/tensor_file.h"

namespace attn {

// A safetensors file, memory-mapped read-only. The constructor validates everything the header
// claims before anything is used: a regular file (opened without blocking, so a FIFO cannot hang
// it), header length within the file (and at most 100 MB), valid JSON nested at most
// kMaxJsonDepth deep, each tensor named once, known dtypes, data_offsets inside the data section,
// not overlapping, and each byte range exactly shape x dtype size. Tensors are used in place (no
// copy; only a tensor misaligned for its type is copied once), either as F32 values (floats:
// F16 and BF16 converted once, when first asked for) or in their own dtype (elements).
class SafeTensors final : public TensorFile {
 public:
  explicit SafeTensors(const std::filesystem::path& path);

  const std::filesystem::path& path() const override { return mapping_.path(); }
  const char* format() const override { return "safetensors"; }
  const std::map<std::string, TensorInfo>& tensors() const override { return tensors_; }

  TensorElements elements(const std::string& name,
                          std::span<const int64_t> expected_shape) override;
  // The tensor's values as F32 (F16 and BF16 converted once, when first asked for), after the
  // checks of elements().
  const float* floats(const std::string& name, std::span<const int64_t> expected_shape);
  void release(const void* data, std::size_t bytes) const override {
    mapping_.release(data, bytes);
  }
  bool maps(const void* data, std::size_t bytes) const override {
    return mapping_.contains(data, bytes);
  }

 private:
  MappedFile mapping_;
  const std::byte* data_ = nullptr;  // start of the data section, after the header
  std::map<std::string, TensorInfo> tensors_;
  std::deque<std::vector<float>>
      converted_;  // F32 copies of F16/BF16 tensors, copies of unaligned ones
};

}  // namespace attn
