// Attribute and item lookup in Jinja2's sandbox, and the Python methods of str, dict and list
// that chat templates call (message.content.startswith(...), d.get(...), ...).

#include <utf8proc.h>

#include <algorithm>

#include "src/base/unicode.h"
#include "src/jinja/builtins.h"

namespace attn::jinja {

Arguments::Arguments(std::string_view function, const CallArgs& args,
                     std::initializer_list<std::string_view> names)
    : values_(names.size(), nullptr) {
  const std::vector<std::string_view> parameters(names);
  for (std::size_t i = 0; i < args.positional.size(); ++i) {
    if (i < parameters.size()) {
      values_[i] = &args.positional[i];
    } else {
      rest_.push_back(args.positional[i]);
    }
  }
  for (const auto& [name, value] : args.keyword) {
    const auto it = std::find(parameters.begin(), parameters.end(), name);
    if (it == parameters.end()) {
      throw EvalError(std::string(function) + "() got an unexpected keyword argument '" + name +
                      "'");
    }
    const auto index = static_cast<std::size_t>(it - parameters.begin());
    if (values_[index]) {
      throw EvalError(std::string(function) + "() got multiple values for argument '" + name + "'");
    }
    values_[index] = &value;
  }
}

namespace {

// The methods ImmutableSandboxedEnvironment refuses because they change a list or dict
// (jinja2/sandbox.py's _mutable_spec, which lets a list pop() and clear()).
bool is_mutating(const Value& object, std::string_view name) {
  static constexpr std::string_view kList[] = {"append", "reverse", "insert",
                                               "sort",   "extend",  "remove"};
  static constexpr std::string_view kDict[] = {"clear", "pop", "popitem", "setdefault", "update"};
  if (object.is_list())
    return std::find(std::begin(kList), std::end(kList), name) != std::end(kList);
  if (object.is_dict())
    return std::find(std::begin(kDict), std::end(kDict), name) != std::end(kDict);
  return false;
}

constexpr std::string_view kStringMethods[] = {
    "startswith", "endswith", "strip",   "lstrip",       "rstrip",       "split",    "rsplit",
    "replace",    "upper",    "lower",   "title",        "capitalize",   "find",     "rfind",
    "count",      "join",     "format",  "splitlines",   "isdigit",      "isalpha",  "isalnum",
    "isspace",    "isupper",  "islower", "removeprefix", "removesuffix", "swapcase", "index"};
constexpr std::string_view kDictMethods[] = {"items", "keys", "values", "get"};
constexpr std::string_view kListMethods[] = {"index", "count"};        // a list's and a tuple's
constexpr std::string_view kChangingListMethods[] = {"pop", "clear"};  // a list's only

template <std::size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

// "'dict object'", as Jinja2's Undefined hints name an object. (Built by appending: GCC 12
// warns falsely on "'" + a temporary string.)
std::string described(const Value& v) {
  std::string out = "'";
  out.append(v.type_name()).append(" object'");
  return out;
}

}  // namespace

bool has_method(const Value& object, std::string_view name) {
  if (object.is_string()) return listed(kStringMethods, name);
  if (object.is_dict()) return listed(kDictMethods, name);
  if (object.is_list() && listed(kChangingListMethods, name)) return true;
  if (object.is_sequence_of_values()) return listed(kListMethods, name);
  return false;
}

Value get_attribute(const Value& object, const std::string& name) {
  if (object.is_undefined()) throw EvalError(object.undefined_hint());
  if (is_mutating(object, name) ||
      (!name.empty() && name[0] == '_' && !object.is_dict() && !object.is_namespace())) {
    throw EvalError("access to attribute '" + name + "' of '" + object.type_name() +
                    "' object is unsafe.");
  }
  if (has_method(object, name)) {
    return Value::function(name, [object, name](Renderer& renderer, CallArgs& args) {
      return call_method(renderer, object, name, args);
    });
  }
  if (object.is_dict() || object.is_namespace()) {
    const Dict& d = object.is_dict() ? object.as_dict() : object.namespace_attributes();
    if (const Value* found = d.find(std::string_view(name))) return *found;
    if (!name.empty() && name[0] == '_') {
      throw EvalError("access to attribute '" + name + "' of '" + object.type_name() +
                      "' object is unsafe.");
    }
  }
  if (object.is_function()) {
    if (const Value* found = object.as_function().attributes.find(std::string_view(name))) {
      return *found;
    }
  }
  return Value::undefined(described(object) + " has no attribute '" + name + "'");
}

Value get_item(const Value& object, const Value& key) {
  if (object.is_undefined()) throw EvalError(object.undefined_hint());
  if (object.is_dict() || object.is_namespace()) {
    const Dict& d = object.is_dict() ? object.as_dict() : object.namespace_attributes();
    if (const Value* found = d.find(key)) return *found;
  } else if (object.is_sequence_of_values() || object.is_string()) {
    if (key.is_int() || key.is_bool()) {
      std::int64_t index = key.as_int();
      if (object.is_string()) {
        const std::u32string chars = to_code_points(object.as_string());
        const auto size = static_cast<std::int64_t>(chars.size());
        if (index < 0) index += size;
        if (index >= 0 && index < size)
          return Value::string(to_utf8(chars.substr(static_cast<std::size_t>(index), 1)));
      } else {
        const auto size = static_cast<std::int64_t>(object.as_list().size());
        if (index < 0) index += size;
        if (index >= 0 && index < size) return object.as_list()[static_cast<std::size_t>(index)];
      }
      return Value::undefined(described(object) + " has no element " + repr(key));
    }
  }
  if (key.is_string()) return get_attribute(object, key.as_string());
  return Value::undefined(described(object) + " has no element " + repr(key));
}

namespace {

bool is_cased_upper(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c)) == UTF8PROC_CATEGORY_LU;
}
bool is_cased_lower(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c)) == UTF8PROC_CATEGORY_LL;
}
bool is_cased(char32_t c) {
  const auto category = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return category == UTF8PROC_CATEGORY_LU || category == UTF8PROC_CATEGORY_LL ||
         category == UTF8PROC_CATEGORY_LT;
}
bool is_alpha(char32_t c) {
  const auto category = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return category >= UTF8PROC_CATEGORY_LU && category <= UTF8PROC_CATEGORY_LO;
}
bool is_numeric(char32_t c) {
  const auto category = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return category >= UTF8PROC_CATEGORY_ND && category <= UTF8PROC_CATEGORY_NO;
}
char32_t to_upper(char32_t c) {
  return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c)));
}
char32_t to_title(char32_t c) {
  return static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c)));
}

