// Jinja2's builtin filters and tests (jinja2/filters.py, jinja2/tests.py), plus transformers'
// tojson, and Python's printf-style formatting that `%` and |format use.

#include <utf8proc.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "src/base/unicode.h"
#include "src/jinja/builtins.h"

namespace attn::jinja {

namespace {

std::int64_t int_argument(const Value& v, std::string_view what) {
  if (!v.is_int() && !v.is_bool()) {
    throw EvalError(std::string(what) + " must be an integer, not " + v.type_name());
  }
  return v.as_int();
}

// Jinja2's attribute getter for map(attribute=...), sort(attribute=...), ...: "a.b.0" looks up
// a, then b, then item 0, each as a[key].
Value get_path(const Value& item, const Value& attribute) {
  if (!attribute.is_string()) return get_item(item, attribute);
  Value current = item;
  const std::string& path = attribute.as_string();
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool digits =
        !part.empty() && part.size() < 18 &&
        std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    current = get_item(current, digits ? Value::integer(std::stoll(part)) : Value::string(part));
    if (dot == std::string::npos) return current;
    start = dot + 1;
  }
}

// The key sort, unique, min, max and dictsort compare by: strings lowercased unless
// case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string())
    return Value::string(python_lower(v.as_string(), "a string"));
  return v;
}

std::size_t length_of(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return 0;
    case Value::Kind::kString:
      return code_point_count(v.as_string());
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      return v.as_list().size();
    case Value::Kind::kDict:
      return v.as_dict().entries.size();
    case Value::Kind::kNamespace:
      return v.namespace_attributes().entries.size();
    case Value::Kind::kFunction:
      // A for loop's `loop` has a length, as jinja2's LoopContext does; other callables have none.
      if (const Value* length = v.as_function().attributes.find("length")) {
        return static_cast<std::size_t>(length->as_int());
      }
      throw EvalError("object of type '" + v.type_name() + "' has no len()");
    default:
      throw EvalError("object of type '" + v.type_name() + "' has no len()");
  }
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Python's float(text): surrounding whitespace allowed, decimal (with single underscores between
// digits) or inf/nan, nothing else.
std::optional<double> parse_float(const std::string& text) {
  const std::string stripped = python_strip(text, "a string");
  auto is_digit = [&](std::size_t i) {
    return i < stripped.size() && stripped[i] >= '0' && stripped[i] <= '9';
  };
  std::string s;
  for (std::size_t i = 0; i < stripped.size(); ++i) {
    if (stripped[i] != '_') {
      s += stripped[i];
    } else if (i == 0 || !is_digit(i - 1) || !is_digit(i + 1)) {
      return std::nullopt;
    }
  }
  if (s.empty() || s.find_first_of("xX") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return value;
}

// The value of an ASCII digit or letter as a digit (a or A is 10, ..., z or Z is 35); 36 for
// anything else, which no base accepts.
int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 36;
}

