// TorchFile (zip archive + data.pkl) on arbitrary files. A file it opens must list tensors of
// known dtypes whose every float tensor can then be read in full by elements() with its own
// shape (each byte is read, so that AddressSanitizer sees a view reaching past its storage or
// the mapping), the same pointer each time, and refused for any other shape. Refusals, at
// opening or at reading (a deflated storage is inflated then), are one-line attn::Errors that
// name the file.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "src/io/torch_file.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

void check_message(const attn::Error& error, const std::string& file) {
  const std::string message = error.what();
  FUZZ_CHECK(message.starts_with(file + ": "), "message without the file: " + message);
  FUZZ_CHECK(message.find('\n') == std::string::npos, "message of several lines: " + message);
}

void check_accepted_file(attn::TorchFile& file) {
  static const std::set<std::string> dtypes = {"F32", "F16", "BF16", "I64", "I32",
                                               "I16", "I8",  "U8",   "BOOL"};
  for (const auto& [name, info] : file.tensors()) {
    FUZZ_CHECK(dtypes.contains(info.dtype), name + ": dtype " + info.dtype);
    FUZZ_CHECK(info.begin <= info.end, name + ": begin after end");
    if (info.dtype != "F32" && info.dtype != "F16" && info.dtype != "BF16") continue;
    int64_t elements = 1;
    for (const int64_t dimension : info.shape) {
      FUZZ_CHECK(dimension >= 0, name + ": negative dimension");
      elements *= dimension;
    }
    // Large tensors of tiny files are views with zero strides, copied out in full: skip those
    // the fuzzer would spend its time copying.
    if (elements > (int64_t{1} << 24)) continue;
    const void* read = nullptr;
    try {
      read = file.elements(name, info.shape).data;
    } catch (const attn::Error& error) {
      check_message(error, file.path().string());  // a corrupt deflated storage
      continue;
    }
    FUZZ_CHECK(read != nullptr, name + ": null elements");
    const bool in_place = file.in_place(name);
    const auto* bytes = static_cast<const unsigned char*>(read);
    volatile unsigned sum = 0;
    for (int64_t i = 0; i < elements * int64_t(attn::dtype_size(info.dtype)); ++i) {
      sum = sum + bytes[i];
    }
    FUZZ_CHECK(file.elements(name, info.shape).data == read, name + ": read twice");
    FUZZ_CHECK(file.in_place(name) == in_place, name + ": in_place changed");
    std::vector<int64_t> wrong_shape = info.shape;
    wrong_shape.push_back(2);
    bool refused = false;
    try {
      file.elements(name, wrong_shape);
    } catch (const attn::Error&) {
      refused = true;
    }
    FUZZ_CHECK(refused, name + ": elements() accepted a wrong shape");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const attn::fuzz::ScratchDir scratch;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  scratch.write("pytorch_model.bin", bytes);
  const std::filesystem::path path = scratch.path() / "pytorch_model.bin";
  try {
    attn::TorchFile file(path);
    check_accepted_file(file);
  } catch (const attn::Error& error) {
    check_message(error, path.string());
  }
  return 0;
}
