#include "src/jinja/value.h"

#include <utf8proc.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "src/base/unicode.h"

namespace attn::jinja {

// ---- construction -------------------------------------------------------------------------

Value Value::undefined(std::string hint) {
  Value v;
  v.text_ = std::make_shared<const std::string>(std::move(hint));
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.scalar_.b = b;
  return v;
}

Value Value::integer(std::int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.scalar_.i = i;
  return v;
}

Value Value::floating(double f) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.scalar_.f = f;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.text_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

namespace {

// The nesting of a container whose deepest member has `deepest`; too deep is an EvalError.
int nesting_above(int deepest) {
  if (deepest >= Value::kMaxNesting) {
    throw EvalError("lists and dicts nest deeper than " + std::to_string(Value::kMaxNesting));
  }
  return deepest + 1;
}

int nesting_around(const List& items) {
  int deepest = 0;
  for (const Value& item : items) deepest = std::max(deepest, item.nesting());
  return nesting_above(deepest);
}

}  // namespace

Value Value::list(List items) {
  Value v;
  v.kind_ = Kind::kList;
  v.nesting_ = nesting_around(items);
  v.list_ = std::make_shared<List>(std::move(items));
  return v;
}

Value Value::tuple(List items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::kTuple;
  return v;
}

Value Value::dict(Dict d) {
  Value v;
  v.kind_ = Kind::kDict;
  int deepest = 0;
  for (const auto& [key, item] : d.entries)
    deepest = std::max({deepest, key.nesting(), item.nesting()});
  v.nesting_ = nesting_above(deepest);
  v.dict_ = std::make_shared<Dict>(std::move(d));
  return v;
}

Value Value::make_namespace(Dict attributes) {
  Value v = dict(std::move(attributes));
  v.kind_ = Kind::kNamespace;
  v.nesting_ = 0;
  return v;
}

Value Value::function(std::string name, std::function<Value(Renderer&, CallArgs&)> call,
                      Dict attributes) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.function_ = std::make_shared<const Function>(
      Function{std::move(name), std::move(call), std::move(attributes)});
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& json) {
  using Type = nlohmann::ordered_json::value_t;
  switch (json.type()) {
    case Type::null:
      return none();
    case Type::boolean:
      return boolean(json.get<bool>());
    case Type::number_integer:
      return integer(json.get<std::int64_t>());
    case Type::number_unsigned: {
      const auto u = json.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) {
        throw EvalError("the variable number " + std::to_string(u) + " is too large");
      }
      return integer(static_cast<std::int64_t>(u));
    }
    case Type::number_float:
      return floating(json.get<double>());
    case Type::string:
      return string(json.get<std::string>());
    case Type::array: {
      List items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(from_json(item));
      return list(std::move(items));
    }
    case Type::object: {
      Dict d;
      d.entries.reserve(json.size());
      for (const auto& [key, item] : json.items())
        d.entries.emplace_back(string(key), from_json(item));
      return dict(std::move(d));
    }
    default:
      throw EvalError("a variable holds binary data, which templates cannot use");
  }
}

double Value::as_float() const { return is_float() ? scalar_.f : static_cast<double>(as_int()); }

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return "list";
    case Kind::kTuple:
      return "tuple";
    case Kind::kDict:
      return "dict";
    case Kind::kNamespace:
      return "Namespace";
    case Kind::kFunction:
      return "function";
  }
  return "object";
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return scalar_.b;
    case Kind::kInt:
      return scalar_.i != 0;
    case Kind::kFloat:
      return scalar_.f != 0.0;
    case Kind::kString:
      return !text_->empty();
    case Kind::kList:
    case Kind::kTuple:
      return !list_->empty();
    case Kind::kDict:
      return !dict_->entries.empty();
    case Kind::kNamespace:
    case Kind::kFunction:
      return true;
  }
  return true;
}

// ---- dict -------------------------------------------------------------------------------------

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : entries) {
    if (equals(k, key)) return &v;
  }
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k.is_string() && k.as_string() == key) return &v;
  }
  return nullptr;
}

