// The safetensors header parser on arbitrary files. A file it accepts must describe tensors
// that lie inside the data section, do not overlap and hold exactly shape x dtype-size bytes;
// every F32/F16/BF16 tensor must then be readable as floats of its own shape, and refused
// (attn::Error) for any other shape.

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "src/io/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

// The format's own table of element sizes: an oracle kept apart from the parser's.
int64_t element_bytes(const std::string& dtype) {
  static const std::map<std::string, int64_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"I64", 8}, {"U64", 8},     {"F64", 8}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

void check_accepted_file(attn::SafeTensors& file, std::string_view bytes) {
  uint64_t header_bytes = 0;
  FUZZ_CHECK(bytes.size() >= 8, "accepted a file shorter than its length prefix");
  std::memcpy(&header_bytes, bytes.data(), 8);
  FUZZ_CHECK(header_bytes <= bytes.size() - 8, "accepted a header longer than the file");
  const uint64_t data_bytes = bytes.size() - 8 - header_bytes;

  uint64_t previous_end = 0;
  std::map<uint64_t, std::string> by_begin;
  for (const auto& [name, info] : file.tensors()) {
    const int64_t size = element_bytes(info.dtype);
    FUZZ_CHECK(size > 0, name + ": accepted dtype " + info.dtype);
    int64_t elements = 1;
    for (int64_t dim : info.shape) {
      FUZZ_CHECK(dim >= 0, name + ": accepted a negative dimension");
      FUZZ_CHECK(dim == 0 || elements <= (int64_t{1} << 50) / dim, name + ": shape overflows");
      elements *= dim;
    }
    FUZZ_CHECK(info.begin <= info.end && info.end <= data_bytes,
               name + ": byte range outside the data section");
    FUZZ_CHECK(uint64_t(info.end - info.begin) == uint64_t(elements * size),
               name + ": byte range is not shape x dtype size");
    FUZZ_CHECK(file.find(name) == &info, name + ": find() does not return the tensor");
    if (info.end > info.begin) by_begin[info.begin] = name;
  }
  for (const auto& [begin, name] : by_begin) {
    FUZZ_CHECK(begin >= previous_end, name + ": overlaps the tensor before it");
    previous_end = file.tensors().at(name).end;
  }

  for (const auto& [name, info] : file.tensors()) {
    const bool is_float = info.dtype == "F32" || info.dtype == "F16" || info.dtype == "BF16";
    if (!is_float) continue;
    int64_t elements = 1;
    for (int64_t dim : info.shape) elements *= dim;
    const float* values = file.floats(name, info.shape);
    // Reading every value lets AddressSanitizer see a tensor that reaches past the mapping.
    volatile float sum = 0;
    for (int64_t i = 0; i < elements; ++i) sum = sum + values[i];
    std::vector<int64_t> wrong_shape = info.shape;
    wrong_shape.push_back(2);
    bool refused = false;
    try {
      file.floats(name, wrong_shape);
    } catch (const attn::Error&) {
      refused = true;
    }
    FUZZ_CHECK(refused, name + ": floats() accepted a wrong shape");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const attn::fuzz::ScratchDir scratch;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  scratch.write("model.safetensors", bytes);
  try {
    attn::SafeTensors file(scratch.path() / "model.safetensors");
    check_accepted_file(file, bytes);
  } catch (const attn::Error&) {
    // A clean refusal: what a broken file must get.
  }
  return 0;
}
