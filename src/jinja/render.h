#pragma once

// The interpreter: walks a parsed template with the variables of one render, in a sandbox
// bounded by RenderLimits. Filters, tests and Python methods (builtins.h) call back into it.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/jinja/parser.h"
#include "src/jinja/template.h"
#include "src/jinja/value.h"

namespace attn::jinja {

// One scope of variables: the template's top level, a loop iteration, a macro call.
struct Frame {
  std::unordered_map<std::string, Value> variables;
  std::shared_ptr<Frame> parent;
};

class Renderer {
 public:
  Renderer(const nlohmann::ordered_json& variables, const RenderLimits& limits);
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  std::string render(const Body& body);

  // Calls a function value (a macro, a global, a bound method).
  Value call(const Value& callee, CallArgs& args);
  Value call_macro(const Stmt& macro, const std::weak_ptr<Frame>& scope, CallArgs& args);
  // Calling a for loop's `loop`: loop(items) runs a recursive loop again over items, `depth0`
  // levels down, in `scope` (where the loop runs), and gives its output.
  Value call_recursive_loop(const Stmt& loop, const std::weak_ptr<Frame>& scope,
                            std::int64_t depth0, CallArgs& args);

  // A namespace() the renderer keeps track of, so that cycles through it are broken at the end.
  Value make_namespace(Dict attributes);

  // The sandbox's bounds. count_iterations adds loop iterations; check_materialize fails when
  // building `items` more values would exceed what the loop budget has left (so range(10**9)
  // fails before allocating); check_string_size bounds any one string.
  void count_iterations(std::int64_t n);
  void check_materialize(std::size_t items) const;
  void check_string_size(std::size_t bytes) const;

  // The values a for loop (or |list) goes through: a list's items, a dict's keys, a string's
  // characters; an Undefined gives none. Anything else is an EvalError.
  List iterate(const Value& value);

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Flow execute(const Body& body);
  Flow execute(const Stmt& stmt);
  void execute_for(const Stmt& stmt);
  // A for loop's body over the items of `iterable` (or its else body when there are none),
  // `depth0` levels down a recursive loop.
  void loop_over(const Stmt& stmt, const Value& iterable, std::int64_t depth0);
  void execute_call_block(const Stmt& stmt);
  void assign(const Target& target, const Value& value, Frame& frame);
  // The output of running `body`, or `run`, instead of emitting it.
  std::string capture(const Body& body);
  std::string capture(const std::function<void()>& run);
  void emit(std::string_view text);

  Value evaluate(const Expr& expr);
  Value evaluate_unchecked(const Expr& expr);
  Value evaluate_call(const Expr& expr);
  Value evaluate_compare(const Expr& expr);
  Value evaluate_slice(const Expr& expr);
  CallArgs evaluate_arguments(const Expr& expr, std::size_t first);
  Value lookup(const std::string& name) const;

  const RenderLimits& limits_;
  std::unordered_map<std::string, Value> globals_;
  std::shared_ptr<Frame> frame_;
  std::string* output_ = nullptr;
  std::int64_t iterations_ = 0;
  int call_depth_ = 0;
  int nesting_ = 0;  // statements and expressions being evaluated inside one another
  const Value* filter_block_input_ = nullptr;  // the body of the {% filter %} being applied
  std::vector<Value> namespaces_;
};

}  // namespace attn::jinja
