// attn perplexity: how well a decoder predicts a text, by Hugging Face's sliding-window recipe
// (src/tasks/perplexity.h).

#include <spdlog/fmt/fmt.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/cli/progress.h"
#include "src/io/output_file.h"
#include "src/tasks/perplexity.h"

namespace attn {
namespace {

struct PerplexityCommand final : Command {
  PerplexityCommand()
      : Command("perplexity", "how well a decoder predicts a text (sliding windows)") {}
  void add_options(CLI::App& app) override;
  int run(const CLI::App& app) override;

  std::optional<int> window;                              // default: the model's context
  std::optional<int> stride;                              // default: the window
  int batch_tokens = PerplexityOptions{}.max_batch_rows;  // windows packed per batch, in tokens
  std::optional<std::filesystem::path> per_token;         // JSON Lines: id, token, nll per position
};

}  // namespace

namespace {

// One text's perplexity, printed; its per-token NLL to `per_token` when given.
void score_text(const PerplexityCommand& command, const Model& model, const InputText& text,
                OutputFile* per_token) {
  const std::vector<int> ids = model.tokenizer->encode(text.text).ids;
  if (ids.empty()) text.fail(kNoTokens);
  if (ids.size() < 2) text.fail("the text gives 1 token; perplexity needs at least 2");
  const int window = command.window.value_or(model.spec().max_positions);
  const PerplexityOptions options{.window = window,
                                  .stride = command.stride.value_or(window),
                                  .max_batch_rows = command.batch_tokens};

  Progress progress("perplexity", "windows", command.common.quiet);
  int tokens_done = 0;
  const auto start = std::chrono::steady_clock::now();
  const PerplexityResult result = perplexity(model, ids, options, [&](int done, int total) {
    tokens_done = done == total ? int(ids.size()) : tokens_done + options.stride;
    progress.update(done, total, tokens_done);
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (per_token) {
    for (std::size_t p = 0; p < ids.size(); ++p) {
      nlohmann::ordered_json line = {
          {"position", p}, {"id", ids[p]}, {"token", model.tokenizer->token_string(ids[p])}};
      line["nll"] = std::isnan(result.token_nll[p]) ? nlohmann::ordered_json(nullptr)
                                                    : nlohmann::ordered_json(result.token_nll[p]);
      per_token->write(json_text(line) + "\n");
    }
    per_token->commit();
  }
  if (command.common.json) {
    nlohmann::ordered_json out = {{"model", model.name()},
                                  {"tokens", ids.size()},
                                  {"window", options.window},
                                  {"stride", options.stride},
                                  {"n_scored_tokens", result.n_scored},
                                  {"nll_sum", result.nll_sum},
                                  {"mean_nll", result.mean_nll()},
                                  {"ppl", result.perplexity()},
                                  {"tokens_per_s", double(ids.size()) / seconds},
                                  {"windows", nlohmann::ordered_json::array()}};
    for (const PerplexityWindow& w : result.windows) {
      out["windows"].push_back({{"begin", w.begin},
                                {"end", w.end},
                                {"n_scored", w.n_scored},
                                {"nll_sum", w.nll_sum},
                                {"ppl", std::exp(w.nll_sum / w.n_scored)}});
    }
    write_stdout(json_text(out) + "\n");
    return;
  }
  write_stdout(fmt::format(
      "{}: {}, {} scored in {} of {} (stride {})\nmean NLL {:.4f} nats | perplexity {:.3f} | "
      "{:.0f} tokens/s\n",
      text.source, plural(long(ids.size()), "token"), result.n_scored,
      plural(long(result.windows.size()), "window"), options.window, options.stride,
      result.mean_nll(), result.perplexity(), double(ids.size()) / seconds));
}

}  // namespace

// Each text (an argument, -p, or the whole of a file or standard input) is scored on its own.
void PerplexityCommand::add_options(CLI::App& app) {
  add_common_options(app, common, "tiny-gpt2-brown");
  add_output_options(app, common, "one JSON object per text, with every window");
  add_text_options(app, input, "texts to score (a file or standard input is one text, a corpus)");
  app.add_option("--window", window, "tokens per window (default: the model's context)")
      ->check(whole_number<int>())
      ->check(positive());
  app.add_option("--stride", stride,
                 "tokens between window starts; less than --window overlaps the windows, "
                 "giving every scored token more context (default: the window)")
      ->check(whole_number<int>())
      ->check(positive());
  app.add_option("--batch-tokens", batch_tokens,
                 "windows shorter than this are packed into batches of this many tokens; "
                 "memory grows with it (default: " +
                     std::to_string(batch_tokens) + ")")
      ->check(whole_number<int>())
      ->check(positive())
      ->check(at_most(kMaxBatchTokens));
  app.add_option("--per-token", per_token, "write each token's NLL to this file as JSON Lines")
      ->type_name("FILE");
  add_examples(app, {"attn perplexity \"The jury said the judge was fair.\"",
                     "attn perplexity -m gpt2 -f corpus.txt --window 512 --stride 256 --json"});
}

int PerplexityCommand::run([[maybe_unused]] const CLI::App& app) {
  const PerplexityCommand& command = *this;
  const std::vector<InputText> texts = read_texts(command.input, TextUnit::kCorpus);
  // Opened before the work, so that an unwritable path fails at once.
  std::optional<OutputFile> per_token;
  if (command.per_token) {
    if (*command.per_token == "-") {
      throw UsageError("--per-token: give a file; standard output carries the perplexity");
    }
    if (texts.size() > 1) throw UsageError("--per-token: only with one text");
    per_token.emplace(command.per_token, "--per-token");
  }
  auto model = load_model(command.common.model_dir, command.common.dtype, Passes::kManyRows);
  require_decoder(*model, "perplexity");
  return for_each_text(texts, [&](const InputText& text) {
    score_text(command, *model, text, per_token ? &*per_token : nullptr);
  });
}

std::unique_ptr<Command> make_perplexity_command() { return std::make_unique<PerplexityCommand>(); }

}  // namespace attn
