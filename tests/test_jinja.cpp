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
  expect_error("{% set xs = [1] %}{{ xs.sort() }}");
  expect_error("{% set d = {} %}{{ d.update({'a': 1}) }}");
  expect_error("{% set d = {'a': 1} %}{{ d.pop('a') }}");
  expect_error("{% set d = {} %}{{ d.setdefault('a', 1) }}");
  expect_error("{% include 'other.html' %}");
  expect_error("{% import 'x' as y %}");
  expect_error("{% extends 'base' %}");
}

TEST(JinjaHostile, RecursiveLoopCallsAreBoundedAsMacroCallsAre) {
  // jinja2 renders "1234" (and fails with RecursionError without the `if`).
  const std::string nested =
      "{% for x in [1] recursive %}{{ loop.depth }}{% if loop.depth < 4 %}{{ loop([1]) }}"
      "{% endif %}{% endfor %}";
  RenderLimits small;
  small.max_call_depth = 3;
  EXPECT_EQ(render(nested, Json::object(), small), "1234");
  small.max_call_depth = 2;
  expect_error(nested, small);
  expect_error("{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}");
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

// ---- corner cases checked against jinja2: every expected string below is what jinja2 3.1's
// ImmutableSandboxedEnvironment (trim_blocks, lstrip_blocks, loopcontrols) renders, and every
// expect_error is a template jinja2 refuses (the comment names its exception).

TEST(JinjaCalls, StarArgumentsSpreadAnIterableAndADict) {
  EXPECT_EQ(render("{{ range(*[2, 4]) | list }}"), "[2, 3]");
  EXPECT_EQ(render("{{ range(1, *[5]) | list }}"), "[1, 2, 3, 4]");
  EXPECT_EQ(render("{% set args = [0, 6, 2] %}{{ range(*args) | list }}"), "[0, 2, 4]");
  EXPECT_EQ(render("{{ range(*{1: 'a', 3: 'b'}) | list }}"), "[1, 2]");
  EXPECT_EQ(render("{% macro m(a, b=2) %}{{ a }}-{{ b }}{% endmacro %}{{ m(*[1, 3]) }}|{{ "
                   "m(**{'a': 5}) }}|{{ m(*[1], **{'b': 7}) }}"),
            "1-3|5-2|1-7");
  EXPECT_EQ(
      render(
          "{% macro m(a) %}{{ a }}{{ caller() }}{% endmacro %}{% call m(*['x']) %}y{% endcall %}"),
      "xy");
  EXPECT_EQ(render("{{ dict(b=2, **{'a': 1}) }}"), "{'b': 2, 'a': 1}");
  EXPECT_EQ(render("{{ dict(k=1, *[]) }}"), "{'k': 1}");
  EXPECT_EQ(render("{{ namespace(**{'a': 1}).a }}"), "1");
  EXPECT_EQ(render("{{ 'a-b' | replace(*['-', '+']) }}"), "a+b");
  EXPECT_EQ(render("{{ [1, 2] | join(**{'d': '; '}) }}"), "1; 2");
  EXPECT_EQ(render("{{ 'a,b'.split(*[',']) }}"), "['a', 'b']");
  EXPECT_EQ(render("{{ 1 is divisibleby(*[1]) }}"), "True");
  EXPECT_EQ(render("{{ x | selectattr(*['a', 'equalto', 1]) | list }}",
                   Json::parse(R"({"x": [{"a": 1}, {"a": 2}]})")),
            "[{'a': 1}]");
  expect_error("{{ range(*[]) | list }}");                                    // TypeError
  expect_error("{{ range(*none) | list }}");                                  // TypeError
  expect_error("{{ range(*5) | list }}");                                     // TypeError
  expect_error("{{ dict(**[1]) }}");                                          // TypeError
  expect_error("{{ dict(**none) }}");                                         // TypeError
  expect_error("{{ dict(**x) }}");                                            // UndefinedError
  expect_error("{{ dict(**{1: 1}) }}");                                       // TypeError
  expect_error("{{ dict(a=1, **{'a': 2}) }}");                                // TypeError
  expect_error("{% macro m(a, b=2) %}{% endmacro %}{{ m(1, **{'a': 7}) }}");  // TypeError
  expect_error("{{ dict(**{'a': 1}, b=2) }}");                                // TemplateSyntaxError
  expect_error("{{ dict(**{'a': 1}, **{'b': 2}) }}");                         // TemplateSyntaxError
  expect_error("{{ range(*[1], 5) }}");                                       // TemplateSyntaxError
  expect_error("{{ range(*[1], *[5]) }}");                                    // TemplateSyntaxError
}

// select, reject, selectattr, rejectattr and map go through a true input only, so none (or 0,
// '', []) gives no items whatever the arguments; the other filters that iterate refuse none.
TEST(JinjaFilters, ListFiltersTakeNoneAsJinja2Does) {
  EXPECT_EQ(render("{{ none | selectattr(\"foo\", \"equalto\", \"bar\") | list }}"), "[]");
  EXPECT_EQ(render("{{ none | rejectattr(\"foo\") | list }}"), "[]");
  EXPECT_EQ(render("{{ none | select | list }}{{ none | reject(\"odd\") | list }}"), "[][]");
  EXPECT_EQ(render("{{ none | map(\"upper\") | list }}{{ none | map(attribute=\"a\") | list }}"),
            "[][]");
  EXPECT_EQ(render("{{ none | map(\"no such filter\") | list }}{{ none | selectattr | list }}"),
            "[][]");
  EXPECT_EQ(
      render("{{ 0 | select | list }}{{ '' | map(\"upper\") | list }}{{ [] | selectattr | list }}"),
      "[][][]");
  EXPECT_EQ(render("{{ none | selectattr(\"foo\") | first }}"), "");
  EXPECT_EQ(render("{{ none | map(\"upper\") | join(\",\") }}"), "");
  EXPECT_EQ(render("{{ x | select | list }}"), "[]");
  EXPECT_EQ(render("{{ none | tojson }}{{ none | string }}{{ none | trim }}{{ none | wordcount }}"),
            "nullNoneNone1");
  expect_error("{% for x in none %}{% endfor %}");       // TypeError
  expect_error("{{ none | list }}");                     // TypeError
  expect_error("{{ none | join(\",\") }}");              // TypeError
  expect_error("{{ none | sort }}");                     // TypeError
  expect_error("{{ none | unique | list }}");            // TypeError
  expect_error("{{ none | first }}");                    // TypeError
  expect_error("{{ none | last }}");                     // TypeError
  expect_error("{{ none | length }}");                   // TypeError
  expect_error("{{ none | count }}");                    // TypeError
  expect_error("{{ none | reverse }}");                  // FilterArgumentError
  expect_error("{{ none | min }}");                      // TypeError
  expect_error("{{ none | max }}");                      // TypeError
  expect_error("{{ none | sum }}");                      // TypeError
  expect_error("{{ none | batch(2) | list }}");          // TypeError
  expect_error("{{ none | dictsort }}");                 // AttributeError
  expect_error("{{ none | items | list }}");             // TypeError
  expect_error("{{ 1 | select | list }}");               // TypeError
  expect_error("{{ 1 | map(\"upper\") | list }}");       // TypeError
  expect_error("{{ 1.5 | selectattr(\"a\") | list }}");  // TypeError
  expect_error("{{ [1] | selectattr | list }}");         // FilterArgumentError
}

TEST(JinjaFilters, IntReadsBasesPrefixesAndUnderscoresAsPython) {
  EXPECT_EQ(render("{{ '0b101' | int(0, 2) }} {{ '0x1f' | int(0, 16) }} {{ '0X1F' | int(0, 16) }} "
                   "{{ '0o17' | int(0, 8) }} {{ '0B11' | int(9, 2) }}"),
            "5 31 31 15 3");
  EXPECT_EQ(render("{{ '0b101' | int(0, 0) }} {{ '0x1f' | int(0, 0) }} {{ '0o17' | int(0, 0) }} {{ "
                   "'-0x1f' | int(0, 0) }} {{ ' +0b11 ' | int(-1, 2) }}"),
            "5 31 15 -31 3");
  EXPECT_EQ(render("{{ 'ff' | int(base=16) }} {{ '12' | int(default=3, base=8) }} {{ 'z' | int(-1, "
                   "36) }} {{ '0b1' | int(-1, 16) }} {{ '1e3' | int(-1, 16) }}"),
            "255 10 35 177 483");
  EXPECT_EQ(render("{{ '017' | int(-1, 0) }} {{ '00' | int(-1, 0) }} {{ '0_0' | int(-1, 0) }} {{ "
                   "'-0' | int(-1, 0) }} {{ '0_b10' | int(-1, 0) }} {{ '0b' | int(-1, 0) }}"),
            "17 0 0 0 -1 -1");
  EXPECT_EQ(render("{{ '1_000' | int }} {{ '-1_0' | int }} {{ '0x_1f' | int(-1, 16) }} {{ '0b1_0' "
                   "| int(-1, 0) }} {{ '0b_1_0' | int(-1, 0) }}"),
            "1000 -10 31 2 2");
  EXPECT_EQ(render("{{ '1__000' | int(-1) }} {{ '_1000' | int(-1) }} {{ '1000_' | int(-1) }} {{ "
                   "'-_10' | int(-1) }} {{ '0x__1f' | int(-1, 16) }} {{ '0x1f_' | int(-1, 16) }} "
                   "{{ '0x' | int(-1, 16) }}"),
            "-1 -1 -1 -1 -1 -1 -1");
  EXPECT_EQ(
      render("{{ '0b101' | int }} {{ '0b101' | int(7) }} {{ '0x1f' | int(-1, 8) }} {{ '0o17' | "
             "int(-1, 16) }} {{ '0b2' | int(-1, 2) }} {{ '- 5' | int(-1) }} {{ '1 2' | int(-1) }}"),
      "0 7 -1 -1 -1 -1 -1");
  EXPECT_EQ(render("{{ '12' | int(-1, 1) }} {{ '12' | int(-1, 37) }} {{ '12' | int(-1, 'x') }} {{ "
                   "'12' | int(-1, 2.0) }} {{ '12' | int(-1, none) }} {{ '11' | int(-1, true) }} "
                   "{{ '11' | int(-1, false) }} {{ '2' | int(-1, 2) }}"),
            "12 12 12 12 12 11 11 2");
  EXPECT_EQ(render("{{ '12.5' | int(-1, 16) }} {{ '42.23' | int }} {{ '1.5e1' | int(-1, 2) }} {{ "
                   "'1_0.5' | int(-1) }} {{ '.5' | int(-1) }} {{ 'nan' | int(-1) }} {{ '' | "
                   "int(-1) }} {{ '+' | int(-1) }}"),
            "12 42 15 10 0 -1 -1 -1");
  EXPECT_EQ(
      render("{{ 12 | int(-1, 2) }} {{ 12.7 | int(-1, 2) }} {{ -12.7 | int }} {{ true | int }} {{ "
             "none | int }} {{ none | int(5) }} {{ [1] | int(5) }} {{ {'a': 1} | int(5) }}"),
      "12 12 -12 1 0 5 5 5");
  EXPECT_EQ(render("{{ '9223372036854775807' | int }} {{ '-9223372036854775808' | int }} {{ '0x1f' "
                   "| int(0, 16) + 1 }}"),
            "9223372036854775807 -9223372036854775808 32");
  EXPECT_EQ(render("{{ '1_0.5' | float(-1) }} {{ '1__0.5' | float(-1) }} {{ '0x10' | float(-1) }}"),
            "10.5 -1 -1");
  expect_error("{{ x | int }}");            // UndefinedError
  expect_error("{{ x | int(5) }}");         // UndefinedError
  expect_error("{{ 'inf' | int(-1) }}");    // OverflowError
  expect_error("{{ '1e400' | int(-1) }}");  // OverflowError
}

// Expected output from jinja2 3.1's ImmutableSandboxedEnvironment: LoopContext has a length.
TEST(JinjaLoops, TheLoopHasALength) {
  EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop|length }}{{ loop|count }}{% endfor %}",
                   Json::object()),
            "333333");
  expect_error("{{ range|length }}");  // TypeError: object of type 'function' has no len()
}

