#include "src/jinja/render.h"

#include <cmath>
#include <ctime>

#include "src/jinja/builtins.h"

namespace attn::jinja {

namespace {

// ---- operators --------------------------------------------------------------------------------

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  throw EvalError("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" +
                  b.type_name() + "'");
}

void fail_if_undefined(const Value& value) {
  if (value.is_undefined()) throw EvalError(value.undefined_hint());
}

std::int64_t floor_divide(std::int64_t a, std::int64_t b) {
  if (b == 0) throw EvalError("integer division or modulo by zero");
  if (a == INT64_MIN && b == -1) throw EvalError("integer overflow in //");
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

std::int64_t floor_modulo(std::int64_t a, std::int64_t b) {
  if (b == 0) throw EvalError("integer division or modulo by zero");
  if (b == -1) return 0;
  std::int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Python's float divmod.
double float_modulo(double a, double b) {
  if (b == 0) throw EvalError("float modulo");
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  if (r == 0) r = std::copysign(0.0, b);
  return r;
}

double float_floor_divide(double a, double b) {
  if (b == 0) throw EvalError("float floor division by zero");
  const double r = std::fmod(a, b);
  double div = (a - r) / b;
  if (r != 0 && ((r < 0) != (b < 0))) div -= 1.0;
  if (div == 0) return std::copysign(0.0, a / b);
  const double floored = std::floor(div);
  return div - floored > 0.5 ? floored + 1.0 : floored;
}

Value power(const Value& a, const Value& b) {
  if (a.is_float() || b.is_float()) {
    const double x = a.as_float();
    const double y = b.as_float();
    if (x == 0 && y < 0) throw EvalError("0.0 cannot be raised to a negative power");
    const double r = std::pow(x, y);
    if (std::isinf(r) && !std::isinf(x)) throw EvalError("(34, 'Numerical result out of range')");
    if (std::isnan(r) && !std::isnan(x) && !std::isnan(y)) {
      throw EvalError("a negative number cannot be raised to a fractional power here");
    }
    return Value::floating(r);
  }
  std::int64_t base = a.as_int();
  std::int64_t exponent = b.as_int();
  if (exponent < 0) {
    if (base == 0) throw EvalError("0.0 cannot be raised to a negative power");
    return Value::floating(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
  }
  std::int64_t result = 1;
  while (exponent > 0) {
    if (exponent & 1) result = checked_multiply(result, base);
    exponent >>= 1;
    if (exponent > 0) base = checked_multiply(base, base);
  }
  return Value::integer(result);
}

}  // namespace

std::int64_t checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    throw EvalError("integer overflow: the result does not fit in 64 bits");
  }
  return r;
}

std::int64_t checked_multiply(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw EvalError("integer overflow: the result does not fit in 64 bits");
  }
  return r;
}