// Python's int(text, base) for a base of 0 or 2..36: surrounding whitespace, a sign, the base's
// prefix (0x, 0o or 0b: optional in base 16, 8 or 2; in base 0 it picks the base, else 10), then
// digits with single underscores between them (and one right after a prefix). Null where Python
// raises ValueError; a number beyond int64, which Python would hold, is an EvalError.
std::optional<std::int64_t> parse_int(const std::string& text, int base) {
  const std::string s = python_strip(text, "a string");
  std::size_t i = 0;
  const bool negative = !s.empty() && s[0] == '-';
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) ++i;
  auto at_prefix = [&](char letter) {
    return i + 1 < s.size() && s[i] == '0' &&
           std::tolower(static_cast<unsigned char>(s[i + 1])) == letter;
  };
  // Base 0 without a prefix is decimal without leading zeros ("017" is refused, "00" is 0).
  bool zero_only = false;
  if (base == 0) {
    base = at_prefix('x') ? 16 : at_prefix('o') ? 8 : at_prefix('b') ? 2 : 10;
    zero_only = base == 10 && i < s.size() && s[i] == '0';
  }
  bool underscore_allowed = false;
  if ((base == 16 && at_prefix('x')) || (base == 8 && at_prefix('o')) ||
      (base == 2 && at_prefix('b'))) {
    i += 2;
    underscore_allowed = true;
  }
  std::uint64_t magnitude = 0;
  bool overflow = false;
  bool any_digit = false;
  for (; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (!underscore_allowed) return std::nullopt;
      underscore_allowed = false;
      continue;
    }
    const int digit = digit_value(s[i]);
    if (digit >= base) return std::nullopt;
    overflow =
        overflow || __builtin_mul_overflow(magnitude, static_cast<std::uint64_t>(base), &magnitude);
    overflow = overflow ||
               __builtin_add_overflow(magnitude, static_cast<std::uint64_t>(digit), &magnitude);
    any_digit = true;
    underscore_allowed = true;
  }
  const bool trailing_underscore = !s.empty() && s.back() == '_';
  if (!any_digit || trailing_underscore || (zero_only && (overflow || magnitude != 0))) {
    return std::nullopt;
  }
  const std::uint64_t limit = negative ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
  if (overflow || magnitude > limit) {
    throw EvalError("integer overflow: the number does not fit in 64 bits");
  }
  return negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
}

// Python's int(f) of a float that is not NaN. Python raises OverflowError for an infinity; attn
// also for a value beyond int64, which Python would hold.
std::int64_t float_to_int(double f) {
  if (std::isinf(f)) throw EvalError("cannot convert float infinity to integer");
  const double truncated = std::trunc(f);
  if (truncated >= 9223372036854775808.0 || truncated < -9223372036854775808.0) {
    throw EvalError("integer overflow: " + float_repr(f) + " does not fit in 64 bits");
  }
  return static_cast<std::int64_t>(truncated);
}

Value round_value(const Value& value, std::int64_t precision, const std::string& method) {
  if (!value.is_number())
    throw EvalError("type " + value.type_name() + " doesn't define __round__ method");
  if (method != "common" && method != "ceil" && method != "floor") {
    throw EvalError("method must be common, ceil or floor");
  }
  precision = std::clamp<std::int64_t>(precision, -330, 330);
  if (method == "common") {
    if (!value.is_float()) return Value::integer(value.as_int());  // round(int, n) stays an int
    const double f = value.as_float();
    if (std::isnan(f) || std::isinf(f)) return value;
    if (precision >= 0) {
      // printf rounds the exact binary value half-to-even, as Python's round() does.
      char buffer[512];
      std::snprintf(buffer, sizeof buffer, "%.*f", static_cast<int>(precision), f);
      return Value::floating(std::strtod(buffer, nullptr));
    }
    const double scale = std::pow(10.0, static_cast<double>(-precision));
    return Value::floating(std::nearbyint(f / scale) * scale);
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double scaled = value.as_float() * scale;
  return Value::floating((method == "ceil" ? std::ceil(scaled) : std::floor(scaled)) / scale);
}

std::string center(const std::string& s, std::int64_t width) {
  const auto length = static_cast<std::int64_t>(code_point_count(s));
  if (width <= length) return s;
  width = std::min<std::int64_t>(width, 1 << 24);
  const std::int64_t pad = width - length;
  const std::int64_t left = pad / 2 + (pad & width & 1);
  return std::string(static_cast<std::size_t>(left), ' ') + s +
         std::string(static_cast<std::size_t>(pad - left), ' ');
}

std::string indent(const std::string& text, const Value& width, bool first, bool blank) {
  const std::string indentation =
      width.is_string() ? width.as_string()
                        : std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(
                                          int_argument(width, "width"), 0, 1 << 16)),
                                      ' ');
  const std::vector<std::string> lines = split_lines(text + "\n", false);
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += "\n";
      if (blank || !lines[i].empty()) out += indentation;
    }
    out += lines[i];
  }
  if (first) out = indentation + out;
  return out;
}

