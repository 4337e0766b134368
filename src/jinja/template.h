#pragma once

// A Jinja2 template interpreter for chat templates: the part of Jinja2 that real chat templates
// use, rendering exactly as transformers' apply_chat_template does (Python jinja2 3.1 in an
// ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and loopcontrols; printing is
// Python's str()). See ../shared/golden/README.md, "Chat templates".

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "src/base/error.h"

namespace attn::jinja {

// The sandbox's bounds on one render; going past one is a TemplateError, never a hang.
struct RenderLimits {
  std::size_t max_output_bytes = std::size_t{64} << 20;  // the rendered text, and any one string
  std::int64_t max_loop_iterations = 1'000'000;          // all loops of one render together
  int max_call_depth = 100;                              // nested macro calls
};

// A template's failure: a syntax error (while parsing), or an error while rendering (a type
// error, an undefined value used where Jinja2 fails, a sandbox bound, raise_exception(msg)).
// what() is "line L, column C: message"; message() is the message alone.
class TemplateError : public Error {
 public:
  TemplateError(std::string message, int line, int column, bool raised_by_template);
  const std::string& message() const { return message_; }
  int line() const { return line_; }      // 1-based, in the template source
  int column() const { return column_; }  // 1-based
  // True for the template's own raise_exception(msg): message() is msg exactly.
  bool raised_by_template() const { return raised_by_template_; }

 private:
  std::string message_;
  int line_;
  int column_;
  bool raised_by_template_;
};

class Template {
 public:
  // Parses `source`; a syntax error is a TemplateError.
  explicit Template(std::string_view source);
  ~Template();
  // Copies share the parse, which rendering only reads: a server renders one template loaded
  // once for every request.
  Template(const Template&);
  Template& operator=(const Template&);
  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;

  // Renders with `variables`, a JSON object whose keys are the template's global names (beside
  // the globals raise_exception, strftime_now, namespace, range, ...). A JSON number with a '.'
  // or an exponent is a Python float, any other an int; object keys keep their order.
  std::string render(const nlohmann::ordered_json& variables,
                     const RenderLimits& limits = {}) const;

 private:
  struct Parsed;
  std::shared_ptr<const Parsed> parsed_;
};

}  // namespace attn::jinja
