#include "src/jinja/parser.h"

#include <initializer_list>
#include <string_view>

#include "src/jinja/template.h"

namespace attn::jinja {

namespace {

using TokenKind = Token::Kind;

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, int max_depth)
      : tokens_(tokens), max_depth_(max_depth) {}

  Body parse_template() {
    std::string end;
    Body body = subparse({}, &end);
    return body;
  }

 private:
  // Counts one level of nesting for as long as it lives; too deep is a syntax error.
  class DepthGuard {
   public:
    explicit DepthGuard(Parser& parser) : parser_(parser) {
      if (++parser_.depth_ > parser_.max_depth_) {
        parser_.fail("the template nests blocks or brackets more than " +
                     std::to_string(parser_.max_depth_) + " deep");
      }
    }
    ~DepthGuard() { --parser_.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;

   private:
    Parser& parser_;
  };

  const Token& current() const { return tokens_[pos_]; }
  const Token& peek(std::size_t ahead = 1) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& next() {
    const Token& token = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return token;
  }

  [[noreturn]] void fail(const std::string& message) const { fail_at(current(), message); }
  [[noreturn]] static void fail_at(const Token& token, const std::string& message) {
    throw TemplateError(message, token.line, token.column, false);
  }

  static std::string describe(const Token& token) {
    switch (token.kind) {
      case TokenKind::kText:
        return "template text";
      case TokenKind::kBlockBegin:
        return "begin of statement block";
      case TokenKind::kBlockEnd:
        return "end of statement block";
      case TokenKind::kOutputBegin:
        return "begin of print statement";
      case TokenKind::kOutputEnd:
        return "end of print statement";
      case TokenKind::kString:
        return "string";
      case TokenKind::kInteger:
        return "integer";
      case TokenKind::kFloat:
        return "float";
      case TokenKind::kEnd:
        return "end of template";
      default:
        return token.text;
    }
  }

