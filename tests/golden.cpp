#include "tests/golden.h"

#include <fstream>
#include <regex>
#include <stdexcept>
#include <string>

// Compiled once, not in every test file that includes golden.h: <regex> is seconds of
// compile time.
namespace attn::test {

// A little-endian float32 .npy file (C order).
NpyArray read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  char magic[8];
  in.read(magic, 8);
  const int major_version = magic[6];
  uint32_t header_length = 0;
  if (major_version == 1) {
    uint16_t length16 = 0;
    in.read(reinterpret_cast<char*>(&length16), 2);
    header_length = length16;
  } else {
    in.read(reinterpret_cast<char*>(&header_length), 4);
  }
  std::string header(header_length, '\0');
  in.read(header.data(), header_length);
  if (header.find("'<f4'") == std::string::npos ||
      header.find("'fortran_order': False") == std::string::npos) {
    throw std::runtime_error(path.string() + ": expected C-order little-endian float32");
  }
  NpyArray array;
  std::smatch match;
  std::regex_search(header, match, std::regex(R"('shape': \(([^)]*)\))"));
  std::string dims = match[1];
  std::size_t count = 1;
  const std::regex number(R"(\d+)");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it) {
    array.shape.push_back(std::stoll(it->str()));
    count *= array.shape.back();
  }
  array.values.resize(count);
  in.read(reinterpret_cast<char*>(array.values.data()), count * sizeof(float));
  if (!in) throw std::runtime_error(path.string() + ": truncated");
  return array;
}

std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  }
  // A golden with nothing in it would let every check over its lines pass unrun.
  if (lines.empty()) throw std::runtime_error(path.string() + ": no lines");
  return lines;
}

}  // namespace attn::test