const std::string& string_argument(const Value& v, std::string_view method) {
  if (!v.is_string()) {
    throw EvalError(std::string(method) + "() argument must be str, not " + v.type_name());
  }
  return v.as_string();
}

// str.strip(chars) and friends: `chars` null strips whitespace.
std::string strip(const std::string& text, const Value* chars, bool left, bool right) {
  const std::u32string s = to_code_points(text);
  std::u32string set;
  const bool whitespace = !chars || chars->is_none();
  if (!whitespace) set = to_code_points(string_argument(*chars, "strip"));
  auto strippable = [&](char32_t c) {
    return whitespace ? is_python_space(c) : set.find(c) != std::u32string::npos;
  };
  std::size_t begin = 0;
  std::size_t end = s.size();
  while (left && begin < end && strippable(s[begin])) ++begin;
  while (right && end > begin && strippable(s[end - 1])) --end;
  return to_utf8(std::u32string_view(s).substr(begin, end - begin));
}

std::int64_t max_splits(const Value* v) {
  if (!v) return -1;
  if (!v->is_int() && !v->is_bool()) throw EvalError("maxsplit must be an integer");
  return v->as_int();
}

Value split(Renderer& renderer, const std::string& text, const Value* separator_value,
            std::int64_t limit, bool from_right) {
  List parts;
  auto push = [&](std::string part) {
    renderer.check_materialize(parts.size() + 1);
    parts.push_back(Value::string(std::move(part)));
  };
  if (!separator_value || separator_value->is_none()) {
    std::u32string s = to_code_points(text);
    if (from_right) std::reverse(s.begin(), s.end());
    std::size_t i = 0;
    std::vector<std::u32string> words;
    while (true) {
      while (i < s.size() && is_python_space(s[i])) ++i;
      if (i >= s.size()) break;
      if (limit >= 0 && static_cast<std::int64_t>(words.size()) == limit) {
        words.push_back(s.substr(i));  // the rest, its far end unstripped
        break;
      }
      std::size_t j = i;
      while (j < s.size() && !is_python_space(s[j])) ++j;
      words.push_back(s.substr(i, j - i));
      i = j;
    }
    if (from_right) {
      std::reverse(words.begin(), words.end());
      for (auto& w : words) std::reverse(w.begin(), w.end());
    }
    for (const auto& w : words) push(to_utf8(w));
    return Value::list(std::move(parts));
  }
  const std::string& separator = string_argument(*separator_value, "split");
  if (separator.empty()) throw EvalError("empty separator");
  std::vector<std::string> pieces;
  if (!from_right) {
    std::size_t start = 0;
    for (std::size_t hit; (limit < 0 || static_cast<std::int64_t>(pieces.size()) < limit) &&
                          (hit = text.find(separator, start)) != std::string::npos;) {
      pieces.push_back(text.substr(start, hit - start));
      start = hit + separator.size();
    }
    pieces.push_back(text.substr(start));
  } else {
    std::size_t end = text.size();
    std::int64_t made = 0;
    while (limit < 0 || made < limit) {
      if (end < separator.size()) break;
      const std::size_t hit = text.rfind(separator, end - separator.size());
      if (hit == std::string::npos) break;
      pieces.push_back(text.substr(hit + separator.size(), end - hit - separator.size()));
      end = hit;
      ++made;
    }
    pieces.push_back(text.substr(0, end));
    std::reverse(pieces.begin(), pieces.end());
  }
  for (auto& piece : pieces) push(std::move(piece));
  return Value::list(std::move(parts));
}

