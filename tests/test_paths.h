#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace attn::test {

// The repository root (models/ holds the shipped tiny models).
inline std::filesystem::path source_dir() { return ATTN_SOURCE_DIR; }

inline std::filesystem::path shipped_model(const char* name) {
  return source_dir() / "models" / name;
}

// ../shared beside the repository (or $ATTN_SHARED_DIR): goldens and test models that only
// development machines and CI have. Empty when absent.
inline std::filesystem::path shared_dir() {
  const char* env = std::getenv("ATTN_SHARED_DIR");
  const std::filesystem::path dir =
      env ? std::filesystem::path(env) : source_dir().parent_path() / "shared";
  return std::filesystem::exists(dir / "golden") ? dir : std::filesystem::path();
}

// In CI (CI=true) a test whose data is missing fails instead of skipping: there the goldens,
// numpy and chromium are installed, so a skip would mean the checks silently vanished.
inline bool running_in_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

}  // namespace attn::test

// Skips the current test with `message` (a stream expression), or fails it in CI.
#define ATTN_SKIP_UNLESS_CI(message)                                  \
  do {                                                                \
    if (attn::test::running_in_ci()) {                                \
      GTEST_FAIL() << message << " (CI=true: required, not skipped)"; \
    }                                                                 \
    GTEST_SKIP() << message;                                          \
  } while (0)

// Skips the current test with a clear message when ../shared is not there (fails in CI).
#define ATTN_REQUIRE_SHARED()                                                                \
  do {                                                                                       \
    if (attn::test::shared_dir().empty())                                                    \
      ATTN_SKIP_UNLESS_CI("../shared (goldens) not found next to the repository; skipping"); \
  } while (0)
