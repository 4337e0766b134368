#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "src/tasks/attention_capture.h"
#include "src/tasks/generate.h"

// The subcommands of the attn command line. main.cpp parses the options into these structs and
// calls run_*; each returns the process exit status.
namespace attn {

struct CommonOptions {
  std::filesystem::path model_dir;
  int threads = 0;  // 0 = all cores
  bool verbose = false;
  bool quiet = false;
};

struct GenerateCommand {
  CommonOptions common;
  std::optional<std::string> prompt;
  std::optional<std::filesystem::path> prompt_file;  // "-" = standard input
  GenerateOptions options;
  bool truncate = false;
  bool json = false;
  // JSON Lines with the attention row behind each generated token, when given.
  std::optional<std::filesystem::path> attention_out;
  AttentionOptions attention;
};

struct TokenizeCommand {
  CommonOptions common;
  std::string text;
  std::optional<std::string> pair;
  bool json = false;
};

struct BenchCommand {
  CommonOptions common;
  int prompt_tokens = 128;
  int new_tokens = 128;
  int repetitions = 5;
  int batch = 1;  // encoders: sequences per packed batch
  bool json = false;
};

struct FillMaskCommand {
  CommonOptions common;
  std::optional<std::string> text;
  std::optional<std::string> pair;
  std::optional<std::filesystem::path> file;  // one text per line; "-" = standard input
  int top_k = 5;
  int batch_tokens = 1024;  // --file: tokens per packed batch
  bool truncate = false;
  bool json = false;
};

struct AttentionCommand {
  CommonOptions common;
  std::string text;
  std::optional<std::string> pair;
  std::optional<std::filesystem::path> output;  // standard output when absent
  AttentionFormat format = AttentionFormat::kJson;
  AttentionOptions attention;
};

int run_generate(const GenerateCommand& command);
int run_tokenize(const TokenizeCommand& command);
int run_info(const CommonOptions& common, bool json);
int run_bench(const BenchCommand& command);
int run_fill_mask(const FillMaskCommand& command);
int run_attention(const AttentionCommand& command);

// Reads a whole file, or standard input for "-"; `what` names it in errors.
std::string read_text_file(const std::filesystem::path& path, const std::string& what);

}  // namespace attn
