#pragma once

// Reading test data: the reference outputs of Hugging Face transformers in ../shared/golden (one
// way to open them: GoldenSet), and the files tests write or craft themselves.

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attn::test {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// A whole file, as bytes; one that cannot be opened throws.
std::string read_file(const std::filesystem::path& path);

// A JSON file, of any size; one that cannot be opened or parsed throws (parse_json's errors).
nlohmann::json read_json(const std::filesystem::path& path);

// One JSON value per non-empty line; a file that cannot be opened or has none throws.
std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path);

// A little-endian float32 .npy file (C order).
NpyArray read_npy(const std::filesystem::path& path);

// A golden set: a folder of ../shared/golden ("tiny-gpt2-brown", "interp", "chat-templates",
// "tokenizer-vectors/real"), its files read only through these functions. A test that reads one
// begins with ATTN_REQUIRE_SHARED() (tests/test_paths.h), which skips it without ../shared and
// fails it under CI=true. Past that point nothing skips: a set or file that is missing, empty or
// malformed throws, failing the test, since a golden that yields nothing would let every check
// over its lines pass unrun.
class GoldenSet {
 public:
  explicit GoldenSet(const std::string& name);

  const std::filesystem::path& dir() const { return dir_; }
  // The file NAME of the set (a relative path), which must exist and not be empty.
  std::filesystem::path path(const std::string& name) const;

  std::string text(const std::string& name) const { return read_file(path(name)); }
  nlohmann::json json(const std::string& name) const { return read_json(path(name)); }
  nlohmann::ordered_json ordered_json(const std::string& name) const;
  std::vector<nlohmann::json> jsonl(const std::string& name) const {
    return read_jsonl(path(name));
  }
  // Keeping the order of each object's keys, as a chat template sees them.
  std::vector<nlohmann::ordered_json> ordered_jsonl(const std::string& name) const;
  NpyArray npy(const std::string& name) const { return read_npy(path(name)); }

  // How far this golden is from float64 for one quantity: check_float64.json's SECTION.KEY
  // (transformers' same code run in float64), or 0 where the set has no such check.
  double float64_distance(const std::string& section, const std::string& key) const;

 private:
  std::filesystem::path dir_;
};

}  // namespace attn::test