void Dict::set(Value key, Value value) {
  for (auto& [k, v] : entries) {
    if (equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

// ---- UTF-8 ------------------------------------------------------------------------------------

std::u32string to_code_points(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t pos = 0;
  const auto size = static_cast<utf8proc_ssize_t>(text.size());
  while (pos < size) {
    utf8proc_int32_t c = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(bytes + pos, size - pos, &c);
    if (n <= 0) throw EvalError("a string is not valid UTF-8");
    out.push_back(static_cast<char32_t>(c));
    pos += n;
  }
  return out;
}

std::string to_utf8(std::u32string_view code_points) { return encode_utf8(code_points); }

std::size_t code_point_count(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// ---- printing ---------------------------------------------------------------------------------

std::string float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  // The shortest round-tripping digits, then Python's layout: positional for exponents -4..15,
  // scientific otherwise, and always a '.0' or an exponent so that it reads as a float.
  char buffer[64];
  const auto result =
      std::to_chars(buffer, buffer + sizeof buffer, f, std::chars_format::scientific);
  std::string text(buffer, result.ptr);
  const std::size_t e = text.find('e');
  const int exponent = std::stoi(text.substr(e + 1));
  std::string mantissa = text.substr(0, e);
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<std::size_t>(exponent) + 1 >= digits.size()) {
      out +=
          digits + std::string(static_cast<std::size_t>(exponent) + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<std::size_t>(exponent) + 1) + "." +
             digits.substr(static_cast<std::size_t>(exponent) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char exp_text[16];
  std::snprintf(exp_text, sizeof exp_text, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out + exp_text;
}

namespace {

// str.isprintable() of one character: not a control, format, surrogate, private-use,
// unassigned or separator character (the space excepted).
bool is_printable(char32_t c) {
  if (c == U' ') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

std::string string_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : to_code_points(s)) {
    if (c == static_cast<char32_t>(quote) || c == U'\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == U'\n') {
      out += "\\n";
    } else if (c == U'\r') {
      out += "\\r";
    } else if (c == U'\t') {
      out += "\\t";
    } else if (is_printable(c)) {
      append_utf8(out, c);
    } else {
      char escape[16];
      const auto code = static_cast<unsigned>(c);
      if (code < 0x100) {
        std::snprintf(escape, sizeof escape, "\\x%02x", code);
      } else if (code < 0x10000) {
        std::snprintf(escape, sizeof escape, "\\u%04x", code);
      } else {
        std::snprintf(escape, sizeof escape, "\\U%08x", code);
      }
      out += escape;
    }
  }
  return out + quote;
}

// repr(); `in_namespace` is true inside a namespace's attributes, where a namespace prints
// without its attributes, since a namespace can hold itself.
std::string repr_of(const Value& value, bool in_namespace);

std::string sequence_repr(const Value& value, bool in_namespace) {
  const List& items = value.as_list();
  std::string out = value.is_tuple() ? "(" : "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += repr_of(items[i], in_namespace);
  }
  if (value.is_tuple() && items.size() == 1) out += ",";
  return out + (value.is_tuple() ? ")" : "]");
}

}  // namespace

std::string to_str(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return "";
    case Value::Kind::kString:
      return value.as_string();
    default:
      return repr(value);
  }
}

namespace {

std::string repr_of(const Value& value, bool in_namespace) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return value.as_bool() ? "True" : "False";
    case Value::Kind::kInt:
      return std::to_string(value.as_int());
    case Value::Kind::kFloat:
      return float_repr(value.as_float());
    case Value::Kind::kString:
      return string_repr(value.as_string());
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      return sequence_repr(value, in_namespace);
    case Value::Kind::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : value.as_dict().entries) {
        if (!first) out += ", ";
        first = false;
        out += repr_of(k, in_namespace) + ": " + repr_of(v, in_namespace);
      }
      return out + "}";
    }
    case Value::Kind::kNamespace: {
      if (in_namespace) return "<Namespace {...}>";
      std::string out = "<Namespace {";
      bool first = true;
      for (const auto& [k, v] : value.namespace_attributes().entries) {
        if (!first) out += ", ";
        first = false;
        out += repr_of(k, true) + ": " + repr_of(v, true);
      }
      return out + "}>";
    }
    case Value::Kind::kFunction:
      return "<function " + value.as_function().name + ">";
  }
  return "";
}

}  // namespace

