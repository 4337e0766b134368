#pragma once

// Small helpers shared by the tokenizer suites.

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/base/error.h"

namespace attn::test {

// Text quoted as JSON so that whitespace and control characters are visible in failures.
inline std::string json_quoted(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// "1 2 3", the layout of the tokenizer test vectors' .out files.
inline std::string join(const std::vector<int>& ids) {
  std::string joined;
  for (int id : ids) {
    if (!joined.empty()) joined += ' ';
    joined += std::to_string(id);
  }
  return joined;
}

// The message of the attn::Error that `action` throws (a test failure if it throws none).
inline std::string error_message(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected attn::Error";
  return "";
}

inline ::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << json_quoted(text) << " does not contain " << json_quoted(part);
}

}  // namespace attn::test
