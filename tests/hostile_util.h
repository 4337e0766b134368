#pragma once

// The contract every hostile input is held to (issue 7): attn refuses it with exit status 1 (bad
// input data) or 2 (bad usage), exactly one line on stderr, "attn: error: ...", naming the file
// or option and the problem, nothing on stdout, no signal, within seconds, in bounded memory,
// and every input file left as it was.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <ostream>
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

// What a run did with a hostile input, worst last: refused it cleanly; refused it, but not with
// the one-line message and status of the contract ("unclear"); accepted it (exit 0); changed an
// input file; ran past the memory bound; hung; crashed.
enum class Outcome { kClean, kUnclear, kAccepted, kClobbered, kMemory, kHang, kCrash };

inline const char* outcome_name(Outcome outcome) {
  constexpr const char* kNames[] = {"clean",  "unclear", "accepted", "clobbered",
                                    "memory", "hang",    "crash"};
  return kNames[static_cast<int>(outcome)];
}

inline Outcome classify(const CommandResult& result) {
  if (result.signaled) return Outcome::kCrash;
  if (result.timed_out || result.seconds >= kCleanFailureSeconds) return Outcome::kHang;
  if (result.peak_rss_mb >= kCleanFailureMegabytes) return Outcome::kMemory;
  if (result.exit_status == 0) return Outcome::kAccepted;
  const bool one_line = std::count(result.err.begin(), result.err.end(), '\n') == 1 &&
                        result.err.ends_with("\n") && result.err.starts_with("attn: error: ");
  const bool usual_status = result.exit_status == kBadInput || result.exit_status == kUsageError;
  return one_line && usual_status && result.out.empty() ? Outcome::kClean : Outcome::kUnclear;
}

// Records the worst outcome of the current test as its gtest property "hostile_outcome", so
// that tests/hostile_report.py can count the cases by class (for this build or another one,
// through $ATTN_TEST_BINARY).
inline void record_outcome(Outcome outcome) {
  const ::testing::TestResult* so_far =
      ::testing::UnitTest::GetInstance()->current_test_info()->result();
  for (int i = 0; i < so_far->test_property_count(); ++i) {
    const ::testing::TestProperty& property = so_far->GetTestProperty(i);
    if (std::string(property.key()) != "hostile_outcome") continue;
    for (int worse = static_cast<int>(outcome) + 1; worse <= static_cast<int>(Outcome::kCrash);
         ++worse) {
      if (std::string(property.value()) == outcome_name(static_cast<Outcome>(worse))) return;
    }
  }
  ::testing::Test::RecordProperty("hostile_outcome", outcome_name(outcome));
}

// A parameterized case of arguments attn must refuse as a usage error: the test's name, the
// arguments, and what the one line must contain (the option and what is wrong with its value).
struct OptionCase {
  const char* test_name;
  std::vector<std::string> args;
  std::string expected;
};

inline std::ostream& operator<<(std::ostream& out, const OptionCase& c) {
  return out << c.test_name;
}

// One hostile case: the contract above, plus each of `expected` in the message.
inline void expect_clean_failure(const CommandResult& result, std::optional<int> exit_status,
                                 std::initializer_list<std::string> expected) {
  record_outcome(classify(result));
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

  // A copy of a shipped model without its tokenizer.json, for tests of the slow tokenizer's files
  // (vocab.json + merges.txt, vocab.txt, and the configs as those tokenizers read them): attn,
  // like transformers' AutoTokenizer, reads them only from a folder that has no tokenizer.json.
  std::filesystem::path copy_model_without_tokenizer_json(const char* name) {
    const auto copy = copy_model(name);
    std::filesystem::remove(copy / "tokenizer.json");
    return copy;
  }

  CommandResult run(const std::vector<std::string>& args,
                    const std::filesystem::path& stdin_path = "/dev/null") {
    const FolderSnapshot before = snapshot(scratch_.path());
    CommandResult result = run_attn(args, stdin_path);
    const std::vector<std::string> changed = changed_files(before, snapshot(scratch_.path()));
    if (!changed.empty()) record_outcome(Outcome::kClobbered);
    EXPECT_EQ(changed, std::vector<std::string>())
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