// The characters str.splitlines() breaks at.
bool is_line_break(char32_t c) {
  return c == U'\n' || c == U'\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D ||
         c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029;
}

}  // namespace

std::vector<std::string> split_lines(const std::string& text, bool keep_ends) {
  const std::u32string s = to_code_points(text);
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!is_line_break(s[i])) continue;
    std::size_t end = i;
    if (s[i] == U'\r' && i + 1 < s.size() && s[i + 1] == U'\n') ++i;
    lines.push_back(
        to_utf8(std::u32string_view(s).substr(start, (keep_ends ? i + 1 : end) - start)));
    start = i + 1;
  }
  if (start < s.size()) lines.push_back(to_utf8(std::u32string_view(s).substr(start)));
  return lines;
}

std::string python_title(const std::string& text) {
  std::u32string out;
  bool previous_cased = false;
  for (char32_t c : to_code_points(text)) {
    if (previous_cased) {
      append_python_lower(out, c);
    } else {
      out += to_title(c);
    }
    previous_cased = is_cased(c);
  }
  return to_utf8(out);
}

std::string python_upper(const std::string& text) {
  std::u32string out;
  for (char32_t c : to_code_points(text)) {
    if (c == U'\u00DF') {
      out += U"SS";  // the one full (two-letter) uppercase mapping that text commonly meets
    } else {
      out += to_upper(c);
    }
  }
  return to_utf8(out);
}

std::string python_capitalize(const std::string& text) {
  const std::u32string s = to_code_points(text);
  if (s.empty()) return "";
  std::u32string out(1, to_title(s[0]));
  out += python_lower(std::u32string_view(s).substr(1));
  return to_utf8(out);
}

