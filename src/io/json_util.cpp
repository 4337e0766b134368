#include "src/io/json_util.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <system_error>

#include "src/base/error.h"

namespace attn {
namespace {

using nlohmann::json;

// What errors about `file` (and its `part`) start with: "<file>: " or "<file>: header is ".
std::string subject(const std::string& file, std::string_view part) {
  return file + ": " + (part.empty() ? std::string() : std::string(part) + " is ");
}

// Length of the UTF-8 character that `text` starts with, when it is a well-formed one and not a
// control character (C1 controls U+0080..U+009F included); 0 otherwise.
std::size_t printable_utf8_length(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  if (lead >= 0x20 && lead < 0x7F) return 1;
  std::size_t length = 0;
  unsigned char second_min = 0x80, second_max = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    if (lead == 0xC2) second_min = 0xA0;  // U+0080..U+009F are control characters
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) second_min = 0xA0;  // overlong
    if (lead == 0xED) second_max = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) second_min = 0x90;  // overlong
    if (lead == 0xF4) second_max = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (text.size() < length || byte(1) < second_min || byte(1) > second_max) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return length;
}

std::string cut_short(const std::string& text, std::size_t max_length) {
  return text.size() <= max_length ? text : text.substr(0, max_length) + "...";
}

// Appends `value` as compact ASCII JSON, stopping once `out` holds more than kMaxQuotedChars
// characters. Every level of nesting writes at least one character, so the recursion is never
// deeper than that either.
void append_brief_json(const json& value, std::string& out) {
  if (out.size() > kMaxQuotedChars) return;
  const auto append_string = [&](const std::string& text) {
    out += json(text.substr(0, kMaxQuotedChars))
               .dump(-1, ' ', /*ensure_ascii=*/true, json::error_handler_t::replace);
  };
  if (value.is_object()) {
    out += '{';
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (out.size() > kMaxQuotedChars) return;
      if (it != value.begin()) out += ',';
      append_string(it.key());
      out += ':';
      append_brief_json(it.value(), out);
    }
    out += '}';
  } else if (value.is_array()) {
    out += '[';
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (out.size() > kMaxQuotedChars) return;
      if (it != value.begin()) out += ',';
      append_brief_json(*it, out);
    }
    out += ']';
  } else if (value.is_string()) {
    append_string(value.get_ref<const std::string&>());
  } else {
    out += value.dump();  // a number, true, false or null
  }
}

std::string format_number(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

}  // namespace

nlohmann::json read_json_file(const std::filesystem::path& path, std::size_t max_bytes) {
  return parse_json(read_model_file(path, max_bytes), path.string());
}

void check_json_depth(std::string_view text, const std::string& file, std::string_view part) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        throw Error(subject(file, part) + "JSON nested more than " + std::to_string(kMaxJsonDepth) +
                    " levels deep, past attn's limit");
      }
    } else if (c == ']' || c == '}') {
      --depth;  // unbalanced brackets are the parser's to report
    }
  }
}

nlohmann::json parse_json(std::string_view text, const std::string& file, std::string_view part) {
  check_json_depth(text, file, part);
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& error) {
    throw Error(invalid_json_message(file, part, error));
  }
}

void check_json(std::string_view text, const std::string& file, std::string_view part) {
  // A SAX handler that keeps nothing: only the syntax is checked.
  class SyntaxCheck final : public json::json_sax_t {
   public:
    SyntaxCheck(const std::string& file, std::string_view part) : file_(file), part_(part) {}
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return true; }
    bool key(string_t&) override { return true; }
    bool end_object() override { return true; }
    bool start_array(std::size_t) override { return true; }
    bool end_array() override { return true; }
    bool parse_error(std::size_t, const std::string&, const json::exception& error) override {
      throw Error(invalid_json_message(file_, part_, error));
    }

   private:
    const std::string& file_;
    std::string_view part_;
  };
  check_json_depth(text, file, part);
  SyntaxCheck check(file, part);
  json::sax_parse(text, &check);
}

std::string invalid_json_message(const std::string& file, std::string_view part,
                                 const nlohmann::json::exception& error) {
  std::string what = error.what();
  // nlohmann's messages start with "[json.exception.parse_error.101] "; that part is for us.
  if (what.starts_with("[json.exception.")) what.erase(0, what.find("] ") + 2);
  // Number overflow (out_of_range.406): "number overflow parsing '1e400'".
  constexpr std::string_view kOverflow = "number overflow parsing '";
  if (error.id == 406 && what.starts_with(kOverflow) && what.ends_with('\'')) {
    const std::string number = what.substr(kOverflow.size(), what.size() - kOverflow.size() - 1);
    what = "number " + number + " is out of range";
  }
  // A parse error quotes the token it stopped in, which for an unterminated string is the rest
  // of the file: keep the position and the start of the token.
  return subject(file, part) + "not valid JSON (" + brief_text(what, 200) + ")";
}

