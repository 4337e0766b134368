#include "src/io/torch_file.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "src/base/error.h"
#include "src/io/json_util.h"
#include "src/io/torch_pickle.h"

namespace attn {
namespace {

// data.pkl takes about 100 bytes per tensor; this is room for millions.
constexpr uint64_t kMaxPickleBytes = uint64_t{1} << 30;
// "little" or "big"
constexpr uint64_t kMaxByteorderBytes = 16;

// torch.save's zip archive, or a refusal that says what else the file is.
ZipArchive open_archive(const MappedFile& mapping) {
  const std::string file = mapping.path().string();
  const std::span<const std::byte> bytes = mapping.bytes();
  // torch before 1.6 wrote pickles one after another, the first being the magic number
  // 0x1950a86a20f9469cfc6c: the file starts with PROTO (0x80).
  if (!bytes.empty() && bytes[0] == std::byte{0x80}) {
    throw Error(file +
                ": PyTorch's legacy (pre-1.6, non-zip) format, which attn does not read; re-save "
                "it with a current torch.save or convert it to safetensors");
  }
  // A zip starts with a local header or, when empty, with the end record: "PK" either way.
  if (bytes.size() < 4 || bytes[0] != std::byte{'P'} || bytes[1] != std::byte{'K'}) {
    throw Error(file + ": not a zip archive (torch.save's format)");
  }
  return ZipArchive(bytes, file);
}

// The one folder that holds every entry: "pytorch_model/", "archive/", ... (torch.save names it
// after the file it first wrote).
std::string archive_folder(const ZipArchive& zip, const std::string& file) {
  if (zip.entries().empty()) throw Error(file + ": empty zip archive, without a data.pkl");
  const std::string& first = zip.entries().front().name;
  const std::size_t slash = first.find('/');
  if (slash == 0 || slash == std::string::npos) {
    throw Error(file + ": zip entry '" + brief_text(first) +
                "' is not inside a folder, where torch.save puts every entry");
  }
  const std::string folder = first.substr(0, slash + 1);
  for (const ZipEntry& entry : zip.entries()) {
    if (!entry.name.starts_with(folder)) {
      throw Error(file + ": zip entries '" + brief_text(first) + "' and '" +
                  brief_text(entry.name) +
                  "' are in different folders, where torch.save puts all in one");
    }
  }
  return folder;
}

// Row-major strides: each dimension's stride is the number of elements of the dimensions after
// it (dimensions of size 1 may have any). A view without elements counts as contiguous.
bool is_contiguous(const std::vector<int64_t>& size, const std::vector<int64_t>& stride) {
  if (std::find(size.begin(), size.end(), 0) != size.end()) return true;
  int64_t expected = 1;
  for (std::size_t i = size.size(); i-- > 0;) {
    if (size[i] != 1 && stride[i] != expected) return false;
    expected *= size[i];  // at most kMaxTorchElements: checked by read_torch_pickle
  }
  return true;
}

int64_t element_count(const std::vector<int64_t>& size) {
  int64_t count = 1;
  for (const int64_t dimension : size) count *= dimension;  // at most kMaxTorchElements
  return count;
}

// Copies the elements of a strided view of `storage` into `out`, row-major: the last index
// moves fastest, and each step moves the source by that dimension's stride.
template <std::size_t kBytes>
void gather(const std::byte* storage, int64_t offset, const std::vector<int64_t>& size,
            const std::vector<int64_t>& stride, std::byte* out, int64_t count) {
  std::vector<int64_t> index(size.size(), 0);
  int64_t from = offset;
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(out + i * kBytes, storage + from * kBytes, kBytes);
    for (std::size_t d = size.size(); d-- > 0;) {
      if (++index[d] < size[d]) {
        from += stride[d];
        break;
      }
      from -= (size[d] - 1) * stride[d];
      index[d] = 0;
    }
  }
}

}  // namespace