std::size_t word_count(const std::string& s) {
  std::size_t words = 0;
  bool in_word = false;
  for (char32_t c : to_code_points(s)) {
    const auto category = utf8proc_category(static_cast<utf8proc_int32_t>(c));
    const bool word_char =
        c == U'_' || (category >= UTF8PROC_CATEGORY_LU && category <= UTF8PROC_CATEGORY_NO);
    if (word_char && !in_word) ++words;
    in_word = word_char;
  }
  return words;
}

// jinja2's do_title: each run after whitespace, '-', or an opening bracket starts capitalized.
std::string jinja_title(const std::string& s) {
  std::u32string out;
  bool at_word_start = true;
  for (char32_t c : to_code_points(s)) {
    const bool separator =
        is_python_space(c) || c == U'-' || c == U'(' || c == U'{' || c == U'[' || c == U'<';
    if (separator) {
      out += c;
    } else if (at_word_start) {
      out += static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c)));
    } else {
      append_python_lower(out, c);
    }
    at_word_start = separator;
  }
  return to_utf8(out);
}

Value filter_tojson(const Value& input, const CallArgs& args) {
  const Arguments a("tojson", args, {"indent", "separators", "sort_keys"});
  JsonOptions options;
  if (const Value* indent = a.get(0); indent && !indent->is_none()) {
    options.indent = indent->is_string()
                         ? indent->as_string()
                         : std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(
                                           int_argument(*indent, "indent"), 0, 1 << 10)),
                                       ' ');
    options.item_separator = ",";
  }
  if (const Value* separators = a.get(1); separators && !separators->is_none()) {
    if (!separators->is_sequence_of_values() || separators->as_list().size() != 2 ||
        !separators->as_list()[0].is_string() || !separators->as_list()[1].is_string()) {
      throw EvalError("tojson: separators must be a pair of strings");
    }
    options.item_separator = separators->as_list()[0].as_string();
    options.key_separator = separators->as_list()[1].as_string();
  }
  options.sort_keys = a.get_or(2, Value::boolean(false)).truthy();
  return Value::string(to_json(input, options));
}