namespace {

// str.format() with "{}", "{0}" and "{name}" fields (no format specs or conversions).
std::string python_format(const std::string& format, const CallArgs& args) {
  std::string out;
  std::size_t automatic = 0;
  for (std::size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      throw EvalError("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const std::size_t close = format.find('}', i);
    if (close == std::string::npos) throw EvalError("Single '{' encountered in format string");
    const std::string field = format.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!.[") != std::string::npos) {
      throw EvalError("str.format(): format specs and conversions are not supported");
    }
    const Value* value = nullptr;
    if (field.empty() ||
        std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
      const std::size_t index = field.empty() ? automatic++ : std::stoul(field.substr(0, 9));
      if (index >= args.positional.size()) {
        throw EvalError("Replacement index " + std::to_string(index) +
                        " out of range for positional args tuple");
      }
      value = &args.positional[index];
    } else {
      for (const auto& [name, v] : args.keyword) {
        if (name == field) value = &v;
      }
      if (!value) throw EvalError("'" + field + "'");
    }
    out += to_str(*value);
    i = close;
  }
  return out;
}

std::int64_t code_point_index(const std::string& text, std::size_t byte_offset) {
  return static_cast<std::int64_t>(code_point_count(std::string_view(text).substr(0, byte_offset)));
}

Value string_method(Renderer& renderer, const std::string& s, std::string_view name,
                    const CallArgs& args) {
  auto bound = [&](std::initializer_list<std::string_view> names) {
    return Arguments(name, args, names);
  };
  auto check = [&](std::string result) {
    renderer.check_string_size(result.size());
    return Value::string(std::move(result));
  };
  if (name == "startswith" || name == "endswith") {
    const Arguments a = bound({"prefix"});
    if (!a.get(0)) throw EvalError(std::string(name) + "() takes at least 1 argument (0 given)");
    List candidates = a.get(0)->is_tuple() ? a.get(0)->as_list() : List{*a.get(0)};
    for (const Value& candidate : candidates) {
      const std::string& affix = string_argument(candidate, name);
      const bool hit = name == "startswith"
                           ? s.compare(0, affix.size(), affix) == 0
                           : s.size() >= affix.size() &&
                                 s.compare(s.size() - affix.size(), affix.size(), affix) == 0;
      if (hit) return Value::boolean(true);
    }
    return Value::boolean(false);
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const Arguments a = bound({"chars"});
    return Value::string(strip(s, a.get(0), name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    const Arguments a = bound({"sep", "maxsplit"});
    return split(renderer, s, a.get(0), max_splits(a.get(1)), name == "rsplit");
  }
  if (name == "replace") {
    const Arguments a = bound({"old", "new", "count"});
    if (!a.get(0) || !a.get(1)) throw EvalError("replace() takes at least 2 arguments");
    const std::string& old = string_argument(*a.get(0), name);
    const std::string& replacement = string_argument(*a.get(1), name);
    std::int64_t count = a.get(2) ? max_splits(a.get(2)) : -1;
    std::string out;
    if (old.empty()) {
      const std::u32string chars = to_code_points(s);
      for (std::size_t i = 0; i <= chars.size(); ++i) {
        if (count != 0) {
          out += replacement;
          --count;
        }
        if (i < chars.size()) append_utf8(out, chars[i]);
        renderer.check_string_size(out.size());
      }
      return Value::string(std::move(out));
    }
    std::size_t start = 0;
    for (std::size_t hit; count != 0 && (hit = s.find(old, start)) != std::string::npos; --count) {
      out.append(s, start, hit - start).append(replacement);
      renderer.check_string_size(out.size());
      start = hit + old.size();
    }
    out.append(s, start);
    return check(std::move(out));
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize" ||
      name == "swapcase") {
    (void)bound({});
    if (name == "upper") return Value::string(python_upper(s));
    if (name == "lower") return Value::string(python_lower(s, "a string"));
    if (name == "title") return Value::string(python_title(s));
    if (name == "capitalize") return Value::string(python_capitalize(s));
    std::u32string out;
    for (char32_t c : to_code_points(s)) {
      if (is_cased_upper(c)) {
        append_python_lower(out, c);
      } else {
        out += to_upper(c);
      }
    }
    return Value::string(to_utf8(out));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "count") {
    const Arguments a = bound({"sub"});
    if (!a.get(0)) throw EvalError(std::string(name) + "() takes at least 1 argument (0 given)");
    const std::string& sub = string_argument(*a.get(0), name);
    if (name == "count") {
      if (sub.empty()) return Value::integer(static_cast<std::int64_t>(code_point_count(s)) + 1);
      std::int64_t n = 0;
      for (std::size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size()))
        ++n;
      return Value::integer(n);
    }
    const std::size_t at = name == "rfind" ? s.rfind(sub) : s.find(sub);
    if (at == std::string::npos) {
      if (name == "index") throw EvalError("substring not found");
      return Value::integer(-1);
    }
    return Value::integer(code_point_index(s, at));
  }
  if (name == "join") {
    const Arguments a = bound({"iterable"});
    if (!a.get(0)) throw EvalError("join() takes exactly one argument (0 given)");
    std::string out;
    std::size_t i = 0;
    for (const Value& item : renderer.iterate(*a.get(0))) {
      if (!item.is_string()) {
        throw EvalError("sequence item " + std::to_string(i) + ": expected str instance, " +
                        item.type_name() + " found");
      }
      if (i++ > 0) out += s;
      out += item.as_string();
      renderer.check_string_size(out.size());
    }
    return Value::string(std::move(out));
  }
  if (name == "format") return check(python_format(s, args));
  if (name == "splitlines") {
    const Arguments a = bound({"keepends"});
    List lines;
    for (auto& line : split_lines(s, a.get_or(0, Value::boolean(false)).truthy())) {
      lines.push_back(Value::string(std::move(line)));
    }
    return Value::list(std::move(lines));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    const Arguments a = bound({"affix"});
    if (!a.get(0)) throw EvalError(std::string(name) + "() takes exactly one argument (0 given)");
    const std::string& affix = string_argument(*a.get(0), name);
    if (name == "removeprefix") {
      return Value::string(s.compare(0, affix.size(), affix) == 0 ? s.substr(affix.size()) : s);
    }
    const bool ends =
        s.size() >= affix.size() && s.compare(s.size() - affix.size(), affix.size(), affix) == 0;
    return Value::string(ends ? s.substr(0, s.size() - affix.size()) : s);
  }
  // The is...() predicates: false for the empty string.
  (void)bound({});
  const std::u32string chars = to_code_points(s);
  if (name == "isupper" || name == "islower") {
    bool any_cased = false;
    for (char32_t c : chars) {
      if (name == "isupper" ? is_cased_lower(c) : is_cased_upper(c)) return Value::boolean(false);
      any_cased = any_cased || is_cased(c);
    }
    return Value::boolean(any_cased);
  }
  bool all = !chars.empty();
  for (char32_t c : chars) {
    if (name == "isdigit") all = all && is_python_digit(c);
    if (name == "isalpha") all = all && is_alpha(c);
    if (name == "isalnum") all = all && (is_alpha(c) || is_numeric(c));
    if (name == "isspace") all = all && is_python_space(c);
  }
  return Value::boolean(all);
}

// list.pop([index]) and list.clear(), which change `items` in place.
Value pop_or_clear(List& items, std::string_view name, const CallArgs& args) {
  const std::string given = std::to_string(args.positional.size());
  if (!args.keyword.empty()) {
    throw EvalError("list." + std::string(name) + "() takes no keyword arguments");
  }
  if (name == "clear") {
    if (!args.positional.empty())
      throw EvalError("list.clear() takes no arguments (" + given + " given)");
    items.clear();
    return Value::none();
  }
  if (args.positional.size() > 1) throw EvalError("pop expected at most 1 argument, got " + given);
  std::int64_t index = -1;
  if (!args.positional.empty()) {
    const Value& position = args.positional[0];
    if (!position.is_int() && !position.is_bool()) {
      throw EvalError("'" + position.type_name() + "' object cannot be interpreted as an integer");
    }
    index = position.as_int();
  }
  if (items.empty()) throw EvalError("pop from empty list");
  const auto size = static_cast<std::int64_t>(items.size());
  if (index < 0) index += size;
  if (index < 0 || index >= size) throw EvalError("pop index out of range");
  const auto at = items.begin() + static_cast<std::ptrdiff_t>(index);
  Value popped = std::move(*at);
  items.erase(at);
  return popped;
}

}  // namespace

Value call_method(Renderer& renderer, const Value& object, std::string_view name,
                  const CallArgs& args) {
  if (object.is_string()) return string_method(renderer, object.as_string(), name, args);
  if (object.is_dict()) {
    const Dict& d = object.as_dict();
    if (name == "get") {
      const Arguments a(name, args, {"key", "default"});
      if (!a.get(0)) throw EvalError("get expected at least 1 argument, got 0");
      const Value* found = d.find(*a.get(0));
      return found ? *found : a.get_or(1, Value::none());
    }
    (void)Arguments(name, args, {});
    List out;
    for (const auto& [k, v] : d.entries) {
      if (name == "items") out.push_back(Value::tuple({k, v}));
      if (name == "keys") out.push_back(k);
      if (name == "values") out.push_back(v);
    }
    return Value::list(std::move(out));
  }
  if (object.is_list() && listed(kChangingListMethods, name)) {
    return pop_or_clear(object.mutable_list(), name, args);
  }
  if (object.is_sequence_of_values()) {
    const Arguments a(name, args, {"value"});
    if (!a.get(0)) throw EvalError(std::string(name) + "() takes exactly one argument (0 given)");
    const List& items = object.as_list();
    std::int64_t count = 0;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (!equals(items[i], *a.get(0))) continue;
      if (name == "index") return Value::integer(static_cast<std::int64_t>(i));
      ++count;
    }
    if (name == "index") throw EvalError(repr(*a.get(0)) + " is not in list");
    return Value::integer(count);
  }
  throw EvalError("'" + object.type_name() + "' object has no attribute '" + std::string(name) +
                  "'");
}

}  // namespace attn::jinja
