#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "src/io/mapped_file.h"
#include "src/io/tensor_file.h"
#include "src/io/zip_archive.h"

namespace attn {

// A pytorch_model.bin as torch.save (torch 1.6 and later) writes it: a zip archive of one
// folder, <archive>/data.pkl (the state dict, a pickle) and <archive>/data/<key> (the bytes of
// each storage), memory-mapped read-only. data.pkl is read by a restricted unpickler that runs
// nothing (torch_pickle.h). Everything is validated when the file is opened: the zip's records,
// data.pkl, each tensor's dtype (F32, F16, BF16, I64, I32, I16, I8, U8 or BOOL), sizes, strides
// and offset against its storage, and each storage against its entry's size. Then every tensor
// can be read: a contiguous one from a stored (uncompressed) entry, aligned for its dtype, is
// used in place, like a safetensors weight; any other (deflated storage, misaligned, or a strided
// view such as a transpose) is copied once, row-major, when elements() first asks for it.
//
// TensorInfo::begin and end give the bytes the tensor spans within its storage's entry.
class TorchFile final : public TensorFile {
 public:
  explicit TorchFile(const std::filesystem::path& path);

  const std::filesystem::path& path() const override { return mapping_.path(); }
  const char* format() const override { return "pytorch"; }
  const std::map<std::string, TensorInfo>& tensors() const override { return tensors_; }

  TensorElements elements(const std::string& name,
                          std::span<const int64_t> expected_shape) override;
  void release(const void* data, std::size_t bytes) const override {
    mapping_.release(data, bytes);
  }
  bool maps(const void* data, std::size_t bytes) const override {
    return mapping_.contains(data, bytes);
  }

  // Whether elements(name, ...) gives the file's own bytes, a pointer into its mapping, rather
  // than a copy. False for a name the file does not hold.
  bool in_place(const std::string& name) const;

 private:
  // Where a tensor's elements are: a strided view of a storage entry.
  struct View {
    const ZipEntry* storage = nullptr;
    std::size_t element_size = 0;
    int64_t offset = 0;  // in elements
    std::vector<int64_t> size, stride;
    bool contiguous = false;     // row-major strides (or no elements)
    const void* data = nullptr;  // once elements() has found or made them
  };

  // The elements of `view` in the mapping, or null where they must be copied.
  const std::byte* bytes_in_place(const View& view) const;
  const void* read(const View& view);

  MappedFile mapping_;
  ZipArchive zip_;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, View> views_;
  std::deque<std::vector<std::byte>> copies_;  // row-major copies of tensors not used in place
};

}  // namespace attn