// select / reject / selectattr / rejectattr: keeps the items whose (attribute's) test result
// is `keep`.
Value select_items(Renderer& renderer, const Value& input, const CallArgs& args,
                   bool with_attribute, bool keep) {
  // jinja2 goes through a true input only: none, 0 or '' selects nothing, whatever the arguments.
  if (!input.truthy()) return Value::list({});
  std::size_t next = 0;
  Value attribute;
  if (with_attribute) {
    if (args.positional.empty()) throw EvalError("selectattr/rejectattr need an attribute");
    attribute = args.positional[next++];
  }
  std::string test;
  if (next < args.positional.size()) {
    if (!args.positional[next].is_string()) throw EvalError("the test name must be a string");
    test = args.positional[next++].as_string();
  }
  CallArgs test_args;
  test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(next),
                              args.positional.end());
  test_args.keyword = args.keyword;
  List out;
  for (const Value& item : renderer.iterate(input)) {
    const Value subject = with_attribute ? get_path(item, attribute) : item;
    const bool passed =
        test.empty() ? subject.truthy() : apply_test(renderer, test, subject, test_args);
    if (passed == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value filter_map(Renderer& renderer, const Value& input, const CallArgs& args) {
  // jinja2 maps a true input only: none, 0 or '' maps to nothing, whatever the arguments.
  if (!input.truthy()) return Value::list({});
  List out;
  bool by_attribute = false;
  Value attribute;
  Value fallback;
  for (const auto& [name, value] : args.keyword) {
    if (name == "attribute") {
      by_attribute = true;
      attribute = value;
    } else if (name == "default") {
      fallback = value;
    }
  }
  if (by_attribute) {
    for (const Value& item : renderer.iterate(input)) {
      Value v = get_path(item, attribute);
      out.push_back(v.is_undefined() && !fallback.is_undefined() ? fallback : v);
    }
    return Value::list(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string()) {
    throw EvalError("map() needs a filter name or attribute=");
  }
  CallArgs filter_args;
  filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
  filter_args.keyword = args.keyword;
  for (const Value& item : renderer.iterate(input)) {
    out.push_back(apply_filter(renderer, args.positional[0].as_string(), item, filter_args));
  }
  return Value::list(std::move(out));
}

List sorted(Renderer& renderer, const Value& input, bool reverse, bool case_sensitive,
            const Value* attribute) {
  List items = renderer.iterate(input);
  std::vector<std::pair<Value, std::size_t>> keys;
  for (std::size_t i = 0; i < items.size(); ++i) {
    keys.emplace_back(
        sort_key(attribute ? get_path(items[i], *attribute) : items[i], case_sensitive), i);
  }
  std::stable_sort(keys.begin(), keys.end(), [reverse](const auto& a, const auto& b) {
    return reverse ? less(b.first, a.first) : less(a.first, b.first);
  });
  List out;
  for (const auto& [key, index] : keys) out.push_back(items[index]);
  return out;
}

Value min_max(Renderer& renderer, const Value& input, const CallArgs& args, bool want_max) {
  const Arguments a(want_max ? "max" : "min", args, {"case_sensitive", "attribute"});
  const bool case_sensitive = a.get_or(0, Value::boolean(false)).truthy();
  const List items = renderer.iterate(input);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  std::size_t best = 0;
  Value best_key;
  for (std::size_t i = 0; i < items.size(); ++i) {
    Value key = sort_key(a.get(1) ? get_path(items[i], *a.get(1)) : items[i], case_sensitive);
    if (i == 0 || (want_max ? less(best_key, key) : less(key, best_key))) {
      best = i;
      best_key = std::move(key);
    }
  }
  return items[best];
}

Value filter_unique(Renderer& renderer, const Value& input, const CallArgs& args) {
  const Arguments a("unique", args, {"case_sensitive", "attribute"});
  const bool case_sensitive = a.get_or(0, Value::boolean(false)).truthy();
  List out;
  List seen;
  for (const Value& item : renderer.iterate(input)) {
    const Value key = sort_key(a.get(1) ? get_path(item, *a.get(1)) : item, case_sensitive);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); }))
      continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value filter_dictsort(const Value& input, const CallArgs& args) {
  const Arguments a("dictsort", args, {"case_sensitive", "by", "reverse"});
  if (!input.is_dict())
    throw EvalError("dictsort: the input must be a dict, not " + input.type_name());
  const bool case_sensitive = a.get_or(0, Value::boolean(false)).truthy();
  const Value by = a.get_or(1, Value::string("key"));
  if (!by.is_string() || (by.as_string() != "key" && by.as_string() != "value")) {
    throw EvalError("You can only sort by either \"key\" or \"value\"");
  }
  const std::size_t position = by.as_string() == "key" ? 0 : 1;
  const bool reverse = a.get_or(2, Value::boolean(false)).truthy();
  List pairs;
  for (const auto& [k, v] : input.as_dict().entries) pairs.push_back(Value::tuple({k, v}));
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    const Value kx = sort_key(x.as_list()[position], case_sensitive);
    const Value ky = sort_key(y.as_list()[position], case_sensitive);
    return reverse ? less(ky, kx) : less(kx, ky);
  });
  return Value::list(std::move(pairs));
}

Value filter_sum(Renderer& renderer, const Value& input, const CallArgs& args) {
  const Arguments a("sum", args, {"attribute", "start"});
  Value total = a.get_or(1, Value::integer(0));
  for (const Value& item : renderer.iterate(input)) {
    const Value v = a.get(0) ? get_path(item, *a.get(0)) : item;
    if (!total.is_number() || !v.is_number()) {
      throw EvalError("unsupported operand type(s) for +: '" + total.type_name() + "' and '" +
                      v.type_name() + "'");
    }
    total = total.is_float() || v.is_float()
                ? Value::floating(total.as_float() + v.as_float())
                : Value::integer(checked_add(total.as_int(), v.as_int()));
  }
  return total;
}

