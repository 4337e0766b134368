#pragma once

#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "src/base/files.h"

// Reading the JSON files of a model folder (config.json, tokenizer.json, ...) and quoting what
// they hold in error messages, safely: whatever a file contains, an error about it is one short,
// printable line.
namespace attn {

// Arrays and objects nested deeper than this are refused before parsing. Real files nest a few
// levels (tokenizer.json: 6); the limit keeps every recursive walk over a value (printing it,
// comparing it) far from the end of the stack.
constexpr int kMaxJsonDepth = 512;

// At most this many characters of any text or value from a file go into an error message.
constexpr std::size_t kMaxQuotedChars = 80;

// Reads and parses a JSON file of the model folder through read_model_file (a regular file of
// at most max_bytes: kMaxConfigBytes or kMaxTokenizerBytes). Errors name the file: "<path>: not
// valid JSON (parse error at line 2, ...)", "<path>: not valid JSON (number 1e400 is out of
// range)", "<path>: JSON nested more than 512 levels deep".
nlohmann::json read_json_file(const std::filesystem::path& path,
                              std::size_t max_bytes = kMaxConfigBytes);

// Parses JSON text from `file`, as read_json_file does. `part` names the part of the file the
// text is ("header" gives "<file>: header is not valid JSON (...)"); empty for the whole file.
nlohmann::json parse_json(std::string_view text, const std::string& file,
                          std::string_view part = {});

// Refuses text whose arrays and objects nest deeper than kMaxJsonDepth, naming file and part as
// parse_json does. For readers that parse with nlohmann's SAX interface.
void check_json_depth(std::string_view text, const std::string& file, std::string_view part = {});

// Refuses text that is not valid JSON or nests too deep, as parse_json does, without building
// anything from it. For readers that take the text apart with nlohmann's SAX interface and want
// syntax errors reported before anything they find in the content.
void check_json(std::string_view text, const std::string& file, std::string_view part = {});

// "<file>: [<part> is ]not valid JSON (<what nlohmann found, briefly>)", for a parse error or a
// number out of range, including those a SAX reader's parse_error() receives.
std::string invalid_json_message(const std::string& file, std::string_view part,
                                 const nlohmann::json::exception& error);

// Text from a file made safe to quote in a one-line error message: control characters and bytes
// that are not UTF-8 are written as \xNN (so an ESC or a newline in a token cannot reach the
// terminal raw), and text longer than max_chars characters is cut short with "...".
std::string brief_text(std::string_view text, std::size_t max_chars = kMaxQuotedChars);

// JSON text that never throws: bytes that are not UTF-8 (in a folder name, say) become U+FFFD.
template <class Json>
std::string json_text(const Json& json, int indent = -1) {
  return json.dump(indent, ' ', false, Json::error_handler_t::replace);
}

// A float as a JSON number in its shortest decimal form: 1.3f as 1.3, not as the
// 1.2999999523162842 of its double.
double shortest(float value);

// A JSON value for an error message: compact, ASCII, and at most kMaxQuotedChars characters
// ("[128,128,128,...").
std::string brief_json(const nlohmann::json& value);

// A parsed JSON object together with the file it came from, so that every error about a field
// names both ("config.json: field 'n_embd' must be a positive integer, got -1"). A field that is
// null counts as absent for the optional_* readers (Hugging Face writes "n_inner": null).
class JsonFile {
 public:
  static constexpr int kMaxConfigInt = 1 << 30;

  // Reads a config-sized file (kMaxConfigBytes) that must hold a JSON object.
  explicit JsonFile(const std::filesystem::path& path);

  // A nested object, `key` of this one (e.g. config.json's rope_scaling): its errors name the
  // field as "rope_scaling.factor". Absent when the key is missing or null; not an object is an
  // error.
  std::optional<JsonFile> optional_object(const std::string& key) const;

  const std::filesystem::path& path() const { return path_; }
  const nlohmann::json& json() const { return json_; }
  bool has(const std::string& key) const;

  // Integers from 1 to max ("must be a positive integer, got 0"; past max, the message adds
  // "(attn's limit is <max>)"); finite numbers within [min, max]. Wrong types are errors.
  int positive_int(const std::string& key, int max = kMaxConfigInt) const;
  float float_in_range(const std::string& key, double min, double max) const;
  std::string string(const std::string& key) const;

  std::optional<int> optional_positive_int(const std::string& key, int max = kMaxConfigInt) const;
  // An integer within [min, max] ("must be an integer from 0 to 511, got -1").
  std::optional<int> optional_int_in_range(const std::string& key, int min, int max) const;
  std::optional<float> optional_float_in_range(const std::string& key, double min,
                                               double max) const;
  std::optional<std::string> optional_string(const std::string& key) const;
  std::optional<bool> optional_bool(const std::string& key) const;

  // An error about `key` in this file.
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;

 private:
  JsonFile(const std::filesystem::path& path, nlohmann::json json, std::string key_prefix);

  std::filesystem::path path_;
  nlohmann::json json_;
  std::string key_prefix_;  // "" at the top level, "rope_scaling." in a nested object
};

}  // namespace attn
