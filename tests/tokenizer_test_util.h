#pragma once

// Small helpers shared by the tokenizer suites.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "src/base/error.h"
#include "tests/cli_util.h"

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

// llama.cpp's tokenizer test vectors (../shared/golden/tokenizer-vectors): NAME.inp holds the
// strings, each followed by "\n__ggml_vocab_test__\n"; NAME.out one line of space-separated
// ids per string.
struct TokenizerVectors {
  std::vector<std::string> texts;
  std::vector<std::vector<int>> expected;
};

inline TokenizerVectors read_tokenizer_vectors(const std::filesystem::path& dir,
                                               const std::string& name) {
  TokenizerVectors vectors;
  const std::string inputs = read_file(dir / (name + ".inp"));
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::size_t begin = 0;
  for (std::size_t end; (end = inputs.find(separator, begin)) != std::string::npos;) {
    vectors.texts.push_back(inputs.substr(begin, end - begin));
    begin = end + separator.size();
  }
  EXPECT_EQ(begin, inputs.size()) << name << ".inp does not end with the separator";
  std::ifstream outputs(dir / (name + ".out"));
  for (std::string line; std::getline(outputs, line);) {
    std::istringstream numbers(line);
    vectors.expected.emplace_back();
    for (int id; numbers >> id;) vectors.expected.back().push_back(id);
  }
  return vectors;
}

}  // namespace attn::test
