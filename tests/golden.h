#pragma once

// Readers for the reference outputs of Hugging Face transformers in ../shared/golden.

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

namespace attn::test {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// A little-endian float32 .npy file (C order).
NpyArray read_npy(const std::filesystem::path& path);

// One JSON value per non-empty line; a file that cannot be opened or has none throws.
std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path);

}  // namespace attn::test