namespace {

Value repeat(Renderer& renderer, const Value& sequence, std::int64_t count) {
  if (count <= 0) {
    if (sequence.is_string()) return Value::string("");
    return sequence.is_tuple() ? Value::tuple({}) : Value::list({});
  }
  if (sequence.is_string()) {
    const std::string& s = sequence.as_string();
    if (!s.empty()) {
      renderer.check_string_size(
          static_cast<std::size_t>(checked_multiply(static_cast<std::int64_t>(s.size()), count)));
    }
    std::string out;
    out.reserve(s.size() * static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count && !s.empty(); ++i) out += s;
    return Value::string(std::move(out));
  }
  const List& items = sequence.as_list();
  renderer.check_materialize(
      static_cast<std::size_t>(checked_multiply(static_cast<std::int64_t>(items.size()), count)));
  List out;
  for (std::int64_t i = 0; i < count; ++i) out.insert(out.end(), items.begin(), items.end());
  return sequence.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

Value binary_operation(Renderer& renderer, const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string left = to_str(a);
    const std::string right = to_str(b);
    renderer.check_string_size(left.size() + right.size());
    return Value::string(left + right);
  }
  fail_if_undefined(a);
  fail_if_undefined(b);
  const bool numbers = a.is_number() && b.is_number();
  const bool any_float = a.is_float() || b.is_float();
  if (op == "+") {
    if (numbers) {
      return any_float ? Value::floating(a.as_float() + b.as_float())
                       : Value::integer(checked_add(a.as_int(), b.as_int()));
    }
    if (a.is_string() && b.is_string()) {
      renderer.check_string_size(a.as_string().size() + b.as_string().size());
      return Value::string(a.as_string() + b.as_string());
    }
    if (a.is_sequence_of_values() && a.kind() == b.kind()) {
      renderer.check_materialize(a.as_list().size() + b.as_list().size());
      List items = a.as_list();
      items.insert(items.end(), b.as_list().begin(), b.as_list().end());
      return a.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
    }
    if (a.is_string()) {
      throw EvalError("can only concatenate str (not \"" + b.type_name() + "\") to str");
    }
    if (a.is_list()) {
      throw EvalError("can only concatenate list (not \"" + b.type_name() + "\") to list");
    }
    unsupported("+", a, b);
  }
  if (op == "-") {
    if (!numbers) unsupported("-", a, b);
    return any_float ? Value::floating(a.as_float() - b.as_float())
                     : Value::integer(checked_add(a.as_int(), -b.as_int()));
  }
  if (op == "*") {
    if (numbers) {
      return any_float ? Value::floating(a.as_float() * b.as_float())
                       : Value::integer(checked_multiply(a.as_int(), b.as_int()));
    }
    const bool a_count = a.is_int() || a.is_bool();
    const bool b_count = b.is_int() || b.is_bool();
    if ((a.is_string() || a.is_sequence_of_values()) && b_count)
      return repeat(renderer, a, b.as_int());
    if ((b.is_string() || b.is_sequence_of_values()) && a_count)
      return repeat(renderer, b, a.as_int());
    throw EvalError("can't multiply sequence by non-int of type '" +
                    (a_count || a.is_float() ? a.type_name() : b.type_name()) + "'");
  }
  if (op == "/") {
    if (!numbers) unsupported("/", a, b);
    if (b.as_float() == 0) throw EvalError("division by zero");
    return Value::floating(a.as_float() / b.as_float());
  }
  if (op == "//") {
    if (!numbers) unsupported("//", a, b);
    return any_float ? Value::floating(float_floor_divide(a.as_float(), b.as_float()))
                     : Value::integer(floor_divide(a.as_int(), b.as_int()));
  }
  if (op == "%") {
    if (a.is_string()) {
      std::string formatted = percent_format(a.as_string(), b);
      renderer.check_string_size(formatted.size());
      return Value::string(std::move(formatted));
    }
    if (!numbers) unsupported("%", a, b);
    return any_float ? Value::floating(float_modulo(a.as_float(), b.as_float()))
                     : Value::integer(floor_modulo(a.as_int(), b.as_int()));
  }
  if (op == "**") {
    if (!numbers) unsupported("** or pow()", a, b);
    return power(a, b);
  }
  throw EvalError("unknown operator " + op);
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        throw EvalError("'in <string>' requires string as left operand, not " + item.type_name());
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      for (const Value& element : container.as_list()) {
        if (equals(element, item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      return container.as_dict().find(item) != nullptr;
    default:
      throw EvalError("argument of type '" + container.type_name() + "' is not iterable");
  }
}

bool compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "in") return contains(b, a);
  if (op == "not in") return !contains(b, a);
  fail_if_undefined(a);
  fail_if_undefined(b);
  if (op == "<") return less(a, b);
  if (op == ">") return less(b, a);
  if (op == "<=") return less(a, b) || equals(a, b);
  if (op == ">=") return less(b, a) || equals(a, b);
  throw EvalError("unknown comparison " + op);
}

// Python's slice.indices(): the start, stop and step a slice of a sequence of `length` means.
void slice_indices(std::int64_t length, const Value& start_value, const Value& stop_value,
                   const Value& step_value, std::int64_t* start, std::int64_t* stop,
                   std::int64_t* step) {
  auto index = [](const Value& v) -> std::optional<std::int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool()) {
      throw EvalError("slice indices must be integers or None");
    }
    return v.as_int();
  };
  *step = index(step_value).value_or(1);
  if (*step == 0) throw EvalError("slice step cannot be zero");
  if (*step == INT64_MIN) *step = -INT64_MAX;
  auto adjust = [&](std::optional<std::int64_t> v, std::int64_t fallback) {
    if (!v) return fallback;
    std::int64_t i = *v;
    if (i < 0) {
      i = i < -length ? (*step < 0 ? -1 : 0) : i + length;
    } else if (i >= length) {
      i = *step < 0 ? length - 1 : length;
    }
    return i;
  };
  *start = adjust(index(start_value), *step < 0 ? length - 1 : 0);
  *stop = adjust(index(stop_value), *step < 0 ? -1 : length);
}

}  // namespace

