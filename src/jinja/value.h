#pragma once

// The values a template computes with: Python's None, bool, int, float, str, list, tuple and
// dict, Jinja2's Undefined and namespace, and functions (macros, globals, bound methods). They
// print, compare and convert to JSON exactly as Python does, because chat templates print them.

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/base/error.h"

namespace attn::jinja {

// A failure while evaluating, before its position in the template is known: the renderer
// catches it at the innermost template node and rethrows it as a TemplateError there.
class EvalError : public Error {
 public:
  explicit EvalError(const std::string& message, bool raised_by_template = false)
      : Error(message), raised_by_template_(raised_by_template) {}
  bool raised_by_template() const { return raised_by_template_; }

 private:
  bool raised_by_template_;
};

class Value;
class Renderer;
using List = std::vector<Value>;

// Python's dict: insertion-ordered; keys compare as Python's == does (1 == 1.0 == True).
struct Dict {
  std::vector<std::pair<Value, Value>> entries;

  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value value);
};

// The arguments of a call: f(positional..., name=keyword...).
struct CallArgs {
  List positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// Anything callable from a template. A callable object (a for loop's `loop`) has attributes
// too (loop.index, ...).
struct Function {
  std::string name;
  std::function<Value(Renderer&, CallArgs&)> call;
  Dict attributes;
};

class Value {
 public:
  enum class Kind {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kTuple,
    kDict,
    kNamespace,
    kFunction,
  };

  // An Undefined; `hint` is what using it wrongly reports ("'x' is undefined").
  Value() = default;
  static Value undefined(std::string hint);
  static Value none();
  static Value boolean(bool b);
  static Value integer(std::int64_t i);
  static Value floating(double f);
  static Value string(std::string s);
  static Value list(List items);
  static Value tuple(List items);
  static Value dict(Dict d);
  static Value make_namespace(Dict attributes);
  static Value function(std::string name, std::function<Value(Renderer&, CallArgs&)> call,
                        Dict attributes = {});
  static Value from_json(const nlohmann::ordered_json& json);

  // Lists, tuples and dicts nest at most this deep, so that printing, comparing and freeing a
  // value never recurses far (a namespace, which can hold itself, counts as a leaf).
  static constexpr int kMaxNesting = 500;

  Kind kind() const { return kind_; }
  int nesting() const { return nesting_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  // Python's numbers: bool, int and float.
  bool is_number() const { return is_bool() || is_int() || is_float(); }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const { return kind_ == Kind::kTuple; }
  bool is_sequence_of_values() const { return is_list() || is_tuple(); }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kNamespace; }
  bool is_function() const { return kind_ == Kind::kFunction; }

  bool as_bool() const { return scalar_.b; }
  // An int or a bool as a Python int.
  std::int64_t as_int() const { return is_bool() ? std::int64_t{scalar_.b} : scalar_.i; }
  // Any number as a float.
  double as_float() const;
  const std::string& as_string() const { return *text_; }
  const List& as_list() const { return *list_; }
  // A list's items, which list.pop() and list.clear() change in place: every value holding the
  // list sees the change, as in Python.
  List& mutable_list() const { return *list_; }
  const Dict& as_dict() const { return *dict_; }
  // A namespace's attributes, which `{% set ns.x = ... %}` changes in place.
  Dict& namespace_attributes() const { return *dict_; }
  const Function& as_function() const { return *function_; }
  // An Undefined's hint.
  const std::string& undefined_hint() const { return *text_; }

  // Python's type(x).__name__.
  std::string type_name() const;
  // Python's bool(x); an Undefined is false.
  bool truthy() const;

 private:
  Kind kind_ = Kind::kUndefined;
  union {
    bool b;
    std::int64_t i;
    double f;
  } scalar_{};
  int nesting_ = 0;
  std::shared_ptr<const std::string> text_;  // a string, or an Undefined's hint
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<const Function> function_;
};

// Python's str(x) (an Undefined prints as "") and repr(x).
std::string to_str(const Value& value);
std::string repr(const Value& value);
// Python's repr of a float: the shortest text that reads back the same (1e+20, 0.1, 3.0).
std::string float_repr(double f);

// json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...). `indent` is
// empty for none. Fails on values JSON cannot hold (an Undefined, a function).
struct JsonOptions {
  std::optional<std::string> indent;
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};
std::string to_json(const Value& value, const JsonOptions& options);

// Python's ==, and < (which fails between types that do not order, like str and int).
bool equals(const Value& a, const Value& b);
bool less(const Value& a, const Value& b);

// UTF-8 <-> code points. Text that is not UTF-8 is an EvalError.
std::u32string to_code_points(std::string_view text);
std::string to_utf8(std::u32string_view code_points);
// The number of code points of UTF-8 text.
std::size_t code_point_count(std::string_view text);

}  // namespace attn::jinja
