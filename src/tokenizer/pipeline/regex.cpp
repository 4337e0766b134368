#include "src/tokenizer/pipeline/regex.h"

#include <oniguruma.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <string>

#include "src/base/error.h"
#include "src/io/json_util.h"

namespace attn::pipeline {
namespace {

// Backtracking budgets. A tokenizer pattern matches in a few steps per character; these only
// stop a pathological pattern (nested quantifiers) or input from running for hours. The budget
// of one match attempt is Oniguruma's default; the budget of a whole search grows with the text
// so that long texts with honest patterns never reach it.
constexpr unsigned long kRetryLimitInMatch = 10'000'000;
constexpr unsigned long kRetryLimitPerByte = 10'000;

std::string onig_message(int code, OnigErrorInfo* info = nullptr) {
  OnigUChar text[ONIG_MAX_ERROR_MESSAGE_LEN];
  const int length =
      info ? onig_error_code_to_str(text, code, info) : onig_error_code_to_str(text, code);
  return std::string(reinterpret_cast<const char*>(text), std::max(length, 0));
}

void initialize_oniguruma() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}

// The byte length of the UTF-8 character that starts with `lead`.
std::size_t utf8_char_length(unsigned char lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

}  // namespace

struct Regex::Impl {
  OnigRegex regex = nullptr;
  ~Impl() {
    if (regex) onig_free(regex);
  }
};

Regex::Regex(std::string_view pattern, std::string where)
    : impl_(std::make_unique<Impl>()), where_(std::move(where)) {
  initialize_oniguruma();
  const auto* begin = reinterpret_cast<const OnigUChar*>(pattern.data());
  OnigErrorInfo info;
  // The onig crate's Regex::new: no options, Oniguruma's default syntax.
  const int status = onig_new(&impl_->regex, begin, begin + pattern.size(), ONIG_OPTION_NONE,
                              ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT, &info);
  if (status != ONIG_NORMAL) {
    impl_->regex = nullptr;
    throw Error(where_ + ": regex " + brief_text(pattern) +
                " does not compile: " + onig_message(status, &info));
  }
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

void Regex::find_all(std::string_view text, std::vector<Match>& matches) const {
  const auto* begin = reinterpret_cast<const OnigUChar*>(text.data());
  const auto* end = begin + text.size();
  OnigRegion* region = onig_region_new();
  OnigMatchParam* param = onig_new_match_param();
  onig_initialize_match_param(param);
  onig_set_retry_limit_in_match_of_match_param(param, kRetryLimitInMatch);
  onig_set_retry_limit_in_search_of_match_param(
      param, std::max<unsigned long>(kRetryLimitInMatch, kRetryLimitPerByte * text.size()));
  struct Release {
    OnigRegion* region;
    OnigMatchParam* param;
    ~Release() {
      onig_region_free(region, 1);
      onig_free_match_param(param);
    }
  } release{region, param};

  // As the onig crate's find_iter: each search starts where the last match ended (the whole
  // text stays the subject, so lookbehinds see what came before), and an empty match right
  // where the previous match ended is skipped by moving on one character.
  std::size_t search_from = 0;
  std::optional<std::size_t> last_match_end;
  while (search_from <= text.size()) {
    const int found = onig_search_with_param(impl_->regex, begin, end, begin + search_from, end,
                                             region, ONIG_OPTION_NONE, param);
    if (found == ONIG_MISMATCH) return;
    if (found < 0) {
      throw Error(where_ + ": regex search gave up on a text of " + std::to_string(text.size()) +
                  " bytes (" + onig_message(found) + ")");
    }
    const auto start = static_cast<std::size_t>(region->beg[0]);
    const auto stop = static_cast<std::size_t>(region->end[0]);
    if (start == stop && last_match_end == stop) {
      if (search_from == text.size()) return;
      search_from += utf8_char_length(static_cast<unsigned char>(text[search_from]));
      continue;
    }
    search_from = stop;
    last_match_end = stop;
    matches.emplace_back(start, stop);
  }
}

}  // namespace attn::pipeline