  bool at_operator(std::string_view op) const {
    return current().kind == TokenKind::kOperator && current().text == op;
  }
  bool at_name(std::string_view name) const {
    return current().kind == TokenKind::kName && current().text == name;
  }
  bool skip_operator(std::string_view op) {
    if (!at_operator(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!at_name(name)) return false;
    next();
    return true;
  }
  void expect_operator(std::string_view op) {
    if (!skip_operator(op))
      fail("expected '" + std::string(op) + "', got '" + describe(current()) + "'");
  }
  void expect_name(std::string_view name) {
    if (!skip_name(name))
      fail("expected '" + std::string(name) + "', got '" + describe(current()) + "'");
  }
  std::string expect_identifier() {
    if (current().kind != TokenKind::kName)
      fail("expected a name, got '" + describe(current()) + "'");
    return next().text;
  }
  void expect_block_end() {
    if (current().kind != TokenKind::kBlockEnd) {
      fail("expected end of statement block, got '" + describe(current()) + "'");
    }
    next();
  }

  ExprPtr make(Expr::Kind kind, const Token& at) {
    auto expr = std::make_unique<Expr>();
    expr->kind = kind;
    expr->line = at.line;
    expr->column = at.column;
    return expr;
  }

  StmtPtr make_stmt(Stmt::Kind kind, const Token& at) {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = kind;
    stmt->line = at.line;
    stmt->column = at.column;
    return stmt;
  }

  // ---- statements ---------------------------------------------------------------------------

  // Statements up to a {% name %} with a name in `ends`; consumes "{%" and that name, leaving
  // the rest of the tag to the caller, and stores the name in `*end`.
  Body subparse(std::initializer_list<std::string_view> ends, std::string* end) {
    DepthGuard guard(*this);
    Body body;
    while (true) {
      const Token& token = current();
      switch (token.kind) {
        case TokenKind::kText: {
          auto stmt = make_stmt(Stmt::Kind::kText, token);
          stmt->text = token.text;
          body.push_back(std::move(stmt));
          next();
          break;
        }
        case TokenKind::kOutputBegin: {
          next();
          auto stmt = make_stmt(Stmt::Kind::kOutput, token);
          stmt->exprs.push_back(parse_tuple(true, false));
          if (current().kind != TokenKind::kOutputEnd) {
            fail("expected end of print statement, got '" + describe(current()) + "'");
          }
          next();
          body.push_back(std::move(stmt));
          break;
        }
        case TokenKind::kBlockBegin: {
          const Token& name = peek();
          if (name.kind == TokenKind::kName) {
            for (std::string_view candidate : ends) {
              if (name.text == candidate) {
                next();
                next();
                *end = name.text;
                return body;
              }
            }
          }
          next();
          body.push_back(parse_statement(ends));
          break;
        }
        case TokenKind::kEnd:
          if (ends.size() > 0) {
            std::string expected;
            for (std::string_view candidate : ends) {
              expected += (expected.empty() ? "'" : " or '") + std::string(candidate) + "'";
            }
            fail("Unexpected end of template. Jinja was looking for the following tags: " +
                 expected + ".");
          }
          return body;
        default:
          fail("unexpected '" + describe(token) + "'");
      }
    }
  }

  StmtPtr parse_statement(std::initializer_list<std::string_view> enclosing_ends) {
    const Token& token = current();
    if (token.kind != TokenKind::kName) fail("tag name expected");
    const std::string& name = token.text;
    if (name == "if") return parse_if();
    if (name == "for") return parse_for();
    if (name == "set") return parse_set();
    if (name == "macro") return parse_macro();
    if (name == "call") return parse_call_block();
    if (name == "filter") return parse_filter_block();
    if (name == "generation") {
      next();
      expect_block_end();
      auto stmt = make_stmt(Stmt::Kind::kScope, token);
      stmt->bodies.push_back(parse_body({"endgeneration"}));
      return stmt;
    }
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) fail("'" + name + "' outside of a loop");
      next();
      expect_block_end();
      return make_stmt(name == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue, token);
    }
    if (name == "include" || name == "import" || name == "from" || name == "extends" ||
        name == "block" || name == "with" || name == "autoescape" || name == "do") {
      fail("the '" + name + "' tag is not supported in chat templates");
    }
    std::string message = "Encountered unknown tag '" + name + "'.";
    if (enclosing_ends.size() > 0) {
      message += " Jinja was looking for the following tags: ";
      bool first = true;
      for (std::string_view candidate : enclosing_ends) {
        message += (first ? "'" : " or '") + std::string(candidate) + "'";
        first = false;
      }
      message += ".";
    }
    fail(message);
  }

  // The statements up to the single tag `end`, which is consumed with its "%}".
  Body parse_body(std::initializer_list<std::string_view> ends) {
    std::string end;
    Body body = subparse(ends, &end);
    expect_block_end();
    return body;
  }

  StmtPtr parse_if() {
    auto stmt = make_stmt(Stmt::Kind::kIf, next());
    while (true) {
      stmt->exprs.push_back(parse_tuple(false, false));
      expect_block_end();
      std::string end;
      stmt->bodies.push_back(subparse({"elif", "else", "endif"}, &end));
      if (end == "elif") continue;
      if (end == "else") {
        expect_block_end();
        stmt->bodies.push_back(parse_body({"endif"}));
      } else {
        expect_block_end();
      }
      return stmt;
    }
  }

  Target parse_target(bool allow_attribute) {
    Target target;
    const bool parenthesized = skip_operator("(");
    target.names.push_back(expect_identifier());
    if (allow_attribute && !parenthesized && at_operator(".")) {
      next();
      target.attribute = expect_identifier();
      return target;
    }
    while (skip_operator(",")) {
      target.unpack = true;
      if (current().kind != TokenKind::kName) break;
      target.names.push_back(expect_identifier());
    }
    if (parenthesized) {
      expect_operator(")");
      target.unpack = true;
    }
    return target;
  }