// The parser bounds how deep one template nests, but macro calls stack those nestings: this
// bounds the sum (and so the C++ stack the renderer uses), whatever max_call_depth allows.
constexpr int kMaxRenderNesting = 3000;

// Counts one level of the renderer's recursion for as long as it lives.
class NestingGuard {
 public:
  explicit NestingGuard(int& nesting) : nesting_(nesting) {
    if (++nesting_ > kMaxRenderNesting) {
      --nesting_;
      throw EvalError("statements, expressions and macro calls nest deeper than " +
                      std::to_string(kMaxRenderNesting));
    }
  }
  ~NestingGuard() { --nesting_; }
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;

 private:
  int& nesting_;
};

// Counts one macro call or recursive loop(items) call for as long as it lives; deeper than the
// sandbox's bound is an EvalError.
class CallDepthGuard {
 public:
  CallDepthGuard(int& depth, int max_depth) : depth_(depth) {
    if (depth_ >= max_depth) {
      throw EvalError("macro and recursive loop calls nest deeper than " +
                      std::to_string(max_depth) + ", the sandbox's bound");
    }
    ++depth_;
  }
  ~CallDepthGuard() { --depth_; }
  CallDepthGuard(const CallDepthGuard&) = delete;
  CallDepthGuard& operator=(const CallDepthGuard&) = delete;

 private:
  int& depth_;
};

// ---- the renderer -----------------------------------------------------------------------------

Renderer::Renderer(const nlohmann::ordered_json& variables, const RenderLimits& limits)
    : limits_(limits), frame_(std::make_shared<Frame>()) {
  globals_["range"] = Value::function("range", [](Renderer& renderer, CallArgs& args) {
    if (!args.keyword.empty()) throw EvalError("range() takes no keyword arguments");
    std::vector<std::int64_t> bounds;
    for (const Value& v : args.positional) {
      if (!v.is_int() && !v.is_bool()) {
        throw EvalError("'" + v.type_name() + "' object cannot be interpreted as an integer");
      }
      bounds.push_back(v.as_int());
    }
    if (bounds.empty() || bounds.size() > 3) throw EvalError("range expected 1 to 3 arguments");
    const std::int64_t start = bounds.size() == 1 ? 0 : bounds[0];
    const std::int64_t stop = bounds.size() == 1 ? bounds[0] : bounds[1];
    const std::int64_t step = bounds.size() == 3 ? bounds[2] : 1;
    if (step == 0) throw EvalError("range() arg 3 must not be zero");
    const long double span =
        step > 0 ? static_cast<long double>(stop) - start : static_cast<long double>(start) - stop;
    const long double count =
        span <= 0 ? 0 : std::ceil(span / std::fabs(static_cast<long double>(step)));
    if (count > static_cast<long double>(INT64_MAX)) throw EvalError("range() is too large");
    renderer.check_materialize(static_cast<std::size_t>(count));
    List items;
    items.reserve(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(count); ++i) {
      items.push_back(Value::integer(start + i * step));
    }
    return Value::list(std::move(items));
  });
  globals_["namespace"] = Value::function("namespace", [](Renderer& renderer, CallArgs& args) {
    Dict attributes;
    for (const Value& v : args.positional) {
      if (!v.is_dict()) throw EvalError("namespace() takes a dict or keyword arguments");
      for (const auto& [k, item] : v.as_dict().entries) attributes.set(k, item);
    }
    for (auto& [k, item] : args.keyword) attributes.set(Value::string(k), item);
    return renderer.make_namespace(std::move(attributes));
  });
  globals_["dict"] = Value::function("dict", [](Renderer&, CallArgs& args) {
    Dict d;
    for (const Value& v : args.positional) {
      if (!v.is_dict()) throw EvalError("dict() takes a dict or keyword arguments");
      for (const auto& [k, item] : v.as_dict().entries) d.set(k, item);
    }
    for (auto& [k, item] : args.keyword) d.set(Value::string(k), item);
    return Value::dict(std::move(d));
  });
  globals_["raise_exception"] = Value::function("raise_exception", [](Renderer&, CallArgs& args) {
    const Arguments bound("raise_exception", args, {"message"});
    throw EvalError(to_str(bound.get_or(0, Value::string(""))), true);
    return Value::none();
  });
  globals_["strftime_now"] = Value::function("strftime_now", [](Renderer&, CallArgs& args) {
    const Arguments bound("strftime_now", args, {"format"});
    const Value format = bound.get_or(0, Value::string(""));
    if (!format.is_string()) throw EvalError("strftime_now() argument must be str");
    if (format.as_string().size() > 256) throw EvalError("strftime_now(): the format is too long");
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    std::string buffer(4096, '\0');
    const std::size_t n =
        std::strftime(buffer.data(), buffer.size(), format.as_string().c_str(), &local);
    buffer.resize(n);
    return Value::string(buffer);
  });
  globals_["joiner"] = Value::function("joiner", [](Renderer&, CallArgs& args) {
    const Arguments bound("joiner", args, {"sep"});
    const std::string separator = to_str(bound.get_or(0, Value::string(", ")));
    auto used = std::make_shared<bool>(false);
    return Value::function("joiner", [separator, used](Renderer&, CallArgs&) {
      if (!*used) {
        *used = true;
        return Value::string("");
      }
      return Value::string(separator);
    });
  });
  if (!variables.is_object()) throw EvalError("the template's variables must be a JSON object");
  for (const auto& [name, value] : variables.items()) globals_[name] = Value::from_json(value);
}