TEST(JinjaLoops, RecursiveLoopsRunTheBodyOverNestedItems) {
  EXPECT_EQ(
      render(
          "{% for item in tree recursive %}{{ item.name }}{% if item.children %}[{{ "
          "loop(item.children) }}]{% endif %}{% endfor %}",
          Json::parse(
              R"({"tree": [{"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}, {"name": "d"}]}, {"name": "e"}]})")),
      "a[b[c]d]e");
  EXPECT_EQ(
      render(
          "{% for item in tree recursive %}{{ loop.depth }}/{{ loop.depth0 }}:{{ item.name }}{% if "
          "item.children %}[{{ loop(item.children) }}]{% endif %} {% endfor %}",
          Json::parse(
              R"({"tree": [{"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}, {"name": "d"}]}, {"name": "e"}]})")),
      "1/0:a[2/1:b[3/2:c ] 2/1:d ] 1/0:e ");
  EXPECT_EQ(
      render(
          "{% for item in tree recursive %}{{ loop.index }}/{{ loop.length }}{{ item.name }}{% if "
          "item.children %}({{ loop(item.children) }}){% endif %}{% if not loop.last %},{% endif "
          "%}{% endfor %}",
          Json::parse(
              R"({"tree": [{"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}, {"name": "d"}]}, {"name": "e"}]})")),
      "1/2a(1/2b(1/1c),2/2d),2/2e");
  EXPECT_EQ(
      render(
          "{% for item in tree if item.keep recursive %}{{ item.name }}{% if item.children %}[{{ "
          "loop(item.children) }}]{% endif %}{% endfor %}",
          Json::parse(
              R"({"tree": [{"name": "a", "keep": true, "children": [{"name": "b", "keep": false}, {"name": "d", "keep": true}]}, {"name": "e", "keep": true}]})")),
      "a[d]e");
  EXPECT_EQ(
      render(
          "{% for x in [1] recursive %}[{{ loop([]) }}]{{ loop(nothing) }}{% else %}E{% endfor %}"),
      "[E]E");
  EXPECT_EQ(render("{% for x in [1, 2] recursive %}{{ loop.previtem }}{{ x }}|{{ loop.nextitem "
                   "}}{% if x == 1 %}({{ loop([5, 6]) }}){% endif %};{% endfor %}"),
            "1|2(5|6;56|;);12|;");
  EXPECT_EQ(render("{% for x in [1, 2] recursive %}{{ loop.cycle('a', 'b') }}{% if x == 1 %}({{ "
                   "loop([5, 6, 7]) }}){% endif %}{% endfor %}"),
            "a(aba)b");
  EXPECT_EQ(render("{% for x in [1, 2, 3] recursive %}{% if x == 2 %}{% break %}{% endif %}{{ x "
                   "}}{% if x == 1 %}({{ loop([7, 2, 8]) }}){% endif %}{% endfor %}"),
            "1(7)");
  EXPECT_EQ(render("{% for x in [1, 2, 3] recursive %}{% if x == 2 %}{% continue %}{% endif %}{{ x "
                   "}}{% if x == 1 %}({{ loop([7, 2, 8]) }}){% endif %}{% endfor %}"),
            "1(78)3");
  EXPECT_EQ(render("{% for k, v in {'a': {'b': 1}}.items() recursive %}{{ k }}{% if v is mapping "
                   "%}({{ loop(v.items()) }}){% else %}={{ v }}{% endif %}{% endfor %}"),
            "a(b=1)");
  EXPECT_EQ(render("{% for x in [1] recursive %}{{ loop.depth }}{% for y in [1] %}{{ loop.depth "
                   "}}{% endfor %}{% if loop.depth < 3 %}{{ loop([1]) }}{% endif %}{% endfor %}"),
            "112131");
  EXPECT_EQ(
      render(
          "{% for item in tree recursive %}{% set outer = loop %}{{ item.name }}{% for c in "
          "item.children %}<{{ outer([c]) }}>{% endfor %}{% endfor %}",
          Json::parse(R"({"tree": [{"name": "a", "children": [{"name": "b", "children": []}]}]})")),
      "a<b>");
  EXPECT_EQ(render("{% for x in [1] recursive %}{% if loop.depth == 1 %}{% set w = 9 %}{{ "
                   "loop([2]) }}{% endif %}{{ w }}{{ x }}{% endfor %}"),
            "291");
  EXPECT_EQ(render("{% macro walk(t) %}{% for i in t recursive %}{{ i.n }}{% if i.c %}<{{ "
                   "loop(i.c) }}>{% endif %}{% endfor %}{% endmacro %}{{ walk(tree) }}",
                   Json::parse(R"({"tree": [{"n": "a", "c": [{"n": "b"}]}]})")),
            "a<b>");
  EXPECT_EQ(render("{% for x in [1, 2] %}{{ loop['index'] }}{{ loop.depth }}{{ loop.depth0 }}{{ "
                   "loop is callable }}{{ loop is mapping }}{% endfor %}"),
            "110TrueFalse210TrueFalse");
  expect_error("{% for x in [1] %}{{ loop([2]) }}{% endfor %}");  // TypeError
  expect_error(
      "{% for item in [[1]] recursive %}{% for c in item %}{{ loop([c]) }}{% endfor %}{% endfor "
      "%}");                                                                     // TypeError
  expect_error("{% for x in [1] recursive %}{{ loop(none) }}{% endfor %}");      // TypeError
  expect_error("{% for x in [1] recursive %}{{ loop() }}{% endfor %}");          // TypeError
  expect_error("{% for x in [1] recursive %}{{ loop([2], [3]) }}{% endfor %}");  // TypeError
  expect_error("{% for x in [1] recursive %}{{ loop(x=[1]) }}{% endfor %}");     // TypeError
  expect_error("{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}");       // RecursionError
}