// jinja2's do_int: int(value, base) for a string and int(value) for anything else; where Python
// raises ValueError or TypeError, int(float(value)); where that raises too, the default. An
// Undefined and an infinity fail, past the fallback, as they do in Python.
Value filter_int(const Value& input, const CallArgs& args) {
  const Arguments a("int", args, {"default", "base"});
  if (input.is_undefined()) throw EvalError(input.undefined_hint());
  if (input.is_int() || input.is_bool()) return Value::integer(input.as_int());
  std::optional<double> number;
  if (input.is_string()) {
    // int(text, base) raises for a base that is not an int of 0 or 2..36: the float fallback
    // follows.
    const Value base = a.get_or(1, Value::integer(10));
    const bool valid_base = (base.is_int() || base.is_bool()) &&
                            (base.as_int() == 0 || (base.as_int() >= 2 && base.as_int() <= 36));
    if (valid_base) {
      if (const auto i = parse_int(input.as_string(), static_cast<int>(base.as_int()))) {
        return Value::integer(*i);
      }
    }
    number = parse_float(input.as_string());
  } else if (input.is_float()) {
    number = input.as_float();
  }
  if (!number || std::isnan(*number)) return a.get_or(0, Value::integer(0));
  return Value::integer(float_to_int(*number));
}

Value filter_float(const Value& input, const CallArgs& args) {
  const Arguments a("float", args, {"default"});
  const Value fallback = a.get_or(0, Value::floating(0.0));
  if (input.is_number()) return Value::floating(input.as_float());
  if (input.is_string()) {
    if (const auto f = parse_float(input.as_string())) return Value::floating(*f);
  }
  return fallback;
}

Value filter_truncate(const Value& input, const CallArgs& args) {
  const Arguments a("truncate", args, {"length", "killwords", "end", "leeway"});
  const std::u32string s = to_code_points(to_str(input));
  const std::int64_t length = int_argument(a.get_or(0, Value::integer(255)), "length");
  const bool kill_words = a.get_or(1, Value::boolean(false)).truthy();
  const std::u32string end = to_code_points(to_str(a.get_or(2, Value::string("..."))));
  const std::int64_t leeway = int_argument(a.get_or(3, Value::integer(5)), "leeway");
  if (length < static_cast<std::int64_t>(end.size()))
    throw EvalError("expected length >= " + std::to_string(end.size()));
  if (leeway < 0) throw EvalError("expected leeway >= 0");
  if (static_cast<std::int64_t>(s.size()) <= length + leeway) return Value::string(to_utf8(s));
  std::u32string kept = s.substr(0, static_cast<std::size_t>(length) - end.size());
  if (!kill_words) {
    const std::size_t space = kept.rfind(U' ');
    if (space != std::u32string::npos) kept.erase(space);
  }
  return Value::string(to_utf8(kept + end));
}

Value filter_batch(Renderer& renderer, const Value& input, const CallArgs& args) {
  const Arguments a("batch", args, {"linecount", "fill_with"});
  if (!a.get(0)) throw EvalError("batch() needs a line count");
  const std::int64_t count = int_argument(*a.get(0), "linecount");
  if (count <= 0) throw EvalError("batch(): the line count must be positive");
  List out;
  List row;
  for (const Value& item : renderer.iterate(input)) {
    row.push_back(item);
    if (static_cast<std::int64_t>(row.size()) == count)
      out.push_back(Value::list(std::exchange(row, {})));
  }
  if (!row.empty()) {
    if (a.get(1)) {
      while (static_cast<std::int64_t>(row.size()) < count) row.push_back(*a.get(1));
    }
    out.push_back(Value::list(std::move(row)));
  }
  return Value::list(std::move(out));
}

}  // namespace

