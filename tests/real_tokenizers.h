#pragma once

// The real tokenizer folders of ../shared/tokenizers (Llama-3, Qwen3, Gemma-3, Mistral,
// DeepSeek-V3, a T5-style Unigram, GPT-2, BERT), unpacked where they are stored as .xz, into a
// temporary folder that the test run owns (shared/ is never written).

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/test_paths.h"

namespace attn::test {

// The folder of `name` ("llama3", ..., "gpt2", "bert-base-uncased") with tokenizer.json
// unpacked; empty when ../shared is absent. Unpacked once per test process.
inline std::filesystem::path real_tokenizer_dir(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path shared = shared_dir();
  if (shared.empty()) return {};
  fs::path source = shared / "tokenizers" / "real" / name;
  if (!fs::exists(source)) source = shared / "tokenizers" / name;
  if (!fs::exists(source / "tokenizer.json.xz")) return source;
  const fs::path target =
      fs::temp_directory_path() / ("attn-real-tokenizers-" + std::to_string(getpid())) / name;
  if (fs::exists(target / "tokenizer.json")) return target;
  fs::create_directories(target);
  for (const auto& entry : fs::directory_iterator(source)) {
    if (entry.path().extension() != ".xz") {
      fs::copy_file(entry.path(), target / entry.path().filename(),
                    fs::copy_options::overwrite_existing);
    }
  }
  const std::string command = "xz -dc '" + (source / "tokenizer.json.xz").string() + "' > '" +
                              (target / "tokenizer.json.part").string() + "'";
  if (std::system(command.c_str()) != 0) return {};
  fs::rename(target / "tokenizer.json.part", target / "tokenizer.json");
  return target;
}

}  // namespace attn::test
