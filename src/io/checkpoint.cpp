#include "src/io/checkpoint.h"

#include <algorithm>
#include <system_error>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/io/json_util.h"
#include "src/io/safetensors.h"
#include "src/io/shard_index.h"
#include "src/io/torch_file.h"

namespace attn {

const char* const kWeightFileNames[4] = {"model.safetensors", "model.safetensors.index.json",
                                         "pytorch_model.bin", "pytorch_model.bin.index.json"};

namespace {

bool is_safetensors(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  return name.starts_with("model.safetensors") || path.extension() == ".safetensors";
}

std::unique_ptr<TensorFile> open_tensor_file(const std::filesystem::path& path, bool safetensors) {
  if (safetensors) return std::make_unique<SafeTensors>(path);
  return std::make_unique<TorchFile>(path);
}

// Whether `path` lies inside `folder` (both canonical).
bool is_within(const std::filesystem::path& path, const std::filesystem::path& folder) {
  const auto [folder_end, path_at] =
      std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
  return folder_end == folder.end() && path_at != path.end();
}

// The folders a shard's file may resolve into: the model folder and, when the folder is a
// snapshot of the Hugging Face cache (.../models--ORG--NAME/snapshots/<commit>, whose files are
// symbolic links to ../../blobs/<hash>), the model's blobs/ folder.
std::vector<std::filesystem::path> shard_roots(const std::filesystem::path& dir) {
  std::error_code error;
  const std::filesystem::path folder = std::filesystem::canonical(dir, error);
  if (error) throw Error(dir.string() + ": cannot open model folder (" + error.message() + ")");
  std::vector<std::filesystem::path> roots = {folder};
  const std::filesystem::path snapshots = folder.parent_path(), repo = snapshots.parent_path();
  if (snapshots.filename() == "snapshots" && repo.filename().string().starts_with("models--")) {
    roots.push_back(repo / "blobs");
  }
  return roots;
}

// What a folder without readable weights has instead, for the error message.
std::string other_weight_files(const std::filesystem::path& dir) {
  static const std::pair<const char*, const char*> known[] = {
      {"tf_model.h5", "TensorFlow"},
      {"flax_model.msgpack", "Flax"},
      {"model.ckpt.index", "TensorFlow checkpoint"},
      {"pytorch_model.pt", "PyTorch, not Hugging Face's file name"},
  };
  std::string found;
  for (const auto& [name, format] : known) {
    if (entry_exists(dir / name)) {
      found += std::string(found.empty() ? "" : ", ") + name + " (" + format + ")";
    }
  }
  std::error_code error;
  for (auto it = std::filesystem::directory_iterator(dir, error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    if (it->path().extension() == ".gguf") {
      found += (found.empty() ? "" : ", ") + it->path().filename().string() + " (GGUF)";
    }
  }
  return found;
}

}  // namespace

Checkpoint::Checkpoint(const std::filesystem::path& dir) {
  for (const char* name : kWeightFileNames) {
    const std::filesystem::path path = dir / name;
    if (!entry_exists(path)) continue;
    source_ = path;
    if (std::string_view(name).ends_with(".index.json")) {
      open_shards(dir, path);
    } else {
      open_single(path);
    }
    return;
  }
  const std::string others = other_weight_files(dir);
  throw Error(dir.string() +
              ": no weights attn can read (it reads model.safetensors, "
              "model.safetensors.index.json, pytorch_model.bin or pytorch_model.bin.index.json)" +
              (others.empty() ? "" : "; the folder has " + others + ", which attn does not read"));
}

void Checkpoint::open_single(const std::filesystem::path& path) {
  add(open_tensor_file(path, is_safetensors(path)));
}

void Checkpoint::open_shards(const std::filesystem::path& dir,
                             const std::filesystem::path& index_path) {
  const std::string index_name = index_path.string();
  const ShardIndex index =
      parse_shard_index(read_model_file(index_path, kMaxConfigBytes), index_name);
  const bool safetensors = is_safetensors(index_path);
  const std::vector<std::filesystem::path> roots = shard_roots(dir);
  std::vector<TensorFile*> shard_files;  // as index.shards
  for (const std::string& shard : index.shards) {
    const std::string where = index_name + ": shard '" + brief_text(shard) + "'";
    std::error_code error;
    const std::filesystem::path resolved = std::filesystem::canonical(dir / shard, error);
    if (error) throw Error(where + " cannot be opened (" + error.message() + ")");
    if (std::none_of(roots.begin(), roots.end(),
                     [&](const auto& root) { return is_within(resolved, root); })) {
      throw Error(where + " is a symbolic link out of the model folder (to " + resolved.string() +
                  ")");
    }
    add(open_tensor_file(dir / shard, safetensors));
    shard_files.push_back(files_.back().get());
  }
  for (const auto& [tensor, shard] : index.shard_of) {
    const auto found = file_of_.find(tensor);
    if (found == file_of_.end() || found->second != shard_files[shard]) {
      throw Error(index_name + ": weight_map['" + brief_text(tensor) + "'] is '" +
                  brief_text(index.shards[shard]) + "', but " +
                  (found == file_of_.end()
                       ? "no shard has that tensor"
                       : "the tensor is in '" + found->second->path().filename().string() + "'"));
    }
  }
}

void Checkpoint::add(std::unique_ptr<TensorFile> file) {
  for (const auto& [name, info] : file->tensors()) {
    const auto [it, added] = file_of_.emplace(name, file.get());
    if (!added) {
      throw Error(source_.string() + ": tensor '" + brief_text(name) + "' is in both '" +
                  it->second->path().filename().string() + "' and '" +
                  file->path().filename().string() + "'");
    }
  }
  files_.push_back(std::move(file));
}

const TensorInfo* Checkpoint::find(const std::string& name) const {
  const auto it = file_of_.find(name);
  return it == file_of_.end() ? nullptr : it->second->find(name);
}

TensorElements Checkpoint::elements(const std::string& name,
                                    std::span<const int64_t> expected_shape) {
  const auto it = file_of_.find(name);
  if (it == file_of_.end()) throw Error(source_.string() + ": missing tensor '" + name + "'");
  return it->second->elements(name, expected_shape);
}

void Checkpoint::release(const void* data, std::size_t bytes) const {
  for (const auto& file : files_) file->release(data, bytes);
}

bool Checkpoint::maps(const void* data, std::size_t bytes) const {
  for (const auto& file : files_) {
    if (file->maps(data, bytes)) return true;
  }
  return false;
}

}  // namespace attn
