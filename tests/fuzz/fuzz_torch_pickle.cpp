// The restricted unpickler of pytorch_model.bin (read_torch_pickle) on arbitrary bytes. It must
// refuse with a one-line attn::Error naming the file, or give a state dict whose every tensor
// lies inside its storage: a known dtype, non-negative sizes, strides and offset, at most 2^40
// elements, and its last element (offset + sum (size - 1) x stride, computed here in 128 bits)
// below the storage's element count.

#include <cstdint>
#include <set>
#include <span>
#include <string>

#include "src/io/torch_pickle.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

const std::string kFile = "fuzz/pytorch_model.bin";

void check_state_dict(const attn::TorchStateDict& state) {
  static const std::set<std::string> dtypes = {"F32", "F16", "BF16", "I64", "I32",
                                               "I16", "I8",  "U8",   "BOOL"};
  std::set<std::string> keys;
  for (const attn::TorchStorage& storage : state.storages) {
    FUZZ_CHECK(dtypes.contains(storage.dtype), "storage of dtype " + storage.dtype);
    FUZZ_CHECK(keys.insert(storage.key).second, "storage key twice: " + storage.key);
    FUZZ_CHECK(storage.numel >= 0 && storage.numel <= attn::kMaxTorchElements,
               "storage numel " + std::to_string(storage.numel));
  }
  std::set<std::string> names;
  for (const attn::TorchTensor& tensor : state.tensors) {
    FUZZ_CHECK(names.insert(tensor.name).second, "tensor name twice: " + tensor.name);
    FUZZ_CHECK(tensor.storage < state.storages.size(), tensor.name + ": storage out of range");
    FUZZ_CHECK(tensor.size.size() == tensor.stride.size(), tensor.name + ": rank mismatch");
    FUZZ_CHECK(tensor.offset >= 0, tensor.name + ": negative offset");
    __int128 elements = 1, last = tensor.offset;
    for (std::size_t i = 0; i < tensor.size.size(); ++i) {
      FUZZ_CHECK(tensor.size[i] >= 0 && tensor.stride[i] >= 0,
                 tensor.name + ": negative size or stride");
      elements *= tensor.size[i];
      if (tensor.size[i] > 0) last += __int128(tensor.size[i] - 1) * tensor.stride[i];
    }
    FUZZ_CHECK(elements <= attn::kMaxTorchElements, tensor.name + ": more than 2^40 elements");
    const int64_t numel = state.storages[tensor.storage].numel;
    FUZZ_CHECK(elements == 0 ? tensor.offset <= numel : last < numel,
               tensor.name + ": reaches past its storage");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> pickle(reinterpret_cast<const std::byte*>(data), size);
  try {
    check_state_dict(attn::read_torch_pickle(pickle, kFile));
  } catch (const attn::Error& error) {
    // A clean refusal: what a hostile or broken pickle must get.
    const std::string message = error.what();
    FUZZ_CHECK(message.starts_with(kFile + ": data.pkl"), "message without the file: " + message);
    FUZZ_CHECK(message.find('\n') == std::string::npos, "message of several lines: " + message);
  }
  return 0;
}
