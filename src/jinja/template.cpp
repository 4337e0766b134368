#include "src/jinja/template.h"

#include "src/jinja/lexer.h"
#include "src/jinja/parser.h"
#include "src/jinja/render.h"

namespace attn::jinja {

namespace {

// Blocks and brackets may nest this deep; the parser and the renderer recurse once per level,
// so the bound keeps any template far from the end of the stack.
constexpr int kMaxNesting = 200;

}  // namespace

TemplateError::TemplateError(std::string message, int line, int column, bool raised_by_template)
    : Error("line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message),
      message_(std::move(message)),
      line_(line),
      column_(column),
      raised_by_template_(raised_by_template) {}

struct Template::Parsed {
  Body body;
};

Template::Template(std::string_view source) {
  auto parsed = std::make_shared<Parsed>();
  parsed->body = parse(tokenize(normalize_source(source)), kMaxNesting);
  parsed_ = std::move(parsed);
}

Template::~Template() = default;
Template::Template(const Template&) = default;
Template& Template::operator=(const Template&) = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const nlohmann::ordered_json& variables,
                             const RenderLimits& limits) const {
  try {
    Renderer renderer(variables, limits);
    return renderer.render(parsed_->body);
  } catch (const TemplateError&) {
    throw;
  } catch (const Error& e) {
    throw TemplateError(e.what(), 1, 1, false);  // the variables themselves are unusable
  }
}

}  // namespace attn::jinja
