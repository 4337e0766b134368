#pragma once

// The real tokenizer folders of ../shared/tokenizers (Llama-3, Qwen3, Gemma-3, Mistral,
// DeepSeek-V3, a T5-style Unigram, GPT-2, BERT), unpacked where they are stored as .xz. ctest runs
// each test in its own process, so the unpacked folders are kept in one cache under the temporary
// folder, shared by every process and run (shared/ is never written): a folder per tokenizer,
// named by the size and time of its .xz, so that a changed ../shared unpacks anew.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "tests/test_paths.h"

namespace attn::test {

// The folder of `name` ("llama3", ..., "gpt2", "bert-base-uncased") with tokenizer.json
// unpacked; empty when ../shared is absent.
inline std::filesystem::path real_tokenizer_dir(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path shared = shared_dir();
  if (shared.empty()) return {};
  fs::path source = shared / "tokenizers" / "real" / name;
  if (!fs::exists(source)) source = shared / "tokenizers" / name;
  const fs::path packed = source / "tokenizer.json.xz";
  if (!fs::exists(packed)) return source;
  const fs::path cache = fs::temp_directory_path() / "attn-test-real-tokenizers";
  const fs::path target = cache / (name + "-" + std::to_string(fs::file_size(packed)) + "-" +
                                   std::to_string(static_cast<unsigned long long>(
                                       fs::last_write_time(packed).time_since_epoch().count())));
  if (fs::exists(target / "tokenizer.json")) return target;
  // Unpacked in a folder of this process's own, then renamed into place: a process running at the
  // same time either finds the whole folder or renames its own identical one.
  const fs::path staging = cache / (name + ".part-" + std::to_string(getpid()));
  fs::create_directories(staging);
  for (const auto& entry : fs::directory_iterator(source)) {
    if (entry.path().extension() != ".xz") {
      fs::copy_file(entry.path(), staging / entry.path().filename(),
                    fs::copy_options::overwrite_existing);
    }
  }
  const std::string command =
      "xz -dc '" + packed.string() + "' > '" + (staging / "tokenizer.json").string() + "'";
  if (std::system(command.c_str()) != 0) {
    fs::remove_all(staging);
    return {};
  }
  std::error_code renamed;
  fs::rename(staging, target, renamed);
  if (renamed) fs::remove_all(staging);  // another process put the same folder there first
  return target;
}

}  // namespace attn::test
