#pragma once

// What templates call by name: Jinja2's filters and tests (filters.cpp), attribute and item
// lookup with Python's str, dict and list methods (methods.cpp), and the argument binding they
// share. All fail with EvalError.

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/jinja/render.h"
#include "src/jinja/value.h"

namespace attn::jinja {

// A call's arguments bound to a function's parameter names, as Python binds them: positional
// first, then keywords; an unknown keyword or too many positionals is an error.
class Arguments {
 public:
  Arguments(std::string_view function, const CallArgs& args,
            std::initializer_list<std::string_view> names);
  // The argument of parameter `index`, or null when not given.
  const Value* get(std::size_t index) const { return values_[index]; }
  Value get_or(std::size_t index, Value fallback) const {
    return values_[index] ? *values_[index] : std::move(fallback);
  }
  // The positional arguments past the named parameters (for filters that pass them on).
  const std::vector<Value>& rest() const { return rest_; }

 private:
  std::vector<const Value*> values_;
  std::vector<Value> rest_;
};

// Jinja2's getattr (a.b: a Python attribute such as a method first, then the key) and getitem
// (a[b]: the key or index first, then the attribute). Missing gives an Undefined; an Undefined
// object, an unsafe attribute (a name starting with '_', a mutating method) is an EvalError.
Value get_attribute(const Value& object, const std::string& name);
Value get_item(const Value& object, const Value& key);

// Python's methods of str, dict and list: whether `object` has method `name`, and calling it.
bool has_method(const Value& object, std::string_view name);
Value call_method(Renderer& renderer, const Value& object, std::string_view name,
                  const CallArgs& args);

// Python's str.splitlines(), str.upper(), str.title() and str.capitalize() of UTF-8 text.
std::vector<std::string> split_lines(const std::string& text, bool keep_ends);
std::string python_upper(const std::string& text);
std::string python_title(const std::string& text);
std::string python_capitalize(const std::string& text);

// Filters and tests by name; an unknown name is an error.
Value apply_filter(Renderer& renderer, std::string_view name, const Value& input,
                   const CallArgs& args);
bool apply_test(Renderer& renderer, std::string_view name, const Value& input,
                const CallArgs& args);

// Python's printf-style `format % args` (the % operator on a string, and |format).
std::string percent_format(const std::string& format, const Value& args);

// Python's int arithmetic, failing instead of overflowing int64.
std::int64_t checked_add(std::int64_t a, std::int64_t b);
std::int64_t checked_multiply(std::int64_t a, std::int64_t b);

}  // namespace attn::jinja
