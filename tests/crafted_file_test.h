#pragma once

// A fixture for tests of a reader of weight files (SafeTensors, TorchFile) on files crafted byte
// by byte: each is written to the same scratch path, and what the reader refuses must be one line
// naming that path and the reason.

#include <gtest/gtest.h>

#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

#include "src/base/error.h"
#include "tests/cli_util.h"

namespace attn::test {

// File: the reader, constructed from a path. file_name: what the crafted file is called.
template <typename File>
class CraftedFileTest : public ::testing::Test {
 protected:
  explicit CraftedFileTest(const char* file_name) : path_(dir_ / file_name) {}

  const std::filesystem::path& write(std::string_view bytes) {
    write_file(path_, bytes);
    return path_;
  }

  // Opening `bytes` must throw an Error of one line, starting with the file's path and
  // containing every one of `expected`.
  void expect_rejected(std::string_view bytes, std::initializer_list<std::string> expected) {
    write(bytes);
    try {
      File file(path_);
      ADD_FAILURE() << "opened without error";
    } catch (const Error& e) {
      expect_message(e.what(), expected);
    }
  }

  void expect_message(const std::string& message, std::initializer_list<std::string> expected) {
    EXPECT_TRUE(message.starts_with(path_.string() + ": ")) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    for (const auto& part : expected) {
      EXPECT_NE(message.find(part), std::string::npos) << "\"" << part << "\" not in: " << message;
    }
  }

  TempDir dir_;
  std::filesystem::path path_;
};

}  // namespace attn::test
