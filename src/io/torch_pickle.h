#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace attn {

// More elements than any real tensor or storage has (4 TB of F32), and small enough that an
// element count times an element size cannot overflow 64 bits.
inline constexpr int64_t kMaxTorchElements = int64_t{1} << 40;

// A storage of a torch.save archive as data.pkl names it: `numel` elements of `dtype`, kept in
// the archive's entry data/<key>.
struct TorchStorage {
  std::string key;    // "0", "1", ...
  std::string dtype;  // as safetensors names it: "F32", "F16", "BF16", "I64", ...
  int64_t numel = 0;
};

// One tensor of the state dict: a strided view of a storage. Element i0, i1, ... of the tensor
// is element offset + i0 * stride[0] + i1 * stride[1] + ... of the storage.
struct TorchTensor {
  std::string name;
  std::size_t storage = 0;      // index into TorchStateDict::storages
  int64_t offset = 0;           // in elements
  std::vector<int64_t> size;    // row-major shape
  std::vector<int64_t> stride;  // in elements, one per dimension
};

struct TorchStateDict {
  std::vector<TorchStorage> storages;  // each key once
  std::vector<TorchTensor> tensors;    // in the order data.pkl lists them, each name once
};

// Reads the data.pkl of a torch.save archive holding a state dict ({name: tensor}, or an
// OrderedDict of them) with a restricted unpickler: it knows only the opcodes of pickle
// protocols 2-5 that such a pickle uses, and only the globals collections.OrderedDict,
// torch._utils._rebuild_tensor_v2, torch._utils._rebuild_parameter and the storage types of
// F32, F16, BF16, I64, I32, I16, I8, U8 and BOOL. Nothing is ever called or executed: those
// names only tell the reader how to build plain data. Everything else is refused, and what is
// accepted is checked: every tensor has non-negative sizes, strides and offset, at most
// kMaxTorchElements elements, and lies inside its storage's `numel` elements. Memory and time
// are bounded by the size of `pickle`, whatever it holds. Errors are attn::Error of one line
// starting with "<file>: data.pkl".
TorchStateDict read_torch_pickle(std::span<const std::byte> pickle, const std::string& file);

}  // namespace attn
