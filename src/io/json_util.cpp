#include "src/io/json_util.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "src/base/error.h"

namespace attn {

nlohmann::json read_json_file(const std::filesystem::path& path) {
  // Opening a folder succeeds and reads as empty, which would be reported as bad JSON.
  if (std::filesystem::is_directory(path)) throw Error(path.string() + ": is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open file");
  std::stringstream contents;
  contents << in.rdbuf();
  try {
    return nlohmann::json::parse(contents.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(path.string() + ": not valid JSON (" + brief_parse_error(e) + ")");
  }
}

std::string escape_control_characters(std::string_view text) {
  std::string escaped;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7F) {
      escaped += c;
      continue;
    }
    char code[5];
    std::snprintf(code, sizeof code, "\\x%02X", byte);
    escaped += code;
  }
  return escaped;
}

namespace {

std::string cut_short(const std::string& text, std::size_t max_length) {
  return text.size() <= max_length ? text : text.substr(0, max_length - 3) + "...";
}

}  // namespace

std::string brief_json(const nlohmann::json& value) {
  return cut_short(value.dump(-1, ' ', /*ensure_ascii=*/true), 60);
}

std::string brief_parse_error(const nlohmann::json::parse_error& error) {
  return cut_short(error.what(), 200);
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
    fail(key, "must be a positive integer, got " + brief_json(value));
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
    fail(key, "must be a positive number, got " + brief_json(value));
  }
  return value.get<float>();
}

std::optional<std::string> JsonFile::optional_string(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  const auto& value = json_.at(key);
  if (!value.is_string()) fail(key, "must be a string, got " + brief_json(value));
  return value.get<std::string>();
}

std::string JsonFile::string(const std::string& key) const {
  auto value = optional_string(key);
  if (!value) fail(key, "is missing");
  return *value;
}

}  // namespace attn
