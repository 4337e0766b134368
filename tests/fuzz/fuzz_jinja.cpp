// The chat-template interpreter on arbitrary template source: parsing and rendering with small
// sandbox bounds and a small fixed set of variables. Any attn::Error (a TemplateError) is a
// correct answer; a crash, a sanitizer report, a hang or any other exception is a finding.

#include <nlohmann/json.hpp>
#include <string_view>

#include "src/base/error.h"
#include "src/jinja/template.h"

namespace {

const nlohmann::ordered_json& variables() {
  static const nlohmann::ordered_json vars = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": " Hi é 😀 "},
      {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nHello",
       "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": 1.5}}}]},
      {"role": "tool", "content": null},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image"}]}
    ],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "documents": null,
    "add_generation_prompt": true,
    "bos_token": "<s>",
    "eos_token": "</s>",
    "n": 3,
    "x": 2.5
  })");
  return vars;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  attn::jinja::RenderLimits limits;
  limits.max_output_bytes = 1 << 16;
  limits.max_loop_iterations = 10000;
  limits.max_call_depth = 20;
  try {
    const attn::jinja::Template parsed(source);
    (void)parsed.render(variables(), limits);
  } catch (const attn::Error&) {
  }
  return 0;
}
