// The Jinja2 interpreter of chat templates: every snippet of the shared goldens and of
// tests/data/jinja_cases.json (expected outputs made by Jinja2 itself, see
// scripts/make_jinja_cases.py), the real templates, and hostile templates against the sandbox.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "src/jinja/template.h"
#include "tests/golden.h"
#include "tests/test_paths.h"

namespace {

using attn::jinja::RenderLimits;
using attn::jinja::Template;
using attn::jinja::TemplateError;
using attn::test::GoldenSet;
using attn::test::read_file;
using Json = nlohmann::ordered_json;

std::string render(std::string_view source, const Json& variables = Json::object(),
                   const RenderLimits& limits = {}) {
  return Template(source).render(variables, limits);
}

// One {"id", "template", "vars", "rendered" | "error_type"} case: the output byte for byte,
// or an error (raise_exception's with its exact message).
void check_case(const Json& c) {
  SCOPED_TRACE(c["id"].get<std::string>() + ": " + c["template"].get<std::string>());
  const std::string source = c["template"];
  if (c.contains("rendered")) {
    try {
      EXPECT_EQ(render(source, c["vars"]), c["rendered"].get<std::string>());
    } catch (const TemplateError& e) {
      ADD_FAILURE() << "unexpected error: " << e.what();
    }
    return;
  }
  try {
    const std::string out = render(source, c["vars"]);
    ADD_FAILURE() << "expected " << c["error_type"] << ", rendered: " << out;
  } catch (const TemplateError& e) {
    const bool raised = c["error_type"] == "TemplateError";
    EXPECT_EQ(e.raised_by_template(), raised) << e.what();
    if (raised) {
      EXPECT_EQ(e.message(), c["error"].get<std::string>());
    }
  }
}

TEST(JinjaGoldenFeatures, EverySnippetRendersAsJinja2Does) {
  ATTN_REQUIRE_SHARED();
  // ordered_jsonl: a template that iterates over a dict of "vars" renders its keys in Python's
  // order.
  int count = 0;
  for (const Json& line : GoldenSet("chat-templates").ordered_jsonl("jinja-features.jsonl")) {
    check_case(line);
    ++count;
  }
  EXPECT_EQ(count, 127);
}

TEST(JinjaGoldenTemplates, RealTemplatesRenderAConversation) {
  ATTN_REQUIRE_SHARED();
  const Json file = GoldenSet("chat-templates").ordered_json("templates.json");
  ASSERT_EQ(file["templates"].size(), 5u);
  for (const auto& [name, entry] : file["templates"].items()) {
    SCOPED_TRACE(name);
    Json variables = {{"messages", Json::array({{{"role", "system"}, {"content", "Be brief."}},
                                                {{"role", "user"}, {"content", "Hello!"}},
                                                {{"role", "assistant"}, {"content", "Hi."}},
                                                {{"role", "user"}, {"content", "Bye."}}})},
                      {"tools", nullptr},
                      {"documents", nullptr},
                      {"add_generation_prompt", true}};
    for (const auto& [key, value] : entry["special_tokens_map"].items()) variables[key] = value;
    std::string out;
    ASSERT_NO_THROW(out = Template(entry["chat_template"].get<std::string>()).render(variables));
    EXPECT_NE(out.find("Bye."), std::string::npos) << out;
  }
}

TEST(JinjaCases, EveryCaseRendersAsJinja2Does) {
  const Json cases =
      Json::parse(read_file(attn::test::source_dir() / "tests" / "data" / "jinja_cases.json"));
  ASSERT_GT(cases.size(), 100u);
  for (const Json& c : cases) check_case(c);
}

// ---- hostile templates: each bound is a TemplateError, never a hang or a crash -------------

void expect_error(std::string_view source, const RenderLimits& limits = {}) {
  SCOPED_TRACE(std::string(source.substr(0, 200)));
  EXPECT_THROW(render(source, Json::object(), limits), TemplateError);
}

TEST(JinjaHostile, HugeLoopsFailFast) {
  expect_error("{% for i in range(10**9) %}x{% endfor %}");
  expect_error("{{ range(10**9)|length }}");
  expect_error(
      "{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(1000) %}"
      "{% endfor %}{% endfor %}{% endfor %}");
  expect_error("{{ ([1] * 10**9)|length }}");
  RenderLimits small;
  small.max_loop_iterations = 10;
  expect_error("{% for i in range(11) %}{% endfor %}", small);
  EXPECT_EQ(render("{% for i in range(10) %}{{ i }}{% endfor %}", Json::object(), small),
            "0123456789");
}

TEST(JinjaHostile, RecursionThroughMacrosIsBounded) {
  expect_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  RenderLimits small;
  small.max_call_depth = 3;
  const std::string nested =
      "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}.{% endmacro %}";
  EXPECT_EQ(render(nested + "{{ f(2) }}", Json::object(), small), "...");
  expect_error(nested + "{{ f(3) }}", small);
}

TEST(JinjaHostile, OutputAndStringsAreBounded) {
  expect_error("{{ 'a' * 10**9 }}");
  expect_error("{{ 'abc' * 10**18 }}");
  expect_error(
      "{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}"
      "{% endfor %}");
  expect_error(
      "{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}"
      "{% endfor %}");
  RenderLimits small;
  small.max_output_bytes = 100;
  expect_error("{% for i in range(1000) %}abc{% endfor %}", small);
  expect_error("{{ 'x' * 101 }}", small);
  expect_error("{{ '%200s'|format('a') }}{{ 'x' * 200 }}", small);
}

TEST(JinjaHostile, DeepNestingIsASyntaxError) {
  expect_error("{{ " + std::string(100000, '[') + " }}");
  expect_error("{{ " + std::string(100000, '{') + " }}");
  expect_error("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}");
  expect_error("{{ " + std::string(100000, '-') + "1 }}");
  expect_error("{{ " + [] {
    std::string s;
    for (int i = 0; i < 100000; ++i) s += "not ";
    return s;
  }() + "1 }}");
  std::string blocks;
  for (int i = 0; i < 10000; ++i) blocks += "{% if true %}";
  expect_error(blocks);
  std::string loops;
  for (int i = 0; i < 10000; ++i) loops += "{% for x in [1] %}";
  expect_error(loops);
}

TEST(JinjaHostile, IntegerOverflowIsAnError) {
  expect_error("{{ 2**10000 }}");
  expect_error("{{ 9223372036854775807 + 1 }}");
  expect_error("{{ -9223372036854775807 - 2 }}");
  expect_error("{{ 3037000500 * 3037000500 }}");
  expect_error("{{ 99999999999999999999 }}");
  EXPECT_EQ(render("{{ 2**62 }}"), "4611686018427387904");
}

TEST(JinjaHostile, SandboxRefusesPrivateAttributesAndMutation) {
  expect_error("{{ ''.__class__.__mro__ }}");
  expect_error("{{ x.__class__ }}", RenderLimits{});
  expect_error("{% set xs = [1] %}{{ xs.append(2) }}");
  expect_error("{% set xs = [1] %}{{ xs.pop() }}");
  expect_error("{% set d = {} %}{{ d.update({'a': 1}) }}");
  expect_error("{% set d = {'a': 1} %}{{ d.pop('a') }}");
  expect_error("{% set d = {} %}{{ d.setdefault('a', 1) }}");
  expect_error("{% include 'other.html' %}");
  expect_error("{% import 'x' as y %}");
  expect_error("{% extends 'base' %}");
}

TEST(JinjaHostile, UndefinedUseIsAnError) {
  expect_error("{{ nothing.attribute }}");
  expect_error("{{ nothing['key'] }}");
  expect_error("{{ nothing + 1 }}");
  expect_error("{{ nothing() }}");
}

TEST(JinjaHostile, CyclesThroughNamespacesRender) {
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me.me is defined }}"),
            "True");
  EXPECT_EQ(render("{% set ns = namespace(a=1) %}{% set ns.me = [ns] %}{{ ns }}"),
            "<Namespace {'a': 1, 'me': [<Namespace {...}>]}>");
}