TorchFile::TorchFile(const std::filesystem::path& path)
    : mapping_(path), zip_(open_archive(mapping_)) {
  const std::string file = path.string();
  const std::string folder = archive_folder(zip_, file);

  // torch 2.1 and later record the byte order of the storages, which is the saving machine's.
  if (const ZipEntry* byteorder = zip_.find(folder + "byteorder")) {
    const std::span<const std::byte> order = byteorder->size <= kMaxByteorderBytes
                                                 ? zip_.contents(*byteorder)
                                                 : std::span<const std::byte>();
    if (std::string_view(reinterpret_cast<const char*>(order.data()), order.size()) != "little") {
      throw Error(file + ": " + folder +
                  "byteorder does not say 'little'; attn reads only little-endian storages");
    }
  }

  const ZipEntry* pickle = zip_.find(folder + "data.pkl");
  if (!pickle) {
    throw Error(file + ": no " + brief_text(folder) +
                "data.pkl in the zip archive (not a torch.save checkpoint?)");
  }
  if (pickle->size > kMaxPickleBytes) {
    throw Error(file + ": data.pkl is " + std::to_string(pickle->size) +
                " bytes, more than any state dict needs");
  }
  const TorchStateDict state = read_torch_pickle(zip_.contents(*pickle), file);

  for (const TorchTensor& tensor : state.tensors) {
    const TorchStorage& storage = state.storages[tensor.storage];
    const std::string where = file + ": tensor '" + brief_text(tensor.name) + "'";
    if (storage.key.empty() || storage.key.find('/') != std::string::npos) {
      throw Error(where + ": storage key '" + brief_text(storage.key) +
                  "' is not the name of a file in data/");
    }
    const std::string entry_name = folder + "data/" + storage.key;
    const ZipEntry* entry = zip_.find(entry_name);
    if (!entry) {
      throw Error(where + ": its storage " + brief_text(entry_name) + " is not in the archive");
    }
    View view;
    view.storage = entry;
    view.element_size = dtype_size(storage.dtype);
    // At most 2^40 elements of at most 8 bytes: no overflow.
    const uint64_t storage_bytes = uint64_t(storage.numel) * view.element_size;
    if (entry->size < storage_bytes) {
      throw Error(where + ": storage " + brief_text(entry_name) + " holds " +
                  std::to_string(entry->size) + " bytes, shorter than its tensor needs (" +
                  std::to_string(storage.numel) + " " + storage.dtype + ", " +
                  std::to_string(storage_bytes) + " bytes)");
    }
    view.offset = tensor.offset;
    view.size = tensor.size;
    view.stride = tensor.stride;
    view.contiguous = is_contiguous(tensor.size, tensor.stride);

    // The bytes the view spans: from its first element to its last (checked by
    // read_torch_pickle to lie in the storage).
    int64_t last = tensor.offset;
    for (std::size_t i = 0; i < tensor.size.size(); ++i) {
      last += std::max<int64_t>(tensor.size[i] - 1, 0) * tensor.stride[i];
    }
    TensorInfo info;
    info.dtype = storage.dtype;
    info.shape = tensor.size;
    info.begin = std::size_t(tensor.offset) * view.element_size;
    info.end =
        element_count(tensor.size) == 0 ? info.begin : std::size_t(last + 1) * view.element_size;
    tensors_.emplace(tensor.name, std::move(info));
    views_.emplace(tensor.name, std::move(view));
  }
}

const std::byte* TorchFile::bytes_in_place(const View& view) const {
  if (!view.storage->stored() || !view.contiguous) return nullptr;
  const std::byte* first =
      zip_.raw_bytes(*view.storage).data() + std::size_t(view.offset) * view.element_size;
  return reinterpret_cast<uintptr_t>(first) % view.element_size == 0 ? first : nullptr;
}

bool TorchFile::in_place(const std::string& name) const {
  const auto view = views_.find(name);
  if (view == views_.end()) return false;
  const std::byte* bytes = bytes_in_place(view->second);
  return bytes && mapping_.contains(bytes, tensors_.at(name).end - tensors_.at(name).begin);
}

const void* TorchFile::read(const View& view) {
  if (const std::byte* bytes = bytes_in_place(view)) return bytes;
  const std::size_t element_size = view.element_size;
  // A deflated storage is inflated once, into memory aligned for any type, and kept: a
  // contiguous tensor in it needs no other copy.
  const std::span<const std::byte> storage = zip_.contents(*view.storage);
  const std::byte* first = storage.data() + std::size_t(view.offset) * element_size;
  if (view.contiguous && !view.storage->stored() && first) return first;

  const int64_t count = element_count(view.size);
  // Memory from operator new is aligned for every scalar type.
  std::vector<std::byte>& copy =
      copies_.emplace_back(std::max<std::size_t>(std::size_t(count) * element_size, 1));
  if (count == 0) return copy.data();
  if (view.contiguous) {
    std::memcpy(copy.data(), first, std::size_t(count) * element_size);
    return copy.data();
  }
  const auto gather_as = [&]<std::size_t kBytes>() {
    gather<kBytes>(storage.data(), view.offset, view.size, view.stride, copy.data(), count);
  };
  switch (element_size) {
    case 1:
      gather_as.operator()<1>();
      break;
    case 2:
      gather_as.operator()<2>();
      break;
    case 4:
      gather_as.operator()<4>();
      break;
    default:
      gather_as.operator()<8>();
      break;
  }
  return copy.data();
}

TensorElements TorchFile::elements(const std::string& name,
                                   std::span<const int64_t> expected_shape) {
  const TensorInfo& info = check_weight(*this, name, expected_shape);
  View& view = views_.at(name);
  if (!view.data) view.data = read(view);
  return {.data = view.data, .dtype = info.dtype};
}

}  // namespace attn