  StmtPtr parse_for() {
    auto stmt = make_stmt(Stmt::Kind::kFor, next());
    stmt->target = parse_target(false);
    expect_name("in");
    stmt->exprs.push_back(parse_tuple(false, false));
    stmt->exprs.push_back(skip_name("if") ? parse_expression(true) : nullptr);
    stmt->recursive = skip_name("recursive");
    expect_block_end();
    ++loop_depth_;
    std::string end;
    stmt->bodies.push_back(subparse({"endfor", "else"}, &end));
    --loop_depth_;
    expect_block_end();
    if (end == "else") {
      stmt->bodies.push_back(parse_body({"endfor"}));
    } else {
      stmt->bodies.emplace_back();
    }
    return stmt;
  }

  StmtPtr parse_set() {
    const Token& token = next();
    Target target = parse_target(true);
    if (skip_operator("=")) {
      auto stmt = make_stmt(Stmt::Kind::kSet, token);
      stmt->target = std::move(target);
      stmt->exprs.push_back(parse_tuple(true, false));
      expect_block_end();
      return stmt;
    }
    auto stmt = make_stmt(Stmt::Kind::kSetBlock, token);
    stmt->target = std::move(target);
    expect_block_end();
    stmt->bodies.push_back(parse_body({"endset"}));
    return stmt;
  }

  // "(a, b=default, ...)" of a macro or a call block's caller.
  void parse_parameters(Stmt& stmt) {
    expect_operator("(");
    while (!skip_operator(")")) {
      if (!stmt.parameters.empty()) expect_operator(",");
      if (skip_operator(")")) break;
      stmt.parameters.push_back(expect_identifier());
      stmt.defaults.push_back(skip_operator("=") ? parse_expression(true) : nullptr);
    }
  }

  StmtPtr parse_macro() {
    auto stmt = make_stmt(Stmt::Kind::kMacro, next());
    stmt->text = expect_identifier();
    parse_parameters(*stmt);
    expect_block_end();
    const int outer_loops = loop_depth_;
    loop_depth_ = 0;
    stmt->bodies.push_back(parse_body({"endmacro"}));
    loop_depth_ = outer_loops;
    return stmt;
  }

  StmtPtr parse_call_block() {
    auto stmt = make_stmt(Stmt::Kind::kCallBlock, next());
    if (at_operator("(")) parse_parameters(*stmt);
    ExprPtr call = parse_expression(true);
    if (call->kind != Expr::Kind::kCall) fail("expected call");
    stmt->exprs.push_back(std::move(call));
    expect_block_end();
    const int outer_loops = loop_depth_;
    loop_depth_ = 0;
    stmt->bodies.push_back(parse_body({"endcall"}));
    loop_depth_ = outer_loops;
    return stmt;
  }

  StmtPtr parse_filter_block() {
    auto stmt = make_stmt(Stmt::Kind::kFilterBlock, next());
    ExprPtr chain = parse_filters(nullptr, true);
    stmt->exprs.push_back(std::move(chain));
    expect_block_end();
    stmt->bodies.push_back(parse_body({"endfilter"}));
    return stmt;
  }

  // ---- expressions ----------------------------------------------------------------------------

  bool at_tuple_end() const {
    const TokenKind kind = current().kind;
    return kind == TokenKind::kBlockEnd || kind == TokenKind::kOutputEnd ||
           kind == TokenKind::kEnd || at_operator(")");
  }

