#include "src/jinja/lexer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "src/base/unicode.h"
#include "src/jinja/template.h"

namespace attn::jinja {

namespace {

// The code point that starts at `bytes[at]` and its length; invalid bytes count as one
// non-space character (the renderer rejects them later if they are ever printed... they are
// template text, so they are copied as they are).
char32_t code_point_at(std::string_view bytes, std::size_t at, std::size_t* length) {
  const auto lead = static_cast<unsigned char>(bytes[at]);
  std::size_t n = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  if (at + n > bytes.size()) n = 1;
  char32_t c = n == 1 ? lead : lead & (0x7F >> n);
  for (std::size_t i = 1; i < n; ++i)
    c = (c << 6) | (static_cast<unsigned char>(bytes[at + i]) & 0x3F);
  *length = n;
  return c;
}

// Python's \s: str.isspace().
bool is_space_at(std::string_view bytes, std::size_t at, std::size_t* length) {
  return is_python_space(code_point_at(bytes, at, length));
}

// The end of the whitespace run that starts at `at`.
std::size_t skip_whitespace(std::string_view text, std::size_t at) {
  std::size_t length = 0;
  while (at < text.size() && is_space_at(text, at, &length)) at += length;
  return at;
}

// Python's text.rstrip(): drops trailing whitespace of any kind.
void strip_trailing_whitespace(std::string& text) {
  while (!text.empty()) {
    std::size_t start = text.size() - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    std::size_t length = 0;
    if (!is_space_at(text, start, &length) || start + length != text.size()) return;
    text.erase(start);
  }
}

bool all_whitespace(std::string_view text) { return skip_whitespace(text, 0) == text.size(); }

class Lexer {
 public:
  explicit Lexer(std::string_view source) : source_(source) {
    for (std::size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> run() {
    while (pos_ < source_.size()) {
      const std::size_t tag = find_tag_start(pos_);
      if (tag == std::string_view::npos) {
        emit_text(std::string(source_.substr(pos_)), pos_);
        pos_ = source_.size();
        break;
      }
      lex_tag(tag);
    }
    Token end{Token::Kind::kEnd, "", 0, 0, 0, 0};
    set_position(end, source_.size());
    tokens_.push_back(std::move(end));
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void fail(const std::string& message, std::size_t offset) const {
    int line = 0;
    int column = 0;
    position(offset, &line, &column);
    throw TemplateError(message, line, column, false);
  }

  // The line and column of a byte offset. Columns count code points; they are counted on from
  // the previous position when it is earlier on the same line, so that a long line costs linear
  // time rather than quadratic.
  void position(std::size_t offset, int* line, int* column) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const std::size_t line_start = *(it - 1);
    *line = static_cast<int>(it - line_starts_.begin());
    std::size_t from = line_start;
    std::size_t counted = 0;
    if (last_offset_ >= line_start && last_offset_ <= offset) {
      from = last_offset_;
      counted = last_column_ - 1;
    }
    counted += code_point_count(source_.substr(from, offset - from));
    last_offset_ = offset;
    last_column_ = counted + 1;
    *column = static_cast<int>(last_column_);
  }

  static std::size_t code_point_count(std::string_view text) {
    return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
      return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    }));
  }

  void set_position(Token& token, std::size_t offset) const {
    position(offset, &token.line, &token.column);
  }

  void emit(Token::Kind kind, std::string text, std::size_t offset) {
    Token token{kind, std::move(text), 0, 0, 0, 0};
    set_position(token, offset);
    tokens_.push_back(std::move(token));
  }

  void emit_text(std::string text, std::size_t offset) {
    if (!text.empty()) emit(Token::Kind::kText, std::move(text), offset);
  }