Value apply_filter(Renderer& renderer, std::string_view name, const Value& input,
                   const CallArgs& args) {
  auto no_arguments = [&]() { (void)Arguments(name, args, {}); };
  auto text = [&]() { return to_str(input); };
  if (name == "tojson") return filter_tojson(input, args);
  if (name == "trim") {
    const Arguments a(name, args, {"chars"});
    return call_method(renderer, Value::string(text()), "strip", args);
  }
  if (name == "length" || name == "count") {
    no_arguments();
    return Value::integer(static_cast<std::int64_t>(length_of(input)));
  }
  if (name == "default" || name == "d") {
    const Arguments a(name, args, {"default_value", "boolean"});
    const bool boolean = a.get_or(1, Value::boolean(false)).truthy();
    if (input.is_undefined() || (boolean && !input.truthy())) return a.get_or(0, Value::string(""));
    return input;
  }
  if (name == "join") {
    const Arguments a(name, args, {"d", "attribute"});
    const std::string separator = to_str(a.get_or(0, Value::string("")));
    std::string out;
    bool first = true;
    for (const Value& item : renderer.iterate(input)) {
      if (!first) out += separator;
      first = false;
      out += to_str(a.get(1) ? get_path(item, *a.get(1)) : item);
      renderer.check_string_size(out.size());
    }
    return Value::string(std::move(out));
  }
  if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
    no_arguments();
    if (name == "upper") return Value::string(python_upper(text()));
    if (name == "lower") return Value::string(python_lower(text(), "a string"));
    if (name == "capitalize") return Value::string(python_capitalize(text()));
    return Value::string(jinja_title(text()));
  }
  if (name == "replace") return call_method(renderer, Value::string(text()), "replace", args);
  if (name == "first" || name == "last") {
    no_arguments();
    const List items = input.is_string() || !input.is_sequence_of_values() ? renderer.iterate(input)
                                                                           : input.as_list();
    if (items.empty())
      return Value::undefined("No " + std::string(name) + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") {
    no_arguments();
    return Value::list(renderer.iterate(input));
  }
  if (name == "string") {
    no_arguments();
    return Value::string(text());
  }
  if (name == "int") return filter_int(input, args);
  if (name == "float") return filter_float(input, args);
  if (name == "abs") {
    no_arguments();
    if (input.is_float()) return Value::floating(std::fabs(input.as_float()));
    if (!input.is_int() && !input.is_bool())
      throw EvalError("bad operand type for abs(): '" + input.type_name() + "'");
    if (input.as_int() == INT64_MIN)
      throw EvalError("integer overflow: the result does not fit in 64 bits");
    return Value::integer(std::llabs(input.as_int()));
  }
  if (name == "round") {
    const Arguments a(name, args, {"precision", "method"});
    const Value method = a.get_or(1, Value::string("common"));
    return round_value(input, int_argument(a.get_or(0, Value::integer(0)), "precision"),
                       to_str(method));
  }
  if (name == "items") {
    no_arguments();
    if (input.is_undefined()) return Value::list({});
    if (!input.is_dict())
      throw EvalError("items(): the input must be a dict, not " + input.type_name());
    return call_method(renderer, input, "items", CallArgs{});
  }
  if (name == "dictsort") return filter_dictsort(input, args);
  if (name == "map") return filter_map(renderer, input, args);
  if (name == "select" || name == "reject")
    return select_items(renderer, input, args, false, name == "select");
  if (name == "selectattr" || name == "rejectattr") {
    return select_items(renderer, input, args, true, name == "selectattr");
  }
  if (name == "unique") return filter_unique(renderer, input, args);
  if (name == "sort") {
    const Arguments a(name, args, {"reverse", "case_sensitive", "attribute"});
    return Value::list(sorted(renderer, input, a.get_or(0, Value::boolean(false)).truthy(),
                              a.get_or(1, Value::boolean(false)).truthy(), a.get(2)));
  }
  if (name == "reverse") {
    no_arguments();
    if (input.is_string()) {
      std::u32string chars = to_code_points(input.as_string());
      std::reverse(chars.begin(), chars.end());
      return Value::string(to_utf8(chars));
    }
    List items = renderer.iterate(input);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "min" || name == "max") return min_max(renderer, input, args, name == "max");
  if (name == "sum") return filter_sum(renderer, input, args);
  if (name == "indent") {
    const Arguments a(name, args, {"width", "first", "blank"});
    return Value::string(indent(text(), a.get_or(0, Value::integer(4)),
                                a.get_or(1, Value::boolean(false)).truthy(),
                                a.get_or(2, Value::boolean(false)).truthy()));
  }
  if (name == "wordcount") {
    no_arguments();
    return Value::integer(static_cast<std::int64_t>(word_count(text())));
  }
  if (name == "center") {
    const Arguments a(name, args, {"width"});
    return Value::string(center(text(), int_argument(a.get_or(0, Value::integer(80)), "width")));
  }
  if (name == "safe") {
    no_arguments();
    return input.is_string() ? input : Value::string(text());
  }
  if (name == "e" || name == "escape") {
    no_arguments();
    return Value::string(html_escape(text()));
  }
  if (name == "format") {
    if (!args.keyword.empty()) {
      Dict mapping;
      for (const auto& [k, v] : args.keyword) mapping.set(Value::string(k), v);
      return Value::string(percent_format(text(), Value::dict(std::move(mapping))));
    }
    return Value::string(percent_format(text(), Value::tuple(args.positional)));
  }
  if (name == "truncate") return filter_truncate(input, args);
  if (name == "batch") return filter_batch(renderer, input, args);
  if (name == "attr") {
    const Arguments a(name, args, {"name"});
    if (!a.get(0) || !a.get(0)->is_string()) throw EvalError("attr() needs an attribute name");
    // Python attributes only (methods, a namespace's), never a dict's keys.
    const std::string& attribute = a.get(0)->as_string();
    if (input.is_dict() && !has_method(input, attribute)) {
      return Value::undefined("'dict object' has no attribute '" + attribute + "'");
    }
    return get_attribute(input, attribute);
  }
  throw EvalError("No filter named '" + std::string(name) + "'.");
}

