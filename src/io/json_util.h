#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace attn {

// Reads and parses a JSON file; errors name the file and say what is wrong.
nlohmann::json read_json_file(const std::filesystem::path& path);

// Text taken from a file, made safe to quote in a one-line error message: control characters
// (a newline in a tensor name, say) are written as \xNN.
std::string escape_control_characters(std::string_view text);

// A JSON value for an error message: compact, ASCII, and cut short when long.
std::string brief_json(const nlohmann::json& value);

// A JSON parse error for a one-line message, cut short when long: nlohmann quotes the whole
// token it stopped in, which for an unterminated string is the rest of the file.
std::string brief_parse_error(const nlohmann::json::parse_error& error);

// A parsed JSON object together with the file it came from, so that every error about a field
// names both ("config.json: field 'n_embd' must be a positive integer").
class JsonFile {
 public:
  explicit JsonFile(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  const nlohmann::json& json() const { return json_; }
  bool has(const std::string& key) const;

  int positive_int(const std::string& key) const;
  float positive_float(const std::string& key) const;
  std::string string(const std::string& key) const;

  std::optional<int> optional_positive_int(const std::string& key) const;
  std::optional<std::string> optional_string(const std::string& key) const;

  // An error about `key` in this file.
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;

 private:
  std::filesystem::path path_;
  nlohmann::json json_;
};

}  // namespace attn
