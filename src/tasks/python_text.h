#pragma once

#include <string>
#include <string_view>

// Python's str.strip() and str.lower(), which sentence-transformers applies to a text before its
// tokenizer sees it. Both take and return UTF-8; they throw Error naming `what` at the first
// byte that is not UTF-8.
namespace attn {

// `text` without leading and trailing characters for which Python's str.isspace() is true: the
// Unicode White_Space characters (U+0085, U+00A0, U+2028, U+3000, ...) and U+001C..U+001F.
std::string python_strip(std::string_view text, std::string_view what);

// Python's str.lower() of a whole string: the full lowercase mapping (U+0130 becomes "i" and a
// combining dot above), and a capital sigma that ends a word becomes the final sigma U+03C2.
std::string python_lower(std::string_view text, std::string_view what);

}  // namespace attn
