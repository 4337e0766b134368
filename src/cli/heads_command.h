#pragma once

#include <filesystem>
#include <optional>

#include "src/cli/commands.h"
#include "src/tasks/head_stats.h"

// attn heads: what every attention head does (heads_command.cpp), and with --deps, how well each
// finds a word's syntactic head (deps_command.cpp).
namespace attn {

struct HeadsCommand final : Command {
  HeadsCommand()
      : Command("heads", "what every attention head does: statistics and a role per head") {}
  void add_options(CLI::App& app) override;
  int run(const CLI::App& app) override;

  ReportFormat format = ReportFormat::kText;
  int batch_tokens = 1024;  // tokens per packed batch
  // --probe induction / none; default: on for decoders.
  std::optional<bool> probe;
  InductionProbeOptions probe_options;
  bool probe_options_given = false;  // --probe-sequences, --probe-length or --seed
  // Encoder-decoders: report the cross-attention heads instead of the encoder's and decoder's
  // self-attention heads.
  bool cross = false;
  // Encoder-decoders: the decoder reads the model's greedy translation of each text, at most
  // this many tokens (default kHeadsTargetTokens).
  std::optional<int> max_new_tokens;
  // --deps FILE.conllu: score the heads against a dependency treebank instead (deps_command.cpp).
  std::optional<std::filesystem::path> deps;
};

constexpr int kHeadsTargetTokens = 64;

// attn heads --deps (deps_command.cpp).
int run_dependency_heads(const HeadsCommand& command);

}  // namespace attn