std::string brief_text(std::string_view text, std::size_t max_chars) {
  std::string out;
  std::size_t chars = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    if (chars == max_chars) return out + "...";
    const std::size_t length = printable_utf8_length(text.substr(i));
    if (length > 0) {
      out.append(text, i, length);
      i += length;
    } else {
      char code[5];
      std::snprintf(code, sizeof code, "\\x%02X", static_cast<unsigned char>(text[i]));
      out += code;
      i += 1;
    }
    ++chars;
  }
  return out;
}

double shortest(float value) {
  // to_chars writes the shortest decimal that reads back as the same float.
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::strtod(std::string(text, end).c_str(), nullptr);
}

std::string brief_json(const nlohmann::json& value) {
  std::string out;
  append_brief_json(value, out);
  return cut_short(out, kMaxQuotedChars);
}

// ---- JsonFile -------------------------------------------------------------------------------

JsonFile::JsonFile(const std::filesystem::path& path)
    : path_(path), json_(read_json_file(path, kMaxConfigBytes)) {
  if (!json_.is_object()) throw Error(path.string() + ": expected a JSON object at the top level");
}

JsonFile::JsonFile(const std::filesystem::path& path, nlohmann::json json, std::string key_prefix)
    : path_(path), json_(std::move(json)), key_prefix_(std::move(key_prefix)) {}

std::optional<JsonFile> JsonFile::optional_object(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  const nlohmann::json& value = json_.at(key);
  if (!value.is_object()) fail(key, "must be an object, got " + brief_json(value));
  return JsonFile(path_, value, key_prefix_ + key + ".");
}

bool JsonFile::has(const std::string& key) const {
  const auto it = json_.find(key);
  return it != json_.end() && !it->is_null();
}

void JsonFile::fail(const std::string& key, const std::string& problem) const {
  throw Error(path_.string() + ": field '" + brief_text(key_prefix_ + key) + "' " + problem);
}

std::optional<int> JsonFile::optional_positive_int(const std::string& key, int max) const {
  if (!has(key)) return std::nullopt;
  return positive_int(key, max);
}

std::optional<int> JsonFile::optional_int_in_range(const std::string& key, int min, int max) const {
  if (!has(key)) return std::nullopt;
  const nlohmann::json& value = json_.at(key);
  bool in_range = false;
  // A number past 2^63 is stored unsigned, and reading it as signed would wrap around.
  if (value.is_number_unsigned()) {
    const std::uint64_t number = value.get<std::uint64_t>();
    in_range =
        max >= 0 && number <= std::uint64_t(max) && (min <= 0 || number >= std::uint64_t(min));
  } else if (value.is_number_integer()) {
    const std::int64_t number = value.get<std::int64_t>();
    in_range = number >= min && number <= max;
  }
  if (!in_range) {
    fail(key, "must be an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                  ", got " + brief_json(value));
  }
  return static_cast<int>(value.get<std::int64_t>());
}

int JsonFile::positive_int(const std::string& key, int max) const {
  const auto it = json_.find(key);
  if (it == json_.end()) fail(key, "is missing");
  const std::string problem = "must be a positive integer, got " + brief_json(*it);
  if (!it->is_number_integer()) fail(key, problem);
  // A number past 2^63 is stored unsigned, and reading it as signed would wrap around.
  if (it->is_number_unsigned() ? it->get<std::uint64_t>() > std::uint64_t(max)
                               : it->get<std::int64_t>() > max) {
    fail(key, problem + " (attn's limit is " + std::to_string(max) + ")");
  }
  if (it->get<std::int64_t>() < 1) fail(key, problem);
  return static_cast<int>(it->get<std::int64_t>());
}

std::optional<float> JsonFile::optional_float_in_range(const std::string& key, double min,
                                                       double max) const {
  if (!has(key)) return std::nullopt;
  return float_in_range(key, min, max);
}

float JsonFile::float_in_range(const std::string& key, double min, double max) const {
  const auto it = json_.find(key);
  if (it == json_.end()) fail(key, "is missing");
  const bool in_range = it->is_number() && std::isfinite(it->get<double>()) &&
                        it->get<double>() >= min && it->get<double>() <= max;
  if (!in_range) {
    fail(key, std::string(min > 0 ? "must be a positive number" : "must be a number") + " from " +
                  format_number(min) + " to " + format_number(max) + ", got " + brief_json(*it));
  }
  return static_cast<float>(it->get<double>());
}

std::optional<std::string> JsonFile::optional_string(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return string(key);
}

std::optional<bool> JsonFile::optional_bool(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  const nlohmann::json& value = json_.at(key);
  if (!value.is_boolean()) fail(key, "must be true or false, got " + brief_json(value));
  return value.get<bool>();
}

std::string JsonFile::string(const std::string& key) const {
  const auto it = json_.find(key);
  if (it == json_.end()) fail(key, "is missing");
  if (!it->is_string()) fail(key, "must be a string, got " + brief_json(*it));
  return it->get<std::string>();
}

}  // namespace attn
