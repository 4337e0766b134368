#!/usr/bin/python3
"""Writes tests/data/jinja_cases.json: template snippets with the output (or the error) that
Python's Jinja2 gives in transformers' chat-template environment, for tests/test_jinja.cpp.

Run with Debian's python, which has jinja2 3.1: /usr/bin/python3 scripts/make_jinja_cases.py
Each case is {"id", "template", "vars", "rendered"} or {"id", "template", "vars", "error_type",
"error"}; error_type "TemplateError" is the template's own raise_exception(msg).
"""

import json
import pathlib
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.sandbox


def environment():
    """transformers' _compile_jinja_template environment (its {% generation %} extension aside)."""
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])

    def tojson(x, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=False, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env


USERS = [{"name": "Ann", "age": 31, "admin": True}, {"name": "bob", "age": 25, "admin": False},
         {"name": "Cy", "age": 40, "admin": True}]
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": " Hi "},
            {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nHello"},
            {"role": "user", "content": "Bye"}]

# (id, template, vars)
CASES = [
    # statements
    ("if_elif", "{% for n in [1, 5, 9] %}{% if n < 3 %}s{% elif n < 7 %}m{% else %}l{% endif %}{% endfor %}", {}),
    ("if_nested", "{% if a %}{% if b %}ab{% else %}a{% endif %}{% endif %}", {"a": 1, "b": 0}),
    ("for_loop_all", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
     "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}", {}),
    ("for_prev_next", "{% for x in [1, 2, 3] %}{{ loop.previtem }}-{{ loop.nextitem }} {% endfor %}", {}),
    ("for_cycle", "{% for x in range(5) %}{{ loop.cycle('a', 'b', 'c') }}{% endfor %}", {}),
    ("for_else", "{% for x in [] %}x{% else %}none{% endfor %}", {}),
    ("for_filter_loop", "{% for x in range(10) if x % 3 == 0 %}{{ x }}{{ loop.last }} {% endfor %}", {}),
    ("for_unpack", "{% for a, b in [(1, 2), [3, 4]] %}{{ a * b }} {% endfor %}", {}),
    ("for_unpack_items", "{% for k, v in d|dictsort %}{{ k }}{{ v }}{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("for_break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}"
     "{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("for_nested_loop_var", "{% for a in [1, 2] %}{% for b in [1, 2] %}{{ loop.index }}{% endfor %}"
     "{{ loop.index }}|{% endfor %}", {}),
    ("for_scope_fresh_each_iteration", "{% set x = 'o' %}{% for i in [1, 2] %}{{ x }}{% set x = i %}"
     "{{ x }}{% endfor %}{{ x }}", {}),
    ("for_over_dict", "{% for k in d %}{{ k }}{% endfor %}", {"d": {"z": 1, "a": 2}}),
    ("for_over_undefined", "[{% for x in missing %}x{% endfor %}]", {}),
    ("for_over_int_error", "{% for x in 5 %}{% endfor %}", {}),
    ("set_tuple", "{% set a, b = 'xy' %}{{ b }}{{ a }}", {}),
    ("set_tuple_error", "{% set a, b = [1, 2, 3] %}", {}),
    ("set_block_filtered_later", "{% set t %}  x {{ 1 + 1 }}  {% endset %}[{{ t|trim }}]", {}),
    ("namespace_dict_init", "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns.c }}", {}),
    ("namespace_assign_non_namespace", "{% set d = {} %}{% set d.x = 1 %}", {}),
    ("macro_caller", "{% macro box(t) %}[{{ t }}:{{ caller() }}]{% endmacro %}"
     "{% call box('a') %}inside{% endcall %}", {}),
    ("macro_caller_args", "{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}"
     "{% call(item) each([1, 2]) %}<{{ item }}>{% endcall %}", {}),
    ("macro_missing_arg", "{% macro f(a, b) %}{{ a }}|{{ b }}|{% endmacro %}{{ f(1) }}", {}),
    ("macro_too_many_args", "{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}", {}),
    ("macro_sees_globals", "{% macro f() %}{{ g }}{% endmacro %}{% set g = 'late' %}{{ f() }}", {}),
    ("macro_recursion", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}"
     "{% endif %}{% endmacro %}{{ fact(5) }}", {}),
    ("filter_block", "{% filter upper %}abc {{ x }}{% endfilter %}", {"x": "d"}),
    ("filter_block_chain", "{% filter trim|replace('a', 'b') %}  aaa  {% endfilter %}|", {}),
    ("raw_ws", "{%- raw -%}  {{ x }}  {%- endraw -%} |", {}),
    ("comment_ws", "a  {#- c -#}  b", {}),
    # whitespace
    ("ws_lstrip_comment_line", "x\n    {# c #}\ny", {}),
    ("ws_plus_block_end", "{% if true +%}\nX{% endif %}", {}),
    ("ws_minus_newlines", "a\n\n  {{- 'b' -}}\n\n  c", {}),
    ("ws_lstrip_tabs", "\t\t{% if true %}T{% endif %}", {}),
    ("ws_lstrip_after_output", "{{ 'a' }}   {% if true %}b{% endif %}", {}),
    ("ws_cr_only", "a\rb\r", {}),
    ("ws_trim_after_endfor", "{% for x in [1, 2] %}\n{{ x }}\n{% endfor %}\n", {}),
    ("ws_unicode_space_minus", "a\u3000 {{- 'b' }}", {}),
    # expressions
    ("literals", "{{ [1, 2.5, 'x', none, True, false, (1,), ()] }}|{{ {'a': {'b': [1]}, 2: 3} }}", {}),
    ("string_concat_adjacent", "{{ 'a' 'b' \"c\" }}", {}),
    ("int_underscores", "{{ 1_000 + 2 }}|{{ 1e3 }}|{{ 1.5e-3 }}|{{ 12.0 }}", {}),
    ("escape_sequences", "{{ '\\a\\b\\f\\v\\0\\101\\q'|length }}|{{ 'x\\'y' }}|{{ \"\\U0001F600\" }}", {}),
    ("attribute_then_item", "{{ d.a }}{{ d['a'] }}{{ d.get('a') }}{{ d.b.c }}{{ xs.1 }}", {"d": {"a": 1, "b": {"c": 2}}, "xs": [5, 6]}),
    ("item_fallback_method", "{{ d['keys'] is callable }}|{{ d.keys is callable }}", {"d": {}}),
    ("item_key_types", "{{ d[1] }}{{ d[true] }}|{{ xs[true] }}|[{{ xs[1.5] }}]", {"xs": [1, 2]}),
    ("item_int_keys_literal", "{% set d = {1: 'one', 2.0: 'two'} %}{{ d[1] }}{{ d[2] }}{{ d[1.0] }}", {}),
    ("slice_all", "{{ s[1:-1] }}|{{ s[::-2] }}|{{ s[10:] }}|{{ xs[-2:] }}|{{ xs[:100] }}|{{ t[1:] }}",
     {"s": "héllo wörld", "xs": [1, 2, 3], "t": [1, 2]}),
    ("slice_step_zero", "{{ [1, 2][::0] }}", {}),
    ("math_mixed", "{{ 1 + 2.0 }}|{{ true + true }}|{{ 7 % -3 }}|{{ -7.5 // 2 }}|{{ 7.5 % 2 }}|{{ 2 ** 0.5 }}|{{ 10 / 4 }}", {}),
    ("math_division_by_zero", "{{ 1 / 0 }}", {}),
    ("math_floor_division_by_zero", "{{ 1 // 0 }}", {}),
    ("math_modulo_by_zero", "{{ 1 % 0 }}", {}),
    ("unary", "{{ -x }}|{{ +x }}|{{ - -x }}|{{ -(1.5) }}|{{ not x }}", {"x": 3}),
    ("unary_error", "{{ -'a' }}", {}),
    ("compare_types_error", "{{ 1 < 'a' }}", {}),
    ("compare_lists", "{{ [1, 2] < [1, 3] }}|{{ (1, 2) == [1, 2] }}|{{ 'abc' >= 'abd' }}|{{ {'a': 1} == {'a': 1} }}", {}),
    ("in_dict_list_string", "{{ 1 in {1: 2} }}|{{ [1] in [[1]] }}|{{ 'x' not in 'abc' }}", {}),
    ("in_int_error", "{{ 1 in 5 }}", {}),
    ("concat_tilde_types", "{{ 1 ~ 2 }}|{{ none ~ '' }}|{{ [1] ~ {'a': 1} }}|{{ 1.0 ~ (1, 2) }}", {}),
    ("list_repeat_concat", "{{ [1, 2] * 2 }}|{{ (1,) + (2,) }}|{{ 3 * [0] }}", {}),
    ("list_plus_tuple_error", "{{ [1] + (2,) }}", {}),
    ("and_or_values", "{{ 0 and 1 }}|{{ 2 and 3 }}|{{ '' or none }}|{{ missing or 'd' }}", {}),
    ("cond_nested", "{{ 'a' if x > 1 else 'b' if x > 0 else 'c' }}{{ ('y' if false)|default('n') }}", {"x": 0}),
    ("percent_operator", "{{ '%s is %d years, %.2f%%' % ('Ann', 31, 1.5) }}|{{ '%5s|%-5s|' % ('a', 'b') }}|{{ '%r' % 'x' }}", {}),
    ("percent_mapping", "{{ '%(a)s-%(b)03d' % {'a': 'x', 'b': 7} }}", {}),
    ("tuple_output", "{{ 1, 'a' }}", {}),
    ("float_printing", "{{ 1e15 }}|{{ 1e16 }}|{{ 123456789012345678.0 }}|{{ 0.0001 }}|{{ 0.00001 }}|{{ -0.0 }}|{{ 2.5e-300 * 1 }}", {}),
    ("big_ints", "{{ 9223372036854775807 }}|{{ -9223372036854775807 - 1 }}|{{ 2 ** 63 - 1 if false else 3 }}", {}),
    ("string_repr_unicode", "{{ ['\\u00a0', '\\u200b', '\\u2028', '\\x7f', 'é', '\\U0001F600', '\\x00'] }}", {}),
    ("dict_repr_nested", "{{ {'k': {'q': [\"it's\", none]}, 'n': 1.0} }}", {}),
    ("undefined_chain_error", "{{ missing.a.b }}", {}),
    ("undefined_item_error", "{{ missing[0] }}", {}),
    ("undefined_compare_error", "{{ missing < 1 }}", {}),
    ("undefined_call_error", "{{ missing() }}", {}),
    ("undefined_ok_uses", "{{ missing is defined }}{{ missing|default('d') }}{{ missing ~ 'x' }}"
     "{{ missing == missing }}{{ missing|length }}{{ missing|list }}{{ missing is iterable }}", {}),
    ("none_attribute", "[{{ n.x }}][{{ n['x'] }}]", {"n": None}),
    ("list_index_out_of_range", "[{{ xs[5] }}][{{ xs[-5] }}][{{ ''[0] }}]", {"xs": [1]}),
    # tests
    ("tests_numbers", "{{ 2.0 is integer }}{{ 2 is number }}{{ none is number }}{{ 4 is divisibleby 2 }}"
     "{{ 3.0 is odd }}{{ 0 is even }}{{ -3 is odd }}", {}),
    ("tests_compare", "{{ 1 is lt 2 }}{{ 2 is le 2 }}{{ 3 is gt 2 }}{{ 2 is ge 3 }}{{ 1 is ne 1 }}"
     "{{ 1 is lessthan 2 }}{{ 3 is greaterthan 2 }}{{ 1 is == 1 }}", {}),
    ("tests_types", "{{ {} is mapping }}{{ [] is sequence }}{{ 'a' is sequence }}{{ 1 is sequence }}"
     "{{ none is none }}{{ false is boolean }}{{ range is callable }}{{ 'x' is callable }}", {}),
    ("tests_in_sameas", "{{ 1 is in [1] }}{{ 'a' is in {'a': 1} }}{{ none is sameas none }}{{ true is sameas 1 }}", {}),
    ("tests_not", "{{ 1 is not string }}{{ x is not defined }}{{ not x is defined }}", {}),
    ("test_unknown_error", "{{ 1 is frobnicated }}", {}),
    # filters
    ("filter_trim_chars", "[{{ '--a--'|trim('-') }}][{{ ' \\t\\n x\\u2003'|trim }}]", {}),
    ("filter_length_types", "{{ 'héllo'|length }}{{ [1, 2]|length }}{{ {'a': 1}|count }}", {}),
    ("filter_length_error", "{{ 5|length }}", {}),
    ("filter_join_attribute", "{{ users|join(', ', attribute='name') }}|{{ [1, none, 'a']|join('-') }}", {"users": USERS}),
    ("filter_tojson_all", "{{ d|tojson }}|{{ d|tojson(indent=1) }}|{{ d|tojson(sort_keys=true, indent='\\t') }}",
     {"d": {"b": [1, 2.0, None, True, "é\"\n"], "a": {}, "c": []}}),
    ("filter_tojson_keys", "{{ {1: 'a', 2.5: 'b', true: 'c', none: 'd'}|tojson }}", {}),
    ("filter_tojson_undefined_error", "{{ missing|tojson }}", {}),
    ("filter_default_boolean", "{{ ''|default('e', true) }}|{{ 0|d('z') }}|{{ none|d('n', boolean=true) }}", {}),
    ("filter_first_last_empty", "[{{ []|first }}][{{ ''|last }}]{{ [1, 2]|first }}", {}),
    ("filter_map_filters", "{{ ['a ', ' b']|map('trim')|join }}|{{ [1.4, 2.6]|map('round')|list }}"
     "|{{ ['x']|map('replace', 'x', 'y')|list }}", {}),
    ("filter_map_nested_attribute", "{{ xs|map(attribute='a.b')|list }}|{{ xs|map(attribute='a.c', default=0)|list }}"
     "|{{ [[1, 2], [3, 4]]|map(attribute='1')|list }}",
     {"xs": [{"a": {"b": 1}}, {"a": {"b": 2, "c": 5}}]}),
    ("filter_select_tests", "{{ range(10)|select('divisibleby', 3)|list }}|{{ [1, 'a', none]|reject('string')|list }}"
     "|{{ ['a', 'B']|select('lower')|list }}|{{ [1, 5, 9]|select('gt', 4)|list }}", {}),
    ("filter_selectattr_forms", "{{ users|selectattr('age', '>=', 31)|map(attribute='name')|join }}"
     "|{{ users|rejectattr('admin', 'true')|map(attribute='name')|join }}"
     "|{{ msgs|selectattr('role', 'in', ['user'])|map(attribute='content')|map('trim')|join(',') }}",
     {"users": USERS, "msgs": MESSAGES}),
    ("filter_items_undefined", "[{{ missing|items|list }}]{{ {'a': 1}|items|list }}", {}),
    ("filter_dictsort_value_case", "{{ d|dictsort(false, 'value') }}|{{ d|dictsort(case_sensitive=true) }}",
     {"d": {"b": "B", "a": "c", "C": "a"}}),
    ("filter_indent_more", "{{ 'a\\nb'|indent }}|{{ 'a\\r\\nb'|indent(1) }}|{{ ''|indent(2, true) }}", {}),
    ("filter_int_float_more", "{{ '0x1A'|int }}|{{ '1_000'|int }}|{{ '1e3'|int }}|{{ ' 2.5 '|float }}|{{ 'nan'|float }}"
     "|{{ 'x'|float(1.5) }}|{{ none|int }}|{{ 'ff'|int(base=16) }}|{{ '-'|int }}", {}),
    ("filter_round_more", "{{ 2.675|round(2) }}|{{ 1234.5|round(-2) }}|{{ 0.5|round }}|{{ 1.5|round }}"
     "|{{ -2.5|round }}|{{ 2.11|round(1, 'ceil') }}|{{ -2.11|round(1, 'floor') }}", {}),
    ("filter_abs_more", "{{ -2.5|abs }}|{{ 3|abs }}|{{ -0|abs }}|{{ false|abs }}", {}),
    ("filter_unique_more", "{{ [1, 1.0, true, 2]|unique|list }}|{{ ['b', 'B', 'a']|unique(true)|list }}", {}),
    ("filter_sort_more", "{{ [3, 1, 2]|sort(true) }}|{{ users|sort(attribute='name')|map(attribute='name')|join }}"
     "|{{ users|sort(attribute='name', case_sensitive=true)|map(attribute='name')|join }}"
     "|{{ [[2, 'b'], [1, 'a']]|sort }}", {"users": USERS}),
    ("filter_sort_mixed_error", "{{ [1, 'a']|sort }}", {}),
    ("filter_min_max_more", "{{ ['b', 'A', 'c']|min }}{{ ['b', 'A', 'c']|max(case_sensitive=true) }}"
     "{{ users|min(attribute='age')|attr('name') }}{{ users|max(attribute='age') }}[{{ []|min }}]", {"users": USERS}),
    ("filter_sum_more", "{{ [1, 2.5]|sum }}|{{ []|sum }}|{{ [1]|sum(start=10) }}", {}),
    ("filter_reverse_dict", "{{ {'a': 1, 'b': 2}|reverse|list }}|{{ (1, 2)|reverse|list }}", {}),
    ("filter_string_list", "{{ 1.5|string }}|{{ {'a': 'b'}|string }}|{{ 'héé'|list }}", {}),
    ("filter_case_unicode", "{{ 'ÉCOLE straße'|lower }}|{{ 'école'|upper }}|{{ 'élan vital'|capitalize }}"
     "|{{ 'hello-world foo_bar x(y) [z]'|title }}", {}),
    ("filter_replace_count", "{{ 'aaaa'|replace('a', 'bb', 2) }}|{{ 'héhé'|replace('é', 'e') }}", {}),
    ("filter_wordcount_center", "{{ 'one, two  three_x é'|wordcount }}|[{{ 'ab'|center(7) }}][{{ 'abc'|center(6) }}][{{ 'abcd'|center(2) }}]", {}),
    ("filter_escape_types", "{{ '<&>'|escape }}|{{ 5|e }}|{{ none|e }}|{{ '\"\\''|e }}", {}),
    ("filter_format", "{{ '%s-%s'|format('a', 1) }}|{{ '%05.1f'|format(3.14159) }}|{{ '%x'|format(255) }}", {}),
    ("filter_truncate", "{{ 'hello world foo bar'|truncate(9) }}|{{ 'hello world foo bar'|truncate(9, true) }}"
     "|{{ 'hello world'|truncate(9, leeway=0) }}|{{ 'abc'|truncate(5) }}|{{ 'hello world'|truncate(8, false, '!', 0) }}", {}),
    ("filter_batch", "{{ [1, 2, 3, 4, 5]|batch(2)|list }}|{{ [1, 2, 3]|batch(2, 'x')|list }}", {}),
    ("filter_unknown_error", "{{ 1|frobnicate }}", {}),
    ("filter_chain_precedence", "{{ -2|abs + 1 }}|{{ 'a,b'|upper ~ 'c' }}|{{ [3, 1]|sort|first }}|{{ 1 + 2|string }}", {}),
    # methods
    ("str_split_more", "{{ 'a  b\\tc\\n'.split() }}|{{ 'a,b,,c'.split(',') }}|{{ 'a b c'.split(none, 1) }}"
     "|{{ 'a,b,c'.rsplit(',', 1) }}|{{ '  a b  '.rsplit(maxsplit=1) }}|{{ ''.split() }}", {}),
    ("str_split_empty_sep_error", "{{ 'abc'.split('') }}", {}),
    ("str_strip_unicode", "[{{ '\\u3000\\xa0x\\u2003'.strip() }}][{{ 'xyzzyx'.strip('xy') }}][{{ 'aéa'.rstrip('a') }}]", {}),
    ("str_find_index_unicode", "{{ 'héllo'.find('l') }}|{{ 'héllo'.rfind('l') }}|{{ 'héllo'.index('o') }}"
     "|{{ 'aaa'.count('a') }}|{{ 'aaa'.count('') }}|{{ 'abab'.count('ab') }}", {}),
    ("str_index_missing_error", "{{ 'abc'.index('z') }}", {}),
    ("str_predicates", "{{ '123'.isdigit() }}{{ ''.isdigit() }}{{ 'abc'.isalpha() }}{{ 'a1'.isalnum() }}"
     "{{ ' \\n'.isspace() }}{{ 'ABC1'.isupper() }}{{ 'abc'.islower() }}{{ '1'.islower() }}{{ 'é'.isalpha() }}", {}),
    ("str_case_methods", "{{ 'hello WORLD'.title() }}|{{ 'aBc'.swapcase() }}|{{ 'ßx'.upper() }}|{{ \"o'neil x-y\".title() }}", {}),
    ("str_startswith_tuple", "{{ 'abc'.startswith(('x', 'ab')) }}{{ 'abc'.endswith(('c',)) }}{{ 'abc'.startswith('') }}", {}),
    ("str_join_method", "{{ '-'.join('abc') }}|{{ ''.join(['x', 'y']) }}|{{ ', '.join({'a': 1, 'b': 2}) }}", {}),
    ("str_join_int_error", "{{ ','.join([1, 2]) }}", {}),
    ("str_format_method_more", "{{ '{0}{1}{0}'.format('a', 'b') }}|{{ '{{}}{}'.format(1) }}|{{ '{x}!'.format(x=[1]) }}", {}),
    ("str_splitlines", "{{ 'a\\nb\\r\\nc\\rd\\n'.splitlines() }}|{{ 'a\\nb'.splitlines(true) }}|{{ ''.splitlines() }}", {}),
    ("str_replace_method", "{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'abc'.replace('', '.') }}", {}),
    ("str_removeprefix", "{{ 'prefix-x'.removeprefix('prefix-') }}{{ 'x.txt'.removesuffix('.txt') }}", {}),
    ("str_method_unknown", "[{{ 'abc'.frob }}]", {}),
    ("dict_methods_more", "{{ d.get('x', 0) }}|{{ d.get('a') }}|{{ d.items()|list }}|{{ d.keys()|first }}|{{ d.values()|sum }}",
     {"d": {"a": 1, "b": 2}}),
    ("list_methods", "{{ xs.index(2) }}|{{ xs.count(1) }}|{{ (1, 2).index(2) }}", {"xs": [1, 2, 1]}),
    ("list_index_missing_error", "{{ [1].index(5) }}", {}),
    # globals
    ("range_forms", "{{ range(5, 0, -2)|list }}|{{ range(0)|list }}|{{ range(3, 1)|list }}|{{ range(-3)|list }}", {}),
    ("range_step_zero_error", "{{ range(1, 5, 0) }}", {}),
    ("dict_global", "{{ dict(a=1, b=2) }}|{{ dict({'x': 1}, y=2) }}", {}),
    ("joiner_global", "{% set j = joiner(' | ') %}{% for x in [1, 2, 3] %}{{ j() }}{{ x }}{% endfor %}", {}),
    ("raise_exception_message", "{{ raise_exception('Bad role: ' ~ role) }}", {"role": "tool"}),
    ("raise_exception_in_macro", "{% macro check(x) %}{% if not x %}{{ raise_exception('empty') }}{% endif %}{% endmacro %}{{ check('') }}", {}),
    # sandbox
    ("sandbox_dunder", "{{ ''.__class__.__mro__ }}", {}),
    ("sandbox_dict_update", "{% set d = {} %}{{ d.update({'a': 1}) }}", {}),
    # (list.pop and list.clear are left out: Jinja2 3.1's sandbox lets them mutate the list, ours
    # refuses them like the other mutating methods; tests/test_jinja.cpp checks that.)
    ("sandbox_dict_setdefault", "{{ {}.setdefault('a', 1) }}", {}),
    ("sandbox_list_sort", "{{ [2, 1].sort() }}", {}),
    ("sandbox_private_key_ok", "{{ d._x }}|{{ d['_x'] }}", {"d": {"_x": 1}}),
    # syntax errors
    ("syntax_unknown_tag", "{% frob %}", {}),
    ("syntax_unclosed_for", "{% for x in y %}", {}),
    ("syntax_bad_expression", "{{ 1 + }}", {}),
    ("syntax_unclosed_string", "{{ 'abc }}", {}),
    ("syntax_unbalanced", "{{ (1 }}", {}),
    ("syntax_endif_without_if", "{% endif %}", {}),
    ("syntax_break_outside_loop", "{% break %}", {}),
    ("syntax_unclosed_comment", "{# abc", {}),
    ("syntax_chained_is", "{{ 1 is number is number }}", {}),
    # real-template idioms
    ("qwen_like_tools", "{% for tool in tools %}\n{{ tool|tojson }}\n{% endfor %}",
     {"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "number", "description": "é"}}}}}]}),
    ("llama_like_trim", "{% for m in messages %}{% set content = '<|' + m['role'] + '|>\n\n' + m['content'] | trim + '<|eot|>' %}"
     "{% if loop.index0 == 0 %}{% set content = bos + content %}{% endif %}{{ content }}{% endfor %}",
     {"messages": MESSAGES, "bos": "<s>"}),
    ("reversed_search_namespace", "{% set ns = namespace(last=-1) %}{% for m in messages[::-1] %}{% if ns.last < 0 and m.role == 'user' %}"
     "{% set ns.last = messages|length - 1 - loop.index0 %}{% endif %}{% endfor %}{{ ns.last }}", {"messages": MESSAGES}),
    ("think_split", "{% for m in messages if m.role == 'assistant' %}{{ m.content.split('</think>')[-1].lstrip('\\n') }}|"
     "{{ m.content.split('</think>')[0].split('<think>')[-1].strip('\\n') }}{% endfor %}", {"messages": MESSAGES}),
    ("content_list_items", "{% for item in content %}{% if item.type == 'text' %}{{ item.text|trim }}{% elif item['type'] == 'image' %}<img>{% endif %}{% endfor %}",
     {"content": [{"type": "text", "text": " a "}, {"type": "image"}, {"type": "text", "text": "b"}]}),
    ("strftime_length", "{{ strftime_now('%d %b %Y')|length }}", {}),
]


def run(env, template, variables):
    try:
        return {"rendered": env.from_string(template).render(**variables)}
    except jinja2.exceptions.TemplateSyntaxError as e:
        return {"error_type": "TemplateSyntaxError", "error": str(e)}
    except jinja2.exceptions.TemplateError as e:
        # raise_exception raises the base class itself; Jinja's own errors are subclasses.
        return {"error_type": type(e).__name__, "error": str(e)}
    except Exception as e:  # TypeError, ZeroDivisionError, ...: Python internals
        return {"error_type": type(e).__name__, "error": str(e)}


def main():
    env = environment()
    out = []
    ids = set()
    for case_id, template, variables in CASES:
        assert case_id not in ids, case_id
        ids.add(case_id)
        out.append({"id": case_id, "template": template, "vars": variables, **run(env, template, variables)})
    path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "jinja_cases.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(out)} cases to {path}")


if __name__ == "__main__":
    main()