Renderer::~Renderer() {
  // A namespace can hold itself (set ns.me = ns); emptying them all frees such cycles.
  for (Value& ns : namespaces_) ns.namespace_attributes().entries.clear();
}

Value Renderer::make_namespace(Dict attributes) {
  Value ns = Value::make_namespace(std::move(attributes));
  namespaces_.push_back(ns);
  return ns;
}

void Renderer::count_iterations(std::int64_t n) {
  iterations_ += n;
  if (iterations_ > limits_.max_loop_iterations) {
    throw EvalError("the template runs more than " + std::to_string(limits_.max_loop_iterations) +
                    " loop iterations, the sandbox's bound");
  }
}

void Renderer::check_materialize(std::size_t items) const {
  const std::int64_t left = limits_.max_loop_iterations - iterations_;
  if (items > static_cast<std::size_t>(std::max<std::int64_t>(left, 0))) {
    throw EvalError("a sequence of " + std::to_string(items) +
                    " items is more than the loop iterations the sandbox has left");
  }
}

void Renderer::check_string_size(std::size_t bytes) const {
  if (bytes > limits_.max_output_bytes) {
    throw EvalError("a string of " + std::to_string(bytes) + " bytes is longer than " +
                    std::to_string(limits_.max_output_bytes) + ", the sandbox's bound");
  }
}

List Renderer::iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      return value.as_list();
    case Value::Kind::kDict: {
      List keys;
      keys.reserve(value.as_dict().entries.size());
      for (const auto& [k, v] : value.as_dict().entries) keys.push_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      const std::u32string chars = to_code_points(value.as_string());
      check_materialize(chars.size());
      List items;
      items.reserve(chars.size());
      for (char32_t c : chars) items.push_back(Value::string(to_utf8(std::u32string(1, c))));
      return items;
    }
    default:
      throw EvalError("'" + value.type_name() + "' object is not iterable");
  }
}

std::string Renderer::render(const Body& body) {
  std::string out;
  output_ = &out;
  execute(body);
  return out;
}

void Renderer::emit(std::string_view text) {
  if (output_->size() + text.size() > limits_.max_output_bytes) {
    throw EvalError("the output is longer than " + std::to_string(limits_.max_output_bytes) +
                    " bytes, the sandbox's bound");
  }
  output_->append(text);
}

std::string Renderer::capture(const Body& body) {
  return capture([&] { execute(body); });
}

std::string Renderer::capture(const std::function<void()>& run) {
  std::string captured;
  std::string* outer = output_;
  output_ = &captured;
  try {
    run();
  } catch (...) {
    output_ = outer;
    throw;
  }
  output_ = outer;
  return captured;
}

Value Renderer::lookup(const std::string& name) const {
  for (const Frame* frame = frame_.get(); frame; frame = frame->parent.get()) {
    const auto it = frame->variables.find(name);
    if (it != frame->variables.end()) return it->second;
  }
  const auto it = globals_.find(name);
  if (it != globals_.end()) return it->second;
  return Value::undefined("'" + name + "' is undefined");
}

// ---- statements -------------------------------------------------------------------------------

