#pragma once

// How every tokenizer.json component reads its settings: a JSON value together with where it is
// in the file, so that an error names the file and the field in one line, e.g.
//   /m/tokenizer.json: pre_tokenizer.pretokenizers[1].behavior: "Foo" is not one of ...

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace attn::pipeline {

// How deep Sequence components (of normalizers, pre-tokenizers, post-processors, decoders) may
// nest: a hostile file could nest them deep enough to overflow the stack while building them, and
// real files nest at most two levels.
constexpr int kMaxSequenceNesting = 64;

class ConfigNode {
 public:
  // `file` is the path shown in errors; `path` the dotted place of `value` in it ("" for the
  // whole file).
  ConfigNode(const nlohmann::json& value, std::string file, std::string path = {});

  const nlohmann::json& value() const { return *value_; }
  // "file: path" (just "file" at the top).
  std::string where() const;

  // Whether this is an object with `key` set to something other than null.
  bool has(std::string_view key) const;
  // The value of `key` (an Error "... key is missing" when absent or null).
  ConfigNode at(std::string_view key) const;
  // Element `index` of an array.
  ConfigNode at(std::size_t index) const;
  // The number of elements of an array (an Error when this is not an array).
  std::size_t size() const;

  // Typed fields: an Error naming the field when it has another type; the *_or forms return
  // `fallback` when the field is absent or null.
  std::string string(std::string_view key) const;
  std::string string_or(std::string_view key, std::string_view fallback) const;
  bool boolean(std::string_view key) const;
  bool boolean_or(std::string_view key, bool fallback) const;
  std::int64_t integer(std::string_view key, std::int64_t min, std::int64_t max) const;
  std::int64_t integer_or(std::string_view key, std::int64_t min, std::int64_t max,
                          std::int64_t fallback) const;
  std::optional<double> number_or_null(std::string_view key) const;

  // The "type" field of a component (an Error when missing).
  std::string type() const { return string("type"); }

  // Throws Error(where() + ": " + message).
  [[noreturn]] void fail(std::string_view message) const;
  // Something attn does not implement, refused by name: "where: type \"X\" is not implemented
  // by attn" style messages built from `what` (e.g. "pre-tokenizer type \"UnicodeScripts\"").
  [[noreturn]] void refuse(std::string_view what) const;

 private:
  const nlohmann::json* value_;
  std::string file_;
  std::string path_;
};

}  // namespace attn::pipeline