TEST(JinjaMethods, ListPopAndClearChangeTheListAndOtherMutationsAreRefused) {
  EXPECT_EQ(render("{% set xs = [1, 2, 3] %}{{ xs.pop() }}{{ xs }}"), "3[1, 2]");
  EXPECT_EQ(render("{% set xs = [1, 2, 3] %}{{ xs.pop(0) }}{{ xs }}"), "1[2, 3]");
  EXPECT_EQ(render("{% set xs = [1, 2, 3] %}{{ xs.pop(-2) }}{{ xs }}{{ xs.pop(true) }}{{ xs }}"),
            "2[1, 3]3[1]");
  EXPECT_EQ(render("{% set xs = [1, 2, 3] %}{{ xs.pop() + xs.pop() }}{{ xs }}"), "5[1]");
  EXPECT_EQ(render("{% set xs = [1, 2] %}{{ xs.clear() }}{{ xs }}{{ xs.clear() is none }}"),
            "None[]True");
  EXPECT_EQ(render("{% set xs = [1, 2] %}{% set ys = xs %}{% set d = {'k': xs} %}{{ xs.pop() }}{{ "
                   "ys }}{{ d }}"),
            "2[1]{'k': [1]}");
  EXPECT_EQ(render("{% set xs = [1, 2, 3] %}{% set p = xs.pop %}{{ p() }}{{ xs }}{{ xs['pop']() "
                   "}}{{ (xs | attr('pop'))() }}{{ xs }}"),
            "3[1, 2]21[]");
  EXPECT_EQ(render("{% set xs = [1, 2, 3] %}{% set _ = xs.pop() %}{{ xs }}"), "[1, 2]");
  EXPECT_EQ(render("{{ messages.pop(0) }}{{ messages }}",
                   Json::parse(R"({"messages": [{"role": "system"}, {"role": "user"}]})")),
            "{'role': 'system'}[{'role': 'user'}]");
  EXPECT_EQ(render("{% set xs = [[1, 2]] %}{{ xs[0].pop() }}{{ xs }}"), "2[[1]]");
  EXPECT_EQ(render("{% set ns = namespace(xs=[1, 2]) %}{{ ns.xs.pop() }}{{ ns.xs }}"), "2[1]");
  EXPECT_EQ(render("{% set xs = [1, 2, 3] %}{{ xs[1:].pop() }}{{ (xs | list).pop() }}{{ (xs + "
                   "[]).pop() }}{{ xs }}"),
            "333[1, 2, 3]");
  EXPECT_EQ(
      render(
          "{% set xs = [1, 2, 3] %}{% macro m(l) %}{{ l.pop() }}{% endmacro %}{{ m(xs) }}{{ xs }}"),
      "3[1, 2]");
  EXPECT_EQ(render("{% for x in [1, 2] %}{% set xs = [x] %}{{ xs.pop() }}{% endfor %}"), "12");
  expect_error("{% set xs = [1, 2, 3] %}{{ xs.pop(3) }}");     // IndexError
  expect_error("{% set xs = [1, 2, 3] %}{{ xs.pop(-4) }}");    // IndexError
  expect_error("{% set xs = [] %}{{ xs.pop() }}");             // IndexError
  expect_error("{% set xs = [] %}{{ xs.pop(0) }}");            // IndexError
  expect_error("{% set xs = [1] %}{{ xs.pop('0') }}");         // TypeError
  expect_error("{% set xs = [1] %}{{ xs.pop(1.0) }}");         // TypeError
  expect_error("{% set xs = [1] %}{{ xs.pop(none) }}");        // TypeError
  expect_error("{% set xs = [1] %}{{ xs.pop(index=0) }}");     // TypeError
  expect_error("{% set xs = [1] %}{{ xs.pop(0, 1) }}");        // TypeError
  expect_error("{% set xs = [1] %}{{ xs.clear(1) }}");         // TypeError
  expect_error("{{ (1, 2).pop() }}");                          // UndefinedError
  expect_error("{{ (1, 2).clear() }}");                        // UndefinedError
  expect_error("{{ 'ab'.pop() }}");                            // UndefinedError
  expect_error("{% set xs = [1, 2] %}{{ xs.append(3) }}");     // SecurityError
  expect_error("{% set xs = [1, 2] %}{{ xs.extend([3]) }}");   // SecurityError
  expect_error("{% set xs = [1, 2] %}{{ xs.insert(0, 3) }}");  // SecurityError
  expect_error("{% set xs = [1, 2] %}{{ xs.remove(1) }}");     // SecurityError
  expect_error("{% set xs = [1, 2] %}{{ xs.reverse() }}");     // SecurityError
  expect_error("{% set xs = [1, 2] %}{{ xs.sort() }}");        // SecurityError
  expect_error("{% set d = {'a': 1} %}{{ d.pop('a') }}");      // SecurityError
  expect_error("{% set d = {'a': 1} %}{{ d.clear() }}");       // SecurityError
  expect_error("{% set d = {'a': 1} %}{{ d.popitem() }}");     // SecurityError
}

}  // namespace
