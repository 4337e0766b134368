#pragma once

// Splits a template into tokens the way Jinja2's lexer does in transformers' environment:
// text between tags (with trim_blocks, lstrip_blocks and the '-' / '+' whitespace controls
// already applied), the tags' delimiters, and the names, literals and operators inside tags.
// Comments vanish and {% raw %} blocks become text here.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attn::jinja {

struct Token {
  enum class Kind {
    kText,         // template text, printed as is
    kBlockBegin,   // {%
    kBlockEnd,     // %}
    kOutputBegin,  // {{
    kOutputEnd,    // }}
    kName,         // also the keywords: if, for, in, not, ...
    kString,       // text: the literal's value, escapes resolved
    kInteger,
    kFloat,
    kOperator,  // text: + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } . : | ,
    kEnd,       // end of the template
  };
  Kind kind;
  std::string text;
  std::int64_t integer = 0;
  double floating = 0;
  int line = 1;
  int column = 1;
};

// Tokenizes `source`, whose "\r\n" and "\r" are already "\n" and whose one trailing newline is
// already dropped (see normalize_source). A lexical error is a TemplateError.
std::vector<Token> tokenize(std::string_view source);

// Jinja2's preparation of the source: newlines unified, one trailing newline dropped.
std::string normalize_source(std::string_view source);

}  // namespace attn::jinja
