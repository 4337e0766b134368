#include "src/tokenizer/pipeline/config_node.h"

#include <string>
#include <utility>

#include "src/base/error.h"
#include "src/io/json_util.h"

namespace attn::pipeline {

using nlohmann::json;

ConfigNode::ConfigNode(const json& value, std::string file, std::string path)
    : value_(&value), file_(std::move(file)), path_(std::move(path)) {}

std::string ConfigNode::where() const { return path_.empty() ? file_ : file_ + ": " + path_; }

bool ConfigNode::has(std::string_view key) const {
  if (!value_->is_object()) return false;
  const auto found = value_->find(key);
  return found != value_->end() && !found->is_null();
}

ConfigNode ConfigNode::at(std::string_view key) const {
  const std::string child_path = path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  if (!value_->is_object()) fail("expected a JSON object, found " + brief_json(*value_));
  const auto found = value_->find(key);
  if (found == value_->end() || found->is_null()) {
    throw Error(file_ + ": " + child_path + " is missing");
  }
  return ConfigNode(*found, file_, child_path);
}

ConfigNode ConfigNode::at(std::size_t index) const {
  if (!value_->is_array()) fail("expected a JSON array, found " + brief_json(*value_));
  if (index >= value_->size()) fail("has no element " + std::to_string(index));
  return ConfigNode((*value_)[index], file_, path_ + "[" + std::to_string(index) + "]");
}

std::size_t ConfigNode::size() const {
  if (!value_->is_array()) fail("expected a JSON array, found " + brief_json(*value_));
  return value_->size();
}

std::string ConfigNode::string(std::string_view key) const {
  const ConfigNode field = at(key);
  if (!field.value().is_string())
    field.fail("expected a string, found " + brief_json(field.value()));
  return field.value().get<std::string>();
}

std::string ConfigNode::string_or(std::string_view key, std::string_view fallback) const {
  return has(key) ? string(key) : std::string(fallback);
}

bool ConfigNode::boolean(std::string_view key) const {
  const ConfigNode field = at(key);
  if (!field.value().is_boolean()) {
    field.fail("expected true or false, found " + brief_json(field.value()));
  }
  return field.value().get<bool>();
}

bool ConfigNode::boolean_or(std::string_view key, bool fallback) const {
  return has(key) ? boolean(key) : fallback;
}

std::int64_t ConfigNode::integer(std::string_view key, std::int64_t min, std::int64_t max) const {
  const ConfigNode field = at(key);
  const json& value = field.value();
  if (!value.is_number_integer()) field.fail("expected an integer, found " + brief_json(value));
  const bool too_large = value.is_number_unsigned()
                             ? value.get<std::uint64_t>() > static_cast<std::uint64_t>(max)
                             : value.get<std::int64_t>() > max;
  const bool too_small = value.is_number_unsigned() ? min > 0 && value.get<std::uint64_t>() <
                                                                     static_cast<std::uint64_t>(min)
                                                    : value.get<std::int64_t>() < min;
  if (too_large || too_small) {
    field.fail(brief_json(value) + " is out of range [" + std::to_string(min) + ", " +
               std::to_string(max) + "]");
  }
  return value.get<std::int64_t>();
}

std::int64_t ConfigNode::integer_or(std::string_view key, std::int64_t min, std::int64_t max,
                                    std::int64_t fallback) const {
  return has(key) ? integer(key, min, max) : fallback;
}

std::optional<double> ConfigNode::number_or_null(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  const ConfigNode field = at(key);
  if (!field.value().is_number())
    field.fail("expected a number, found " + brief_json(field.value()));
  return field.value().get<double>();
}

void ConfigNode::fail(std::string_view message) const {
  throw Error(where() + ": " + std::string(message));
}

void ConfigNode::refuse(std::string_view what) const {
  throw Error(where() + ": " + std::string(what) + " is not implemented by attn");
}

}  // namespace attn::pipeline