TEST(JinjaHostile, DeepValuesAndDeepMacroRecursionAreBounded) {
  expect_error(
      "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}"
      "{% endfor %}{{ ns.l }}");
  RenderLimits deep;
  deep.max_call_depth = 100000;
  const std::string nested = std::string(150, '(') + "f(n + 1)" + std::string(150, ')');
  expect_error("{% macro f(n) %}{{ " + nested + " }}{% endmacro %}{{ f(0) }}", deep);
}

void expect_syntax_error(std::string_view source, int line, int column) {
  SCOPED_TRACE(std::string(source));
  try {
    Template parsed(source);
    ADD_FAILURE() << "parsed without error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.column(), column) << e.what();
    EXPECT_FALSE(e.raised_by_template());
    EXPECT_EQ(std::string(e.what()), "line " + std::to_string(line) + ", column " +
                                         std::to_string(column) + ": " + e.message());
  }
}

TEST(JinjaSyntaxErrors, NameTheirLineAndColumn) {
  expect_syntax_error("{% if x %}unclosed", 1, 19);
  expect_syntax_error("line one\n  {{ 1 + }}", 2, 10);
  expect_syntax_error("a\nb\n{% endfor %}", 3, 4);
  expect_syntax_error("{{ 'unterminated }}", 1, 4);
  expect_syntax_error("{% for %}", 1, 8);
  expect_syntax_error("x {# comment", 1, 3);
  expect_syntax_error("é {{ ) }}", 1, 6);
  expect_syntax_error("{% break %}", 1, 4);
  expect_syntax_error("{% frobnicate %}", 1, 4);
}

TEST(JinjaRenderErrors, NameTheirLineAndColumn) {
  try {
    render("ok\n  {{ 'a' + 1 }}");
    ADD_FAILURE() << "rendered";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.column(), 10);
  }
  try {
    render("{{ raise_exception('custom message') }}");
    ADD_FAILURE() << "rendered";
  } catch (const TemplateError& e) {
    EXPECT_TRUE(e.raised_by_template());
    EXPECT_EQ(e.message(), "custom message");
  }
}

}  // namespace
