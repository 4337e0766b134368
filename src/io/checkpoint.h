#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/io/tensor_file.h"

namespace attn {

// The weights of a model folder, from the files Hugging Face's from_pretrained reads, in its
// order of preference (the first present wins):
//   model.safetensors
//   model.safetensors.index.json   + the safetensors shards its weight_map names
//   pytorch_model.bin               (torch.save's zip format)
//   pytorch_model.bin.index.json   + the pytorch_model shards it names
// Every file is opened and validated here, each memory-mapped (sharding costs no memory). A
// shard the index names must be a file of the folder, or a symbolic link into the folder or, in
// the Hugging Face cache, into the model's blobs/; a tensor must be in one file only, and where
// the index says. A folder with none of these files is refused, naming what it has instead
// (TensorFlow's tf_model.h5, Flax's flax_model.msgpack, GGUF files).
class Checkpoint {
 public:
  explicit Checkpoint(const std::filesystem::path& dir);

  // The single weight file or the index: what errors about the weights name.
  const std::filesystem::path& source() const { return source_; }
  const std::vector<std::unique_ptr<TensorFile>>& files() const { return files_; }
  // Every tensor, by name, with the file that holds it.
  const std::map<std::string, TensorFile*>& tensors() const { return file_of_; }

  const TensorInfo* find(const std::string& name) const;
  // The tensor's elements, checked as TensorFile::elements checks them.
  TensorElements elements(const std::string& name, std::span<const int64_t> expected_shape);
  // Lets the pages of [data, data + bytes) go, in whichever file they lie.
  void release(const void* data, std::size_t bytes) const;
  // Whether [data, data + bytes) lies in one file's mapping (not in a copy).
  bool maps(const void* data, std::size_t bytes) const;

 private:
  void open_single(const std::filesystem::path& path);
  void open_shards(const std::filesystem::path& dir, const std::filesystem::path& index_path);
  void add(std::unique_ptr<TensorFile> file);

  std::filesystem::path source_;
  std::vector<std::unique_ptr<TensorFile>> files_;
  std::map<std::string, TensorFile*> file_of_;
};

// The weight file names Checkpoint looks for, in its order; for the README and error messages.
extern const char* const kWeightFileNames[4];

}  // namespace attn
