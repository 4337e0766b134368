#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

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

}  // namespace attn::test

// Skips the current test with a clear message when ../shared is not there.
#define ATTN_REQUIRE_SHARED()                                                           \
  do {                                                                                  \
    if (attn::test::shared_dir().empty())                                               \
      GTEST_SKIP() << "../shared (goldens) not found next to the repository; skipping"; \
  } while (0)