  // Expressions separated by commas: one expression alone, else a tuple.
  ExprPtr parse_tuple(bool with_condition, bool parenthesized) {
    const Token& start = current();
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_operator(",");
      if (at_tuple_end()) break;
      items.push_back(with_condition ? parse_expression(true) : parse_or());
      if (at_operator(",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!parenthesized) fail("Expected an expression, got '" + describe(current()) + "'");
    }
    auto tuple = make(Expr::Kind::kTuple, start);
    tuple->children = std::move(items);
    return tuple;
  }

  ExprPtr parse_expression(bool with_condition) {
    return with_condition ? parse_condition() : parse_or();
  }

  ExprPtr parse_condition() {
    DepthGuard guard(*this);
    ExprPtr expr = parse_or();
    while (at_name("if")) {
      auto condition = make(Expr::Kind::kCondition, next());
      ExprPtr test = parse_or();
      ExprPtr otherwise = skip_name("else") ? parse_condition() : nullptr;
      condition->children.push_back(std::move(expr));
      condition->children.push_back(std::move(test));
      condition->children.push_back(std::move(otherwise));
      expr = std::move(condition);
    }
    return expr;
  }

  ExprPtr binary(Expr::Kind kind, const Token& at, ExprPtr left, ExprPtr right,
                 std::string op = "") {
    auto expr = make(kind, at);
    expr->name = std::move(op);
    expr->children.push_back(std::move(left));
    expr->children.push_back(std::move(right));
    return expr;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (at_name("or")) {
      const Token& op = next();
      left = binary(Expr::Kind::kOr, op, std::move(left), parse_and());
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (at_name("and")) {
      const Token& op = next();
      left = binary(Expr::Kind::kAnd, op, std::move(left), parse_not());
    }
    return left;
  }

  ExprPtr parse_not() {
    if (at_name("not")) {
      DepthGuard guard(*this);
      auto expr = make(Expr::Kind::kNot, next());
      expr->children.push_back(parse_not());
      return expr;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const Token& start = current();
    ExprPtr first = parse_math1();
    auto compare = make(Expr::Kind::kCompare, start);
    compare->children.push_back(std::move(first));
    while (true) {
      const Token& token = current();
      if (token.kind == TokenKind::kOperator &&
          (token.text == "==" || token.text == "!=" || token.text == "<" || token.text == "<=" ||
           token.text == ">" || token.text == ">=")) {
        compare->ops.push_back(next().text);
      } else if (at_name("in")) {
        next();
        compare->ops.push_back("in");
      } else if (at_name("not") && peek().kind == TokenKind::kName && peek().text == "in") {
        next();
        next();
        compare->ops.push_back("not in");
      } else {
        break;
      }
      compare->children.push_back(parse_math1());
    }
    if (compare->ops.empty()) return std::move(compare->children[0]);
    return compare;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (at_operator("+") || at_operator("-")) {
      const Token& op = next();
      left = binary(Expr::Kind::kBinary, op, std::move(left), parse_concat(), op.text);
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (at_operator("~")) {
      const Token& op = next();
      left = binary(Expr::Kind::kBinary, op, std::move(left), parse_math2(), "~");
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (at_operator("*") || at_operator("/") || at_operator("//") || at_operator("%")) {
      const Token& op = next();
      left = binary(Expr::Kind::kBinary, op, std::move(left), parse_pow(), op.text);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (at_operator("**")) {
      const Token& op = next();
      left = binary(Expr::Kind::kBinary, op, std::move(left), parse_unary(true), "**");
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    ExprPtr expr;
    if (at_operator("-") || at_operator("+")) {
      const Token& op = next();
      expr = make(op.text == "-" ? Expr::Kind::kNegate : Expr::Kind::kPlus, op);
      expr->children.push_back(parse_unary(false));
    } else {
      expr = parse_primary();
    }
    expr = parse_postfix(std::move(expr));
    if (with_filter) expr = parse_filter_expr(std::move(expr));
    return expr;
  }

  ExprPtr parse_primary() {
    const Token& token = current();
    switch (token.kind) {
      case TokenKind::kName: {
        next();
        if (token.text == "true" || token.text == "True" || token.text == "false" ||
            token.text == "False") {
          auto expr = make(Expr::Kind::kLiteral, token);
          expr->literal = Value::boolean(token.text == "true" || token.text == "True");
          return expr;
        }
        if (token.text == "none" || token.text == "None") {
          auto expr = make(Expr::Kind::kLiteral, token);
          expr->literal = Value::none();
          return expr;
        }
        auto expr = make(Expr::Kind::kName, token);
        expr->name = token.text;
        return expr;
      }
      case TokenKind::kString: {
        std::string text;
        while (current().kind == TokenKind::kString) text += next().text;  // "a" "b" is "ab"
        auto expr = make(Expr::Kind::kLiteral, token);
        expr->literal = Value::string(std::move(text));
        return expr;
      }
      case TokenKind::kInteger:
      case TokenKind::kFloat: {
        next();
        auto expr = make(Expr::Kind::kLiteral, token);
        expr->literal = token.kind == TokenKind::kInteger ? Value::integer(token.integer)
                                                          : Value::floating(token.floating);
        return expr;
      }
      case TokenKind::kOperator:
        if (token.text == "(") {
          next();
          ExprPtr expr = parse_tuple(true, true);
          expect_operator(")");
          return expr;
        }
        if (token.text == "[") return parse_list();
        if (token.text == "{") return parse_dict();
        break;
      default:
        break;
    }
    fail("unexpected '" + describe(token) + "'");
  }

  ExprPtr parse_list() {
    auto list = make(Expr::Kind::kList, next());
    while (!at_operator("]")) {
      if (!list->children.empty()) expect_operator(",");
      if (at_operator("]")) break;
      list->children.push_back(parse_expression(true));
    }
    next();
    return list;
  }

  ExprPtr parse_dict() {
    auto dict = make(Expr::Kind::kDict, next());
    while (!at_operator("}")) {
      if (!dict->children.empty()) expect_operator(",");
      if (at_operator("}")) break;
      dict->children.push_back(parse_expression(true));
      expect_operator(":");
      dict->children.push_back(parse_expression(true));
    }
    next();
    return dict;
  }

  ExprPtr parse_postfix(ExprPtr expr) {
    while (true) {
      if (at_operator(".") || at_operator("[")) {
        expr = parse_subscript(std::move(expr));
      } else if (at_operator("(")) {
        expr = parse_call(std::move(expr));
      } else {
        return expr;
      }
    }
  }

  ExprPtr parse_filter_expr(ExprPtr expr) {
    while (true) {
      if (at_operator("|")) {
        expr = parse_filters(std::move(expr), false);
      } else if (at_name("is")) {
        expr = parse_test(std::move(expr));
      } else if (at_operator("(")) {
        expr = parse_call(std::move(expr));
      } else {
        return expr;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr object) {
    const Token& token = next();
    if (token.text == ".") {
      const Token& attribute = next();
      if (attribute.kind == TokenKind::kName) {
        auto expr = make(Expr::Kind::kAttribute, token);
        expr->name = attribute.text;
        expr->children.push_back(std::move(object));
        return expr;
      }
      if (attribute.kind != TokenKind::kInteger) fail_at(attribute, "expected name or number");
      auto index = make(Expr::Kind::kLiteral, attribute);
      index->literal = Value::integer(attribute.integer);
      auto expr = make(Expr::Kind::kItem, token);
      expr->children.push_back(std::move(object));
      expr->children.push_back(std::move(index));
      return expr;
    }
    // [index], [start:stop:step], or [a, b] (a tuple key)
    std::vector<ExprPtr> parts;
    bool is_slice = false;
    std::vector<ExprPtr> tuple_items;
    while (!at_operator("]")) {
      if (!tuple_items.empty()) expect_operator(",");
      ExprPtr part = at_operator(":") ? nullptr : parse_expression(true);
      if (at_operator(":")) {
        is_slice = true;
        parts.push_back(std::move(part));
        next();
        parts.push_back(at_operator(":") || at_operator("]") ? nullptr : parse_expression(true));
        if (skip_operator(":")) {
          parts.push_back(at_operator("]") ? nullptr : parse_expression(true));
        } else {
          parts.push_back(nullptr);
        }
        break;
      }
      tuple_items.push_back(std::move(part));
      if (!at_operator(",")) break;
    }
    expect_operator("]");
    if (is_slice) {
      auto expr = make(Expr::Kind::kSlice, token);
      expr->children.push_back(std::move(object));
      for (auto& part : parts) expr->children.push_back(std::move(part));
      return expr;
    }
    if (tuple_items.empty()) fail_at(token, "expected subscript expression");
    auto expr = make(Expr::Kind::kItem, token);
    expr->children.push_back(std::move(object));
    if (tuple_items.size() == 1) {
      expr->children.push_back(std::move(tuple_items[0]));
    } else {
      auto tuple = make(Expr::Kind::kTuple, token);
      tuple->children = std::move(tuple_items);
      expr->children.push_back(std::move(tuple));
    }
    return expr;
  }

  // "(args, name=value, ..., *args, **kwargs)" appended to `call`'s children and keyword_names,
  // star_args and star_kwargs, in the order jinja2's parser accepts: positionals, then keywords
  // and at most one *args, then at most one **kwargs.
  void parse_arguments(Expr& call) {
    expect_operator("(");
    auto ensure = [&](bool valid) {
      if (!valid) fail("invalid syntax for function call expression");
    };
    bool first = true;
    while (!at_operator(")")) {
      if (!first) {
        expect_operator(",");
        if (at_operator(")")) break;
      }
      first = false;
      if (at_operator("*")) {
        ensure(!call.star_args && !call.star_kwargs);
        next();
        call.star_args = parse_expression(true);
      } else if (at_operator("**")) {
        ensure(!call.star_kwargs);
        next();
        call.star_kwargs = parse_expression(true);
      } else if (current().kind == TokenKind::kName && peek().kind == TokenKind::kOperator &&
                 peek().text == "=") {
        ensure(!call.star_kwargs);
        call.keyword_names.push_back(next().text);
        next();
        call.children.push_back(parse_expression(true));
      } else {
        ensure(!call.star_args && !call.star_kwargs && call.keyword_names.empty());
        call.children.push_back(parse_expression(true));
      }
    }
    next();
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto call = make(Expr::Kind::kCall, current());
    call->children.push_back(std::move(callee));
    parse_arguments(*call);
    return call;
  }

  std::string dotted_name() {
    std::string name = expect_identifier();
    while (skip_operator(".")) {
      name += '.';
      name += expect_identifier();
    }
    return name;
  }

  // "|f(args)|g ..." applied to `input` (null in a filter block: "filter f|g").
  ExprPtr parse_filters(ExprPtr input, bool start_inline) {
    while (start_inline || at_operator("|")) {
      if (!start_inline) next();
      start_inline = false;
      auto filter = make(Expr::Kind::kFilter, current());
      filter->name = dotted_name();
      filter->children.push_back(std::move(input));
      if (at_operator("(")) parse_arguments(*filter);
      input = std::move(filter);
    }
    return input;
  }

  ExprPtr parse_test(ExprPtr input) {
    const Token& is = next();
    const bool negated = skip_name("not");
    auto test = make(Expr::Kind::kTest, is);
    test->name = dotted_name();
    test->children.push_back(std::move(input));
    const Token& token = current();
    if (at_operator("(")) {
      parse_arguments(*test);
    } else if ((token.kind == TokenKind::kName || token.kind == TokenKind::kString ||
                token.kind == TokenKind::kInteger || token.kind == TokenKind::kFloat ||
                at_operator("[") || at_operator("{")) &&
               !at_name("else") && !at_name("or") && !at_name("and")) {
      if (at_name("is")) fail("You cannot chain multiple tests with is");
      DepthGuard guard(*this);
      test->children.push_back(parse_postfix(parse_primary()));
    }
    if (!negated) return test;
    auto negation = make(Expr::Kind::kNot, is);
    negation->children.push_back(std::move(test));
    return negation;
  }

  const std::vector<Token>& tokens_;
  std::size_t pos_ = 0;
  int max_depth_;
  int depth_ = 0;
  int loop_depth_ = 0;  // for loops around the current statement (break/continue need one)
};

}  // namespace

Body parse(const std::vector<Token>& tokens, int max_depth) {
  return Parser(tokens, max_depth).parse_template();
}

}  // namespace attn::jinja