std::string repr(const Value& value) { return repr_of(value, false); }

// ---- JSON -------------------------------------------------------------------------------------

namespace {

void append_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          char escape[8];
          std::snprintf(escape, sizeof escape, "\\u%04x", c);
          out += escape;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

// json.dumps turns dict keys into strings: numbers as Python prints them, True as "true".
std::string json_key(const Value& key) {
  switch (key.kind()) {
    case Value::Kind::kString:
      return key.as_string();
    case Value::Kind::kBool:
      return key.as_bool() ? "true" : "false";
    case Value::Kind::kNone:
      return "null";
    case Value::Kind::kInt:
    case Value::Kind::kFloat:
      return repr(key);
    default:
      throw EvalError("keys must be str, int, float, bool or None, not " + key.type_name());
  }
}

void append_json(std::string& out, const Value& value, const JsonOptions& options, int depth) {
  if (depth > 200) throw EvalError("tojson: the value is nested too deeply");
  auto newline = [&](int level) {
    if (!options.indent) return;
    out += '\n';
    for (int i = 0; i < level; ++i) out += *options.indent;
  };
  switch (value.kind()) {
    case Value::Kind::kNone:
      out += "null";
      return;
    case Value::Kind::kBool:
      out += value.as_bool() ? "true" : "false";
      return;
    case Value::Kind::kInt:
      out += std::to_string(value.as_int());
      return;
    case Value::Kind::kFloat: {
      const double f = value.as_float();
      if (std::isnan(f)) {
        out += "NaN";
      } else if (std::isinf(f)) {
        out += f > 0 ? "Infinity" : "-Infinity";
      } else {
        out += float_repr(f);
      }
      return;
    }
    case Value::Kind::kString:
      append_json_string(out, value.as_string());
      return;
    case Value::Kind::kList:
    case Value::Kind::kTuple: {
      const List& items = value.as_list();
      if (items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += options.item_separator;
        newline(depth + 1);
        append_json(out, items[i], options, depth + 1);
      }
      newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::kDict: {
      std::vector<std::pair<std::string, const Value*>> entries;
      for (const auto& [k, v] : value.as_dict().entries) entries.emplace_back(json_key(k), &v);
      if (entries.empty()) {
        out += "{}";
        return;
      }
      if (options.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
      }
      out += '{';
      for (std::size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) out += options.item_separator;
        newline(depth + 1);
        append_json_string(out, entries[i].first);
        out += options.key_separator;
        append_json(out, *entries[i].second, options, depth + 1);
      }
      newline(depth);
      out += '}';
      return;
    }
    default:
      throw EvalError("Object of type " + value.type_name() + " is not JSON serializable");
  }
}

}  // namespace

std::string to_json(const Value& value, const JsonOptions& options) {
  std::string out;
  append_json(out, value, options, 0);
  return out;
}

// ---- comparison -------------------------------------------------------------------------------

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.as_string() == b.as_string();
    case Value::Kind::kList:
    case Value::Kind::kTuple: {
      const List& x = a.as_list();
      const List& y = b.as_list();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (!equals(x[i], y[i])) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      const Dict& x = a.as_dict();
      const Dict& y = b.as_dict();
      if (x.entries.size() != y.entries.size()) return false;
      for (const auto& [k, v] : x.entries) {
        const Value* other = y.find(k);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    }
    case Value::Kind::kNamespace:
      return &a.namespace_attributes() == &b.namespace_attributes();
    case Value::Kind::kFunction:
      return &a.as_function() == &b.as_function();
    default:
      return false;
  }
}

bool less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() < b.as_float();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();  // code point order
  if (a.kind() == b.kind() && a.is_sequence_of_values()) {
    const List& x = a.as_list();
    const List& y = b.as_list();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i])) return less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  throw EvalError("'<' not supported between instances of '" + a.type_name() + "' and '" +
                  b.type_name() + "'");
}

}  // namespace attn::jinja
