#pragma once

// The contract every hostile input is held to (issue 7): attn refuses it with exit status 1 (bad
// input data) or 2 (bad usage), exactly one line on stderr, "attn: error: ...", naming the file
// or option and the problem, nothing on stdout, no signal, within seconds, in bounded memory,
// and every input file left as it was.

#include <gtest/gtest.h>

#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "tests/cli_util.h"
#include "tests/test_paths.h"

namespace attn::test {

constexpr int kBadInput = 1;
constexpr int kUsageError = 2;

// Generous bounds that still tell a refusal from a hang or a runaway allocation, also in the
// sanitizer build (which is several times slower and keeps shadow memory).
constexpr double kCleanFailureSeconds = 30;
constexpr double kCleanFailureMegabytes = 1024;

// One hostile case's outcome: the common contract, plus each of `expected` in the message.
inline void expect_clean_failure(const CommandResult& result, std::optional<int> exit_status,
                                 std::initializer_list<std::string> expected) {
  ASSERT_FALSE(result.signaled) << describe(result);
  ASSERT_FALSE(result.timed_out) << describe(result);
  if (exit_status) {
    EXPECT_EQ(result.exit_status, *exit_status) << describe(result);
  } else {
    EXPECT_TRUE(result.exit_status == kBadInput || result.exit_status == kUsageError)
        << describe(result);
  }
  EXPECT_LT(result.seconds, kCleanFailureSeconds) << describe(result);
  EXPECT_LT(result.peak_rss_mb, kCleanFailureMegabytes) << describe(result);
  EXPECT_EQ(result.out, "") << describe(result);
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << describe(result);
  EXPECT_TRUE(result.err.ends_with("\n")) << describe(result);
  EXPECT_TRUE(result.err.starts_with("attn: error: ")) << describe(result);
  for (const auto& part : expected) {
    EXPECT_NE(result.err.find(part), std::string::npos) << "stderr lacks \"" << part << "\"\n"
                                                        << describe(result);
  }
}

inline void expect_clean_failure(const CommandResult& result,
                                 std::initializer_list<std::string> expected) {
  expect_clean_failure(result, std::nullopt, expected);
}

// Runs attn on copies of the shipped models in a scratch folder. Every run() checks that the
// run changed nothing in the scratch folder; the shipped models are checked once per suite
// (snapshots compare inode, size and times of every file, and the contents of small ones).
class HostileTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { shipped_before() = snapshot(source_dir() / "models"); }

  static void TearDownTestSuite() {
    EXPECT_EQ(changed_files(shipped_before(), snapshot(source_dir() / "models")),
              std::vector<std::string>())
        << "the shipped models were modified";
  }

  // A copy of a shipped model for the test to break.
  std::filesystem::path copy_model(const char* name) {
    const auto copy = scratch_ / name;
    std::filesystem::copy(shipped_model(name), copy);
    return copy;
  }

  CommandResult run(const std::vector<std::string>& args,
                    const std::filesystem::path& stdin_path = "/dev/null") {
    const FolderSnapshot before = snapshot(scratch_.path());
    CommandResult result = run_attn(args, stdin_path);
    EXPECT_EQ(changed_files(before, snapshot(scratch_.path())), std::vector<std::string>())
        << "attn " << (args.empty() ? "" : args.front()) << " modified files";
    return result;
  }

  TempDir scratch_;

 private:
  static FolderSnapshot& shipped_before() {
    static FolderSnapshot files;
    return files;
  }
};

}  // namespace attn::test