  std::size_t find_tag_start(std::size_t from) const {
    for (std::size_t i = source_.find('{', from); i != std::string_view::npos;
         i = source_.find('{', i + 1)) {
      if (i + 1 < source_.size() &&
          (source_[i + 1] == '{' || source_[i + 1] == '%' || source_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string_view::npos;
  }

  // The text before a tag, with the tag's whitespace control applied: '-' strips all whitespace
  // before it; otherwise lstrip_blocks strips the spaces between a line's start and a {% or {#.
  std::string text_before(std::size_t text_start, std::size_t tag, char sign,
                          bool is_output) const {
    std::string text(source_.substr(text_start, tag - text_start));
    if (sign == '-') {
      strip_trailing_whitespace(text);
    } else if (sign != '+' && !is_output) {
      const std::size_t line_start =
          text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
      if ((line_start > 0 || line_starting_) && line_start < text.size() &&
          all_whitespace(std::string_view(text).substr(line_start))) {
        text.erase(line_start);
      }
    }
    return text;
  }

  // After a %} or #}: trim_blocks drops one newline; after a -%} all whitespace goes.
  std::size_t after_block_end(std::size_t end, char sign) const {
    if (sign == '-') return skip_whitespace(source_, end);
    if (sign != '+' && end < source_.size() && source_[end] == '\n') return end + 1;
    return end;
  }

  char sign_at(std::size_t at) const {
    return at < source_.size() && (source_[at] == '-' || source_[at] == '+') ? source_[at] : 0;
  }

  // "{% raw %}" (any spacing, '-' or '+' controls) at `tag`: the offset after it, or npos.
  std::size_t match_keyword_tag(std::size_t tag, std::string_view keyword, char* close_sign) const {
    std::size_t at = tag + 2;
    if (sign_at(at)) ++at;
    at = skip_whitespace(source_, at);
    if (source_.substr(at, keyword.size()) != keyword) return std::string_view::npos;
    at = skip_whitespace(source_, at + keyword.size());
    *close_sign = sign_at(at);
    if (*close_sign) ++at;
    if (source_.substr(at, 2) != "%}") return std::string_view::npos;
    return at + 2;
  }

  void lex_tag(std::size_t tag) {
    const char kind = source_[tag + 1];
    const char sign = sign_at(tag + 2);
    std::string text = text_before(pos_, tag, sign, kind == '{');
    emit_text(std::move(text), pos_);
    const std::size_t inner = tag + 2 + (sign ? 1 : 0);
    if (kind == '#') {
      lex_comment(tag, inner);
      return;
    }
    char raw_close = 0;
    if (kind == '%') {
      const std::size_t raw_end = match_keyword_tag(tag, "raw", &raw_close);
      if (raw_end != std::string_view::npos && raw_close != '+') {
        lex_raw(tag, raw_close == '-' ? skip_whitespace(source_, raw_end) : raw_end);
        return;
      }
    }
    emit(kind == '%' ? Token::Kind::kBlockBegin : Token::Kind::kOutputBegin, "", tag);
    lex_inside(inner, kind == '%');
  }

  void lex_comment(std::size_t tag, std::size_t inner) {
    const std::size_t close = source_.find("#}", inner);
    if (close == std::string_view::npos) fail("Missing end of comment tag", tag);
    const char sign = close > inner ? sign_at(close - 1) : 0;
    const std::size_t end = after_block_end(close + 2, sign);
    line_starting_ = end > 0 && source_[end - 1] == '\n';
    pos_ = end;
  }

  // The text of a raw block up to its {% endraw %}, which takes whitespace controls like any tag.
  void lex_raw(std::size_t tag, std::size_t body) {
    line_starting_ = body > 0 && source_[body - 1] == '\n';
    for (std::size_t at = source_.find("{%", body); at != std::string_view::npos;
         at = source_.find("{%", at + 1)) {
      char close = 0;
      const std::size_t end = match_keyword_tag(at, "endraw", &close);
      if (end == std::string_view::npos) continue;
      emit_text(text_before(body, at, sign_at(at + 2), false), body);
      pos_ = after_block_end(end, close);
      line_starting_ = pos_ > 0 && source_[pos_ - 1] == '\n';
      return;
    }
    fail("Missing end of raw directive", tag);
  }

  // The tokens inside {% %} or {{ }}, up to the closing delimiter outside any brackets.
  void lex_inside(std::size_t at, bool is_block) {
    std::vector<char> brackets;
    while (true) {
      at = skip_whitespace(source_, at);
      if (at >= source_.size()) {
        fail(is_block ? "unexpected end of template, expected end of statement block"
                      : "unexpected end of template, expected end of print statement",
             at);
      }
      if (brackets.empty()) {
        const char sign = sign_at(at);
        const std::size_t close_at = at + (sign ? 1 : 0);
        const std::string_view close = is_block ? "%}" : "}}";
        if (source_.substr(close_at, 2) == close && (is_block || sign != '+')) {
          emit(is_block ? Token::Kind::kBlockEnd : Token::Kind::kOutputEnd, "", at);
          pos_ = is_block ? after_block_end(close_at + 2, sign)
                          : (sign == '-' ? skip_whitespace(source_, close_at + 2) : close_at + 2);
          line_starting_ = pos_ > 0 && source_[pos_ - 1] == '\n';
          return;
        }
      }
      at = lex_one(at, brackets);
    }
  }

  std::size_t lex_one(std::size_t at, std::vector<char>& brackets) {
    const char c = source_[at];
    if (c == '\'' || c == '"') return lex_string(at);
    if (c >= '0' && c <= '9') return lex_number(at);
    if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      std::size_t end = at + 1;
      while (end < source_.size() &&
             (source_[end] == '_' || std::isalnum(static_cast<unsigned char>(source_[end]))))
        ++end;
      emit(Token::Kind::kName, std::string(source_.substr(at, end - at)), at);
      return end;
    }
    static constexpr std::string_view kTwoChar[] = {"//", "**", "==", "!=", "<=", ">="};
    for (std::string_view op : kTwoChar) {
      if (source_.substr(at, 2) == op) {
        emit(Token::Kind::kOperator, std::string(op), at);
        return at + 2;
      }
    }
    if (std::string_view("+-/*%~[](){}<>=.:|,;").find(c) == std::string_view::npos) {
      std::size_t length = 0;
      code_point_at(source_, at, &length);
      fail("unexpected char '" + std::string(source_.substr(at, length)) + "'", at);
    }
    if (c == '(' || c == '[' || c == '{') {
      brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (brackets.empty()) fail(std::string("unexpected '") + c + "'", at);
      if (brackets.back() != c) {
        fail(std::string("unexpected '") + c + "', expected '" + brackets.back() + "'", at);
      }
      brackets.pop_back();
    }
    emit(Token::Kind::kOperator, std::string(1, c), at);
    return at + 1;
  }

  // Digits with optional '_' separators between them, from `at`; returns the end.
  std::size_t digit_run(std::size_t at) const {
    std::size_t end = at;
    while (end < source_.size() && std::isdigit(static_cast<unsigned char>(source_[end]))) {
      ++end;
      if (end + 1 < source_.size() && source_[end] == '_' &&
          std::isdigit(static_cast<unsigned char>(source_[end + 1]))) {
        ++end;
      }
    }
    return end;
  }

  std::size_t lex_number(std::size_t at) {
    std::size_t end = digit_run(at);
    bool is_float = false;
    if (end + 1 < source_.size() && source_[end] == '.' &&
        std::isdigit(static_cast<unsigned char>(source_[end + 1]))) {
      end = digit_run(end + 1);
      is_float = true;
    }
    if (end < source_.size() && (source_[end] == 'e' || source_[end] == 'E')) {
      std::size_t exponent = end + 1;
      if (exponent < source_.size() && (source_[exponent] == '+' || source_[exponent] == '-'))
        ++exponent;
      if (exponent < source_.size() &&
          std::isdigit(static_cast<unsigned char>(source_[exponent]))) {
        end = digit_run(exponent);
        is_float = true;
      }
    }
    std::string digits;
    for (char ch : source_.substr(at, end - at)) {
      if (ch != '_') digits += ch;
    }
    Token token{is_float ? Token::Kind::kFloat : Token::Kind::kInteger, digits, 0, 0, 0, 0};
    set_position(token, at);
    errno = 0;
    if (is_float) {
      token.floating = std::strtod(digits.c_str(), nullptr);
    } else {
      token.integer = std::strtoll(digits.c_str(), nullptr, 10);
      if (errno == ERANGE) fail("the integer " + digits + " is too large", at);
    }
    tokens_.push_back(std::move(token));
    return end;
  }

  // A string literal with Python's escapes (\n, \t, \x41, \u00e9, \U0001F600, octal, \\, \',
  // \"); an unknown escape stays as written, a backslash before a newline joins the lines.
  std::size_t lex_string(std::size_t at) {
    const char quote = source_[at];
    std::string value;
    std::size_t i = at + 1;
    auto hex = [&](std::size_t digits) {
      if (i + digits > source_.size()) fail("truncated \\x, \\u or \\U escape in a string", i);
      std::uint32_t code = 0;
      for (std::size_t k = 0; k < digits; ++k) {
        const char h = source_[i + k];
        if (!std::isxdigit(static_cast<unsigned char>(h))) fail("invalid escape in a string", i);
        code = code * 16 + static_cast<std::uint32_t>(std::isdigit(static_cast<unsigned char>(h))
                                                          ? h - '0'
                                                          : (std::tolower(h) - 'a' + 10));
      }
      if (code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
        fail("invalid code point in a string", i);
      append_utf8(value, code);
      i += digits;
    };
    while (true) {
      if (i >= source_.size()) fail("unexpected end of template inside a string", at);
      const char c = source_[i];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++i;
        continue;
      }
      if (i + 1 >= source_.size()) fail("unexpected end of template inside a string", at);
      const char e = source_[i + 1];
      i += 2;
      switch (e) {
        case '\n':
          break;
        case '\\':
        case '\'':
        case '"':
          value += e;
          break;
        case 'a':
          value += '\a';
          break;
        case 'b':
          value += '\b';
          break;
        case 'f':
          value += '\f';
          break;
        case 'n':
          value += '\n';
          break;
        case 'r':
          value += '\r';
          break;
        case 't':
          value += '\t';
          break;
        case 'v':
          value += '\v';
          break;
        case 'x':
          hex(2);
          break;
        case 'u':
          hex(4);
          break;
        case 'U':
          hex(8);
          break;
        default:
          if (e >= '0' && e <= '7') {
            std::uint32_t code = static_cast<std::uint32_t>(e - '0');
            for (int k = 0; k < 2 && i < source_.size() && source_[i] >= '0' && source_[i] <= '7';
                 ++k) {
              code = code * 8 + static_cast<std::uint32_t>(source_[i++] - '0');
            }
            append_utf8(value, code);
          } else {
            value += '\\';
            value += e;
          }
      }
    }
    emit(Token::Kind::kString, std::move(value), at);
    return i + 1;
  }

  std::string_view source_;
  std::vector<std::size_t> line_starts_{0};
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  bool line_starting_ = true;            // the last match ended a line (for lstrip_blocks)
  mutable std::size_t last_offset_ = 0;  // the last position() asked for, and its column
  mutable std::size_t last_column_ = 1;
};

}  // namespace

std::string normalize_source(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace attn::jinja
