#include "src/json_util.h"

#include <fstream>
#include <sstream>

#include "src/error.h"

namespace attn {

nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open file");
  std::stringstream contents;
  contents << in.rdbuf();
  try {
    return nlohmann::json::parse(contents.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(path.string() + ": not valid JSON (" + e.what() + ")");
  }
}

JsonFile::JsonFile(const std::filesystem::path& path) : path_(path), json_(read_json_file(path)) {
  if (!json_.is_object()) throw Error(path.string() + ": expected a JSON object at the top level");
}

bool JsonFile::has(const std::string& key) const {
  return json_.contains(key) && !json_.at(key).is_null();
}

void JsonFile::fail(const std::string& key, const std::string& problem) const {
  throw Error(path_.string() + ": field '" + key + "' " + problem);
}

std::optional<int> JsonFile::optional_positive_int(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  const auto& value = json_.at(key);
  if (!value.is_number_integer() || value.get<long long>() <= 0 ||
      value.get<long long>() > (1LL << 30)) {
    fail(key, "must be a positive integer, got " + value.dump());
  }
  return value.get<int>();
}

int JsonFile::positive_int(const std::string& key) const {
  auto value = optional_positive_int(key);
  if (!value) fail(key, "is missing");
  return *value;
}

float JsonFile::positive_float(const std::string& key) const {
  if (!has(key)) fail(key, "is missing");
  const auto& value = json_.at(key);
  if (!value.is_number() || !(value.get<double>() > 0)) {
    fail(key, "must be a positive number, got " + value.dump());
  }
  return value.get<float>();
}

std::optional<std::string> JsonFile::optional_string(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  const auto& value = json_.at(key);
  if (!value.is_string()) fail(key, "must be a string, got " + value.dump());
  return value.get<std::string>();
}

std::string JsonFile::string(const std::string& key) const {
  auto value = optional_string(key);
  if (!value) fail(key, "is missing");
  return *value;
}

}  // namespace attn