bool apply_test(Renderer& renderer, std::string_view name, const Value& input,
                const CallArgs& args) {
  auto other = [&]() {
    const Arguments a(name, args, {"other"});
    if (!a.get(0)) throw EvalError("the test '" + std::string(name) + "' needs an argument");
    return *a.get(0);
  };
  auto no_arguments = [&]() { (void)Arguments(name, args, {}); };
  if (name == "defined" || name == "undefined") {
    no_arguments();
    return input.is_undefined() == (name == "undefined");
  }
  if (name == "none") return no_arguments(), input.is_none();
  if (name == "boolean") return no_arguments(), input.is_bool();
  if (name == "true" || name == "false") {
    no_arguments();
    return input.is_bool() && input.as_bool() == (name == "true");
  }
  if (name == "integer") return no_arguments(), input.is_int();
  if (name == "float") return no_arguments(), input.is_float();
  if (name == "number") return no_arguments(), input.is_number();
  if (name == "string") return no_arguments(), input.is_string();
  if (name == "mapping") return no_arguments(), input.is_dict();
  if (name == "iterable" || name == "sequence") {
    no_arguments();
    return input.is_undefined() || input.is_string() || input.is_sequence_of_values() ||
           input.is_dict();
  }
  if (name == "callable") return no_arguments(), input.is_function() || input.is_undefined();
  if (name == "odd" || name == "even") {
    no_arguments();
    if (!input.is_number())
      throw EvalError("unsupported operand type(s) for %: '" + input.type_name() + "' and 'int'");
    const bool odd = input.is_float() ? std::fmod(std::fabs(input.as_float()), 2.0) == 1.0
                                      : (input.as_int() & 1) != 0;
    return odd == (name == "odd");
  }
  if (name == "divisibleby") {
    const Value divisor = other();
    if (!input.is_number() || !divisor.is_number()) throw EvalError("divisibleby needs numbers");
    if (divisor.as_float() == 0) throw EvalError("integer division or modulo by zero");
    if (input.is_float() || divisor.is_float())
      return std::fmod(input.as_float(), divisor.as_float()) == 0;
    return divisor.as_int() == -1 || input.as_int() % divisor.as_int() == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return equals(input, other());
  if (name == "ne" || name == "!=") return !equals(input, other());
  if (name == "lt" || name == "lessthan" || name == "<") return less(input, other());
  if (name == "le" || name == "<=") {
    const Value o = other();
    return less(input, o) || equals(input, o);
  }
  if (name == "gt" || name == "greaterthan" || name == ">") return less(other(), input);
  if (name == "ge" || name == ">=") {
    const Value o = other();
    return less(o, input) || equals(input, o);
  }
  if (name == "in") {
    const Value container = other();
    CallArgs contains_args;
    contains_args.positional.push_back(input);
    if (container.is_string()) {
      if (!input.is_string()) throw EvalError("'in <string>' requires string as left operand");
      return container.as_string().find(input.as_string()) != std::string::npos;
    }
    for (const Value& item : renderer.iterate(container)) {
      if (equals(item, input)) return true;
    }
    return false;
  }
  if (name == "lower" || name == "upper") {
    no_arguments();
    return call_method(renderer, Value::string(to_str(input)),
                       name == "lower" ? "islower" : "isupper", CallArgs{})
        .truthy();
  }
  if (name == "sameas") {
    const Value o = other();
    if (input.is_none() || input.is_bool() || input.is_undefined())
      return input.kind() == o.kind() && equals(input, o);
    return input.kind() == o.kind() && equals(input, o) && !input.is_sequence_of_values() &&
           !input.is_dict();
  }
  if (name == "escaped") return no_arguments(), false;
  throw EvalError("No test named '" + std::string(name) + "'.");
}

std::string percent_format(const std::string& format, const Value& args) {
  const List positional = args.is_tuple() ? args.as_list() : List{args};
  std::size_t next = 0;
  std::string out;
  for (std::size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (++i >= format.size()) throw EvalError("incomplete format");
    const Value* value = nullptr;
    if (format[i] == '(') {
      const std::size_t close = format.find(')', i);
      if (close == std::string::npos) throw EvalError("incomplete format key");
      if (!args.is_dict()) throw EvalError("format requires a mapping");
      value = args.as_dict().find(std::string_view(format).substr(i + 1, close - i - 1));
      if (!value) throw EvalError("'" + format.substr(i + 1, close - i - 1) + "'");
      i = close + 1;
    }
    std::string spec = "%";
    while (i < format.size() && std::string_view("-+ 0#").find(format[i]) != std::string_view::npos)
      spec += format[i++];
    int width_digits = 0;
    while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) {
      if (++width_digits > 4) throw EvalError("format width too large");
      spec += format[i++];
    }
    if (i < format.size() && format[i] == '.') {
      spec += format[i++];
      int precision_digits = 0;
      while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) {
        if (++precision_digits > 3) throw EvalError("format precision too large");
        spec += format[i++];
      }
    }
    if (i >= format.size()) throw EvalError("incomplete format");
    const char conversion = format[i];
    if (conversion == '%') {
      out += '%';
      continue;
    }
    if (!value) {
      if (next >= positional.size()) throw EvalError("not enough arguments for format string");
      value = &positional[next++];
    }
    std::vector<char> buffer(16384);
    auto print = [&](auto x) {
      const int n = std::snprintf(buffer.data(), buffer.size(), spec.c_str(), x);
      out.append(buffer.data(), static_cast<std::size_t>(std::max(n, 0)));
    };
    switch (conversion) {
      case 's':
      case 'r': {
        const std::string s = conversion == 's' ? to_str(*value) : repr(*value);
        if (spec == "%") {
          out += s;
          break;
        }
        buffer.resize(s.size() + 16384);
        spec += 's';
        print(s.c_str());
        break;
      }
      case 'd':
      case 'i':
      case 'x':
      case 'X':
      case 'o': {
        if (!value->is_number())
          throw EvalError("%d format: a real number is required, not " + value->type_name());
        const long long n =
            value->is_float() ? static_cast<long long>(value->as_float()) : value->as_int();
        spec += "ll";
        spec += conversion == 'i' ? 'd' : conversion;
        print(n);
        break;
      }
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G':
        if (!value->is_number()) throw EvalError("must be real number, not " + value->type_name());
        spec += conversion;
        print(value->as_float());
        break;
      default:
        throw EvalError(std::string("unsupported format character '") + conversion + "'");
    }
  }
  if (!args.is_dict() && next < positional.size() && args.is_tuple()) {
    throw EvalError("not all arguments converted during string formatting");
  }
  return out;
}

}  // namespace attn::jinja