Renderer::Flow Renderer::execute(const Body& body) {
  for (const StmtPtr& stmt : body) {
    const Flow flow = execute(*stmt);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Renderer::Flow Renderer::execute(const Stmt& stmt) {
  try {
    const NestingGuard guard(nesting_);
    switch (stmt.kind) {
      case Stmt::Kind::kText:
        emit(stmt.text);
        break;
      case Stmt::Kind::kOutput:
        emit(to_str(evaluate(*stmt.exprs[0])));
        break;
      case Stmt::Kind::kIf:
        for (std::size_t i = 0; i < stmt.bodies.size(); ++i) {
          if (i == stmt.exprs.size() || evaluate(*stmt.exprs[i]).truthy()) {
            return execute(stmt.bodies[i]);
          }
        }
        break;
      case Stmt::Kind::kFor:
        execute_for(stmt);
        break;
      case Stmt::Kind::kSet:
        assign(stmt.target, evaluate(*stmt.exprs[0]), *frame_);
        break;
      case Stmt::Kind::kSetBlock:
        assign(stmt.target, Value::string(capture(stmt.bodies[0])), *frame_);
        break;
      case Stmt::Kind::kMacro: {
        const Stmt* macro = &stmt;
        const std::weak_ptr<Frame> scope = frame_;
        frame_->variables[stmt.text] =
            Value::function(stmt.text, [macro, scope](Renderer& renderer, CallArgs& args) {
              return renderer.call_macro(*macro, scope, args);
            });
        break;
      }
      case Stmt::Kind::kCallBlock:
        execute_call_block(stmt);
        break;
      case Stmt::Kind::kFilterBlock: {
        const Value body = Value::string(capture(stmt.bodies[0]));
        const Value* outer = filter_block_input_;
        filter_block_input_ = &body;
        Value filtered;
        try {
          filtered = evaluate(*stmt.exprs[0]);
        } catch (...) {
          filter_block_input_ = outer;
          throw;
        }
        filter_block_input_ = outer;
        emit(to_str(filtered));
        break;
      }
      case Stmt::Kind::kBreak:
        return Flow::kBreak;
      case Stmt::Kind::kContinue:
        return Flow::kContinue;
      case Stmt::Kind::kScope:
        return execute(stmt.bodies[0]);
    }
  } catch (const TemplateError&) {
    throw;
  } catch (const EvalError& e) {
    throw TemplateError(e.what(), stmt.line, stmt.column, e.raised_by_template());
  } catch (const Error& e) {
    throw TemplateError(e.what(), stmt.line, stmt.column, false);
  }
  return Flow::kNormal;
}

void Renderer::assign(const Target& target, const Value& value, Frame& frame) {
  if (!target.attribute.empty()) {
    const Value ns = lookup(target.names[0]);
    if (!ns.is_namespace()) throw EvalError("cannot assign attribute on non-namespace object");
    ns.namespace_attributes().set(Value::string(target.attribute), value);
    return;
  }
  if (!target.unpack) {
    frame.variables[target.names[0]] = value;
    return;
  }
  const List items = iterate(value.is_undefined() ? Value::list({}) : value);
  if (value.is_undefined() || items.size() != target.names.size()) {
    throw EvalError(
        items.size() > target.names.size()
            ? "too many values to unpack (expected " + std::to_string(target.names.size()) + ")"
            : "not enough values to unpack (expected " + std::to_string(target.names.size()) +
                  ", got " + std::to_string(items.size()) + ")");
  }
  for (std::size_t i = 0; i < items.size(); ++i) frame.variables[target.names[i]] = items[i];
}

// Swaps in a scope for as long as it lives.
class ScopeGuard {
 public:
  ScopeGuard(std::shared_ptr<Frame>& current, std::shared_ptr<Frame> scope)
      : current_(current), outer_(std::move(current)) {
    current_ = std::move(scope);
  }
  ~ScopeGuard() { current_ = std::move(outer_); }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

 private:
  std::shared_ptr<Frame>& current_;
  std::shared_ptr<Frame> outer_;
};

void Renderer::execute_for(const Stmt& stmt) { loop_over(stmt, evaluate(*stmt.exprs[0]), 0); }

void Renderer::loop_over(const Stmt& stmt, const Value& iterable, std::int64_t depth0) {
  List items = iterate(iterable);
  if (stmt.exprs[1]) {
    // "for x in xs if cond" filters first: loop.index and loop.length count what is left.
    List kept;
    for (const Value& item : items) {
      count_iterations(1);
      ScopeGuard scope(frame_, std::make_shared<Frame>(Frame{{}, frame_}));
      assign(stmt.target, item, *frame_);
      if (evaluate(*stmt.exprs[1]).truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    execute(stmt.bodies[1]);
    return;
  }
  // The loop object, as jinja2's LoopContext, has attributes and can be called (only in a
  // recursive loop). It is made per iteration; its attribute names, loop.cycle and its call are
  // made once.
  const auto length = static_cast<std::int64_t>(items.size());
  auto index = std::make_shared<std::int64_t>(0);
  const Value cycle = Value::function("cycle", [index](Renderer&, CallArgs& args) {
    if (args.positional.empty()) throw EvalError("no items for cycling given");
    return args.positional[static_cast<std::size_t>(*index) % args.positional.size()];
  });
  const Stmt* loop = &stmt;
  const std::weak_ptr<Frame> loop_scope = frame_;
  const auto call_loop = [loop, loop_scope, depth0](Renderer& renderer, CallArgs& args) {
    return renderer.call_recursive_loop(*loop, loop_scope, depth0 + 1, args);
  };
  static constexpr const char* kKeys[] = {"index",  "index0", "revindex", "revindex0",
                                          "first",  "last",   "length",   "depth",
                                          "depth0", "cycle",  "previtem", "nextitem"};
  List keys;
  for (const char* key : kKeys) keys.push_back(Value::string(key));
  for (std::int64_t i = 0; i < length; ++i) {
    count_iterations(1);
    *index = i;
    Dict attributes;
    attributes.entries.reserve(12);
    const Value values[] = {Value::integer(i + 1),      Value::integer(i),
                            Value::integer(length - i), Value::integer(length - i - 1),
                            Value::boolean(i == 0),     Value::boolean(i == length - 1),
                            Value::integer(length),     Value::integer(depth0 + 1),
                            Value::integer(depth0),     cycle};
    for (std::size_t k = 0; k < std::size(values); ++k)
      attributes.entries.emplace_back(keys[k], values[k]);
    if (i > 0) attributes.entries.emplace_back(keys[10], items[static_cast<std::size_t>(i - 1)]);
    if (i + 1 < length)
      attributes.entries.emplace_back(keys[11], items[static_cast<std::size_t>(i + 1)]);
    ScopeGuard scope(frame_, std::make_shared<Frame>(Frame{{}, frame_}));
    frame_->variables["loop"] = Value::function("loop", call_loop, std::move(attributes));
    assign(stmt.target, items[static_cast<std::size_t>(i)], *frame_);
    if (execute(stmt.bodies[0]) == Flow::kBreak) break;
  }
}

Value Renderer::call_recursive_loop(const Stmt& loop, const std::weak_ptr<Frame>& scope,
                                    std::int64_t depth0, CallArgs& args) {
  if (!loop.recursive) {
    throw EvalError("The loop must have the 'recursive' marker to be called recursively.");
  }
  const Arguments bound("loop", args, {"iterable"});
  if (!bound.get(0) || !bound.rest().empty()) {
    throw EvalError("loop() takes exactly one argument, the items to loop over");
  }
  std::shared_ptr<Frame> parent = scope.lock();
  if (!parent) throw EvalError("loop() is called after its loop's scope ended");
  const CallDepthGuard depth(call_depth_, limits_.max_call_depth);
  ScopeGuard guard(frame_, parent);
  return Value::string(capture([&] { loop_over(loop, *bound.get(0), depth0); }));
}

Value Renderer::call_macro(const Stmt& macro, const std::weak_ptr<Frame>& scope, CallArgs& args) {
  std::shared_ptr<Frame> parent = scope.lock();
  if (!parent) throw EvalError("macro '" + macro.text + "' is called after its scope ended");
  auto frame = std::make_shared<Frame>(Frame{{}, parent});
  if (args.positional.size() > macro.parameters.size()) {
    throw EvalError("macro '" + macro.text + "' takes not more than " +
                    std::to_string(macro.parameters.size()) + " argument(s)");
  }
  std::vector<bool> given(macro.parameters.size(), false);
  for (std::size_t i = 0; i < args.positional.size(); ++i) {
    frame->variables[macro.parameters[i]] = args.positional[i];
    given[i] = true;
  }
  for (auto& [name, value] : args.keyword) {
    std::size_t i = 0;
    while (i < macro.parameters.size() && macro.parameters[i] != name) ++i;
    if (i < macro.parameters.size()) {
      if (given[i])
        throw EvalError("macro '" + macro.text + "' got multiple values for argument '" + name +
                        "'");
      given[i] = true;
    } else if (name != "caller") {
      throw EvalError("macro '" + macro.text + "' takes no keyword argument '" + name + "'");
    }
    frame->variables[name] = value;
  }
  const CallDepthGuard depth(call_depth_, limits_.max_call_depth);
  ScopeGuard guard(frame_, frame);
  for (std::size_t i = 0; i < macro.parameters.size(); ++i) {
    if (given[i]) continue;
    frame->variables[macro.parameters[i]] =
        macro.defaults[i]
            ? evaluate(*macro.defaults[i])
            : Value::undefined("parameter '" + macro.parameters[i] + "' was not provided");
  }
  return Value::string(capture(macro.bodies[0]));
}

void Renderer::execute_call_block(const Stmt& stmt) {
  const Expr& call = *stmt.exprs[0];
  const Value callee = evaluate(*call.children[0]);
  CallArgs args = evaluate_arguments(call, 1);
  const Stmt* block = &stmt;
  const std::weak_ptr<Frame> scope = frame_;
  args.keyword.emplace_back(
      "caller",
      Value::function("caller", [block, scope](Renderer& renderer, CallArgs& caller_args) {
        return renderer.call_macro(*block, scope, caller_args);
      }));
  emit(to_str(this->call(callee, args)));
}

Value Renderer::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) throw EvalError(callee.undefined_hint());
  if (!callee.is_function()) throw EvalError("'" + callee.type_name() + "' object is not callable");
  return callee.as_function().call(*this, args);
}

// ---- expressions ------------------------------------------------------------------------------

Value Renderer::evaluate(const Expr& expr) {
  try {
    const NestingGuard guard(nesting_);
    return evaluate_unchecked(expr);
  } catch (const TemplateError&) {
    throw;
  } catch (const EvalError& e) {
    throw TemplateError(e.what(), expr.line, expr.column, e.raised_by_template());
  } catch (const Error& e) {
    throw TemplateError(e.what(), expr.line, expr.column, false);
  }
}

CallArgs Renderer::evaluate_arguments(const Expr& expr, std::size_t first) {
  CallArgs args;
  const std::size_t keywords = expr.keyword_names.size();
  const std::size_t positional_end = expr.children.size() - keywords;
  for (std::size_t i = first; i < positional_end; ++i)
    args.positional.push_back(evaluate(*expr.children[i]));
  if (expr.star_args) {
    for (Value& item : iterate(evaluate(*expr.star_args)))
      args.positional.push_back(std::move(item));
  }
  for (std::size_t k = 0; k < keywords; ++k) {
    args.keyword.emplace_back(expr.keyword_names[k], evaluate(*expr.children[positional_end + k]));
  }
  if (expr.star_kwargs) {
    const Value mapping = evaluate(*expr.star_kwargs);
    fail_if_undefined(mapping);
    if (!mapping.is_dict()) {
      throw EvalError("argument after ** must be a mapping, not " + mapping.type_name());
    }
    for (const auto& [key, value] : mapping.as_dict().entries) {
      if (!key.is_string()) throw EvalError("keywords must be strings");
      for (const auto& [name, given] : args.keyword) {
        if (name == key.as_string()) {
          throw EvalError("got multiple values for keyword argument '" + name + "'");
        }
      }
      args.keyword.emplace_back(key.as_string(), value);
    }
  }
  return args;
}

Value Renderer::evaluate_call(const Expr& expr) {
  const Expr& callee = *expr.children[0];
  if (callee.kind == Expr::Kind::kAttribute) {
    // obj.method(...) calls Python's method directly, without a bound-method value.
    const Value object = evaluate(*callee.children[0]);
    if (!callee.name.empty() && callee.name[0] != '_' && has_method(object, callee.name)) {
      (void)get_attribute(object, callee.name);  // the sandbox's check of mutating methods
      CallArgs args = evaluate_arguments(expr, 1);
      return call_method(*this, object, callee.name, args);
    }
    const Value function = get_attribute(object, callee.name);
    CallArgs args = evaluate_arguments(expr, 1);
    return call(function, args);
  }
  const Value function = evaluate(callee);
  CallArgs args = evaluate_arguments(expr, 1);
  return call(function, args);
}

Value Renderer::evaluate_compare(const Expr& expr) {
  Value left = evaluate(*expr.children[0]);
  for (std::size_t i = 0; i < expr.ops.size(); ++i) {
    Value right = evaluate(*expr.children[i + 1]);
    if (!compare(expr.ops[i], left, right)) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Value Renderer::evaluate_slice(const Expr& expr) {
  const Value object = evaluate(*expr.children[0]);
  fail_if_undefined(object);
  auto part = [&](std::size_t i) {
    return expr.children[i] ? evaluate(*expr.children[i]) : Value::none();
  };
  const Value start_value = part(1);
  const Value stop_value = part(2);
  const Value step_value = part(3);
  std::int64_t start = 0;
  std::int64_t stop = 0;
  std::int64_t step = 0;
  if (object.is_string()) {
    const std::u32string chars = to_code_points(object.as_string());
    slice_indices(static_cast<std::int64_t>(chars.size()), start_value, stop_value, step_value,
                  &start, &stop, &step);
    std::u32string out;
    for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
      out += chars[static_cast<std::size_t>(i)];
    return Value::string(to_utf8(out));
  }
  if (object.is_sequence_of_values()) {
    const List& items = object.as_list();
    slice_indices(static_cast<std::int64_t>(items.size()), start_value, stop_value, step_value,
                  &start, &stop, &step);
    List out;
    for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
      out.push_back(items[static_cast<std::size_t>(i)]);
    return object.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }
  return Value::undefined("'" + object.type_name() + "' object is not subscriptable");
}

Value Renderer::evaluate_unchecked(const Expr& expr) {
  switch (expr.kind) {
    case Expr::Kind::kLiteral:
      return expr.literal;
    case Expr::Kind::kName:
      return lookup(expr.name);
    case Expr::Kind::kList:
    case Expr::Kind::kTuple: {
      List items;
      items.reserve(expr.children.size());
      for (const ExprPtr& child : expr.children) items.push_back(evaluate(*child));
      return expr.kind == Expr::Kind::kList ? Value::list(std::move(items))
                                            : Value::tuple(std::move(items));
    }
    case Expr::Kind::kDict: {
      Dict d;
      for (std::size_t i = 0; i + 1 < expr.children.size(); i += 2) {
        Value key = evaluate(*expr.children[i]);
        if (key.is_list() || key.is_dict() || key.is_namespace()) {
          throw EvalError("unhashable type: '" + key.type_name() + "'");
        }
        d.set(std::move(key), evaluate(*expr.children[i + 1]));
      }
      return Value::dict(std::move(d));
    }
    case Expr::Kind::kAttribute:
      return get_attribute(evaluate(*expr.children[0]), expr.name);
    case Expr::Kind::kItem:
      return get_item(evaluate(*expr.children[0]), evaluate(*expr.children[1]));
    case Expr::Kind::kSlice:
      return evaluate_slice(expr);
    case Expr::Kind::kCall:
      return evaluate_call(expr);
    case Expr::Kind::kFilter: {
      Value input;
      if (expr.children[0]) {
        input = evaluate(*expr.children[0]);
      } else if (filter_block_input_) {
        input = *filter_block_input_;
      }
      CallArgs args = evaluate_arguments(expr, 1);
      return apply_filter(*this, expr.name, input, args);
    }
    case Expr::Kind::kTest: {
      const Value input = evaluate(*expr.children[0]);
      CallArgs args = evaluate_arguments(expr, 1);
      return Value::boolean(apply_test(*this, expr.name, input, args));
    }
    case Expr::Kind::kNot:
      return Value::boolean(!evaluate(*expr.children[0]).truthy());
    case Expr::Kind::kNegate:
    case Expr::Kind::kPlus: {
      const Value v = evaluate(*expr.children[0]);
      fail_if_undefined(v);
      if (!v.is_number()) {
        throw EvalError("bad operand type for unary " +
                        std::string(expr.kind == Expr::Kind::kNegate ? "-" : "+") + ": '" +
                        v.type_name() + "'");
      }
      if (expr.kind == Expr::Kind::kPlus) return v.is_bool() ? Value::integer(v.as_int()) : v;
      if (v.is_float()) return Value::floating(-v.as_float());
      if (v.as_int() == INT64_MIN)
        throw EvalError("integer overflow: the result does not fit in 64 bits");
      return Value::integer(-v.as_int());
    }
    case Expr::Kind::kBinary:
      return binary_operation(*this, expr.name, evaluate(*expr.children[0]),
                              evaluate(*expr.children[1]));
    case Expr::Kind::kAnd: {
      Value left = evaluate(*expr.children[0]);
      return left.truthy() ? evaluate(*expr.children[1]) : left;
    }
    case Expr::Kind::kOr: {
      Value left = evaluate(*expr.children[0]);
      return left.truthy() ? left : evaluate(*expr.children[1]);
    }
    case Expr::Kind::kCompare:
      return evaluate_compare(expr);
    case Expr::Kind::kCondition:
      if (evaluate(*expr.children[1]).truthy()) return evaluate(*expr.children[0]);
      if (expr.children[2]) return evaluate(*expr.children[2]);
      return Value::undefined(
          "the inline if-expression evaluated to false and no else section was defined");
  }
  throw EvalError("unknown expression");
}

}  // namespace attn::jinja
