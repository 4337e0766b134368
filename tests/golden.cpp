#include "tests/golden.h"

#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>

#include "src/io/json_util.h"
#include "tests/test_paths.h"

// Compiled once, not in every test file that includes golden.h: <regex> is seconds of
// compile time.
namespace attn::test {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

nlohmann::json read_json(const std::filesystem::path& path) {
  return parse_json(read_file(path), path.string());
}

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

namespace {

// One JSON value per non-empty line, as Json (nlohmann::json, or ordered_json where the order of
// an object's keys matters, as to a chat template); none throws.
template <typename Json>
std::vector<Json> read_json_lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  std::vector<Json> lines;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.empty()) continue;
    try {
      lines.push_back(Json::parse(line));
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(path.string() + ":" + std::to_string(number) + ": " + e.what());
    }
  }
  // A golden with nothing in it would let every check over its lines pass unrun.
  if (lines.empty()) throw std::runtime_error(path.string() + ": no lines");
  return lines;
}

}  // namespace

std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path) {
  return read_json_lines<nlohmann::json>(path);
}

GoldenSet::GoldenSet(const std::string& name) {
  const std::filesystem::path shared = shared_dir();
  if (shared.empty()) {
    throw std::runtime_error(
        "golden set " + name +
        ": ../shared is absent (the test must begin with ATTN_REQUIRE_SHARED())");
  }
  dir_ = shared / "golden" / name;
  if (!std::filesystem::is_directory(dir_))
    throw std::runtime_error(dir_.string() + ": no such golden set");
}

std::filesystem::path GoldenSet::path(const std::string& name) const {
  const std::filesystem::path file = dir_ / name;
  std::error_code error;
  const auto size = std::filesystem::file_size(file, error);
  if (error)
    throw std::runtime_error(file.string() + ": golden file missing (" + error.message() + ")");
  if (size == 0) throw std::runtime_error(file.string() + ": golden file empty");
  return file;
}

std::vector<nlohmann::ordered_json> GoldenSet::ordered_jsonl(const std::string& name) const {
  return read_json_lines<nlohmann::ordered_json>(path(name));
}

double GoldenSet::float64_distance(const std::string& section, const std::string& key) const {
  if (!std::filesystem::exists(dir_ / "check_float64.json")) return 0;
  const nlohmann::json check = json("check_float64.json");
  if (!check.contains(section) || !check[section].contains(key)) return 0;
  return check[section][key].get<double>();
}

nlohmann::ordered_json GoldenSet::ordered_json(const std::string& name) const {
  const std::filesystem::path file = path(name);
  try {
    return nlohmann::ordered_json::parse(read_file(file));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  }
}

}  // namespace attn::test
