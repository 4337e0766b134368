#pragma once

// A safetensors reader and writer for tests, independent of src/safetensors.*: the writer
// crafts files (well-formed or deliberately broken) byte by byte, the reader takes a shipped
// model apart so that a test can rewrite it with one thing changed.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tests/cli_util.h"

namespace attn::test {

struct RawTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

// The on-disk layout: header length as a little-endian u64, the header, then the data.
inline std::string safetensors_bytes(std::string_view header, std::string_view data) {
  std::string file(8, '\0');
  const uint64_t length = header.size();
  for (int i = 0; i < 8; ++i) file[i] = char((length >> (8 * i)) & 0xFF);
  file += header;
  file += data;
  return file;
}

// A well-formed file holding `tensors` back to back, in the order given.
inline void write_safetensors(const std::filesystem::path& path,
                              const std::vector<RawTensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto& tensor : tensors) {
    header[tensor.name] = {{"dtype", tensor.dtype},
                           {"shape", tensor.shape},
                           {"data_offsets", {data.size(), data.size() + tensor.bytes.size()}}};
    data += tensor.bytes;
  }
  write_file(path, safetensors_bytes(header.dump(), data));
}

// Every tensor of a well-formed file, in data order. Trusts the file: only for shipped models.
inline std::vector<RawTensor> read_safetensors(const std::filesystem::path& path) {
  const std::string file = read_file(path);
  uint64_t header_length = 0;
  std::memcpy(&header_length, file.data(), 8);
  const auto header = nlohmann::json::parse(file.substr(8, header_length));
  const std::string_view data = std::string_view(file).substr(8 + header_length);
  std::vector<std::pair<uint64_t, RawTensor>> tensors;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    const auto begin = entry["data_offsets"][0].get<uint64_t>();
    const auto end = entry["data_offsets"][1].get<uint64_t>();
    tensors.emplace_back(begin, RawTensor{name, entry["dtype"].get<std::string>(),
                                          entry["shape"].get<std::vector<int64_t>>(),
                                          std::string(data.substr(begin, end - begin))});
  }
  std::sort(tensors.begin(), tensors.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<RawTensor> ordered;
  for (auto& [offset, tensor] : tensors) ordered.push_back(std::move(tensor));
  return ordered;
}

inline RawTensor* find_tensor(std::vector<RawTensor>& tensors, const std::string& name) {
  for (auto& tensor : tensors) {
    if (tensor.name == name) return &tensor;
  }
  throw std::runtime_error("test model has no tensor " + name);
}

}  // namespace attn::test
