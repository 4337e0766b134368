#pragma once

// The syntax tree of a template and the parser that builds it from tokens, following Jinja2's
// grammar and operator precedence (jinja2/parser.py).

#include <memory>
#include <string>
#include <vector>

#include "src/jinja/lexer.h"
#include "src/jinja/value.h"

namespace attn::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,    // literal
    kName,       // name
    kList,       // children: the items
    kTuple,      // children: the items
    kDict,       // children: key, value, key, value, ...
    kAttribute,  // children[0].name
    kItem,       // children[0][children[1]]
    kSlice,      // children[0][children[1]:children[2]:children[3]] (null children: omitted)
    kCall,       // children[0](children[1..]); the last keyword_names.size() are keywords
    kFilter,     // children[0]|name(children[1..]); children[0] is null in a filter block
    kTest,       // children[0] is name(children[1..])
    kNot,        // not children[0]
    kNegate,     // -children[0]
    kPlus,       // +children[0]
    kBinary,     // children[0] op children[1], op in name: + - * / // % ** ~
    kAnd,        // children[0] and children[1]
    kOr,         // children[0] or children[1]
    kCompare,    // children[0] ops[0] children[1] ops[1] children[2] ... (chained)
    kCondition,  // children[0] if children[1] else children[2] (null: no else)
  };
  Kind kind;
  int line = 0;
  int column = 0;
  std::string name;
  Value literal;
  std::vector<ExprPtr> children;
  std::vector<std::string> keyword_names;
  std::vector<std::string> ops;
  // kCall, kFilter, kTest: f(*star_args, **star_kwargs), or null. The items of star_args follow
  // the positional arguments; the entries of star_kwargs (a dict) follow the keywords.
  ExprPtr star_args;
  ExprPtr star_kwargs;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// What a for or set assigns to: one name, names to unpack a sequence into, or a namespace
// attribute (namespace_name.attribute).
struct Target {
  std::vector<std::string> names;
  bool unpack = false;
  std::string attribute;
};

struct Stmt {
  enum class Kind {
    kText,         // text
    kOutput,       // {{ exprs[0] }}
    kIf,           // exprs: the if and elif conditions; bodies: theirs, then the else body
    kFor,          // exprs[0]: iterable, exprs[1]: filter (or null); bodies: body, else body;
                   // recursive: the body can call loop(items) to run itself over items
    kSet,          // target = exprs[0]
    kSetBlock,     // target = rendered bodies[0]
    kMacro,        // name(parameters with defaults in exprs) bodies[0]
    kCallBlock,    // exprs[0]: the call; parameters: caller's; bodies[0]: caller's body
    kFilterBlock,  // exprs[0]: the filter chain (innermost input null); bodies[0]
    kBreak,
    kContinue,
    kScope,  // bodies[0] (a {% generation %} block)
  };
  Kind kind;
  int line = 0;
  int column = 0;
  std::string text;  // kText; the macro's name
  std::vector<ExprPtr> exprs;
  std::vector<Body> bodies;
  Target target;
  std::vector<std::string> parameters;  // macro or caller parameters
  std::vector<ExprPtr> defaults;        // per parameter, null for none
  bool recursive = false;               // a {% for ... recursive %}
};

// Parses the tokens of a template. Syntax errors are TemplateErrors; blocks and brackets nested
// deeper than `max_depth` are one too (so that no input overflows the stack).
Body parse(const std::vector<Token>& tokens, int max_depth);

}  // namespace attn::jinja
