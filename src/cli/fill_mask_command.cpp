// attn fill-mask: prints the most likely tokens for every mask of each text (several texts, or
// the lines of a file, are packed into batches).
#include <spdlog/spdlog.h>

#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "src/base/error.h"
#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/cli/progress.h"
#include "src/io/output_file.h"
#include "src/tasks/fill_mask.h"

namespace attn {
namespace {

struct FillMaskCommand final : Command {
  FillMaskCommand()
      : Command("fill-mask", "predict the masked tokens with an encoder (" +
                                 family_names(ModelKind::kEncoder) + ")") {}
  void add_options(CLI::App& app) override;
  int run(const CLI::App& app) override;

  std::optional<std::string> pair;  // --pair: the second text of the one text
  int top_k = 5;
  int batch_tokens = 1024;  // tokens per packed batch
  bool truncate = false;
};

void FillMaskCommand::add_options(CLI::App& app) {
  add_common_options(app, common, "tiny-bert-brown");
  add_output_options(app, common,
                     "one JSON object per text: {\"text\", \"masks\"} (\"line\" for a line of a "
                     "file, \"pair\" with --pair)");
  add_text_options(app, input,
                   "texts with one or more masks: the model's own mask token (BERT's [MASK], "
                   "RoBERTa's <mask>), or [MASK] for every model");
  app.add_option("--pair", pair,
                 "second sentence of the one text, joined as the model's tokenizer joins pairs");
  app.add_option("-k,--top-k", top_k, "candidates per mask (default: 5)")
      ->check(whole_number<int>());
  add_batch_tokens_option(app, batch_tokens);
  app.add_flag("--truncate", truncate,
               "keep the first (context - 1) tokens and the final [SEP] (or </s>) of a longer "
               "input instead of failing");
  add_examples(app,
               {"attn fill-mask \"The jury said the [MASK] was fair.\"",
                "attn fill-mask -m FacebookAI/roberta-base -k 3 \"Paris is the <mask> of France.\"",
                "attn fill-mask -f texts.txt --json -o masks.jsonl"});
}

nlohmann::ordered_json predictions_json(const std::vector<MaskPrediction>& masks) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const MaskPrediction& mask : masks) {
    nlohmann::ordered_json candidates = nlohmann::ordered_json::array();
    for (const FillMaskCandidate& candidate : mask.candidates) {
      candidates.push_back({{"token_id", candidate.token_id},
                            {"token", candidate.token},
                            {"score", candidate.score},
                            {"sequence", candidate.sequence}});
    }
    out.push_back({{"position", mask.position}, {"candidates", std::move(candidates)}});
  }
  return out;
}

// One table per mask; columns padded by bytes.
std::string predictions_table(const std::vector<MaskPrediction>& masks,
                              const std::string& mask_token) {
  std::ostringstream out;
  for (std::size_t m = 0; m < masks.size(); ++m) {
    if (m > 0) out << "\n";
    out << mask_token;
    if (masks.size() > 1) out << " " << m + 1 << " of " << masks.size() << ",";
    out << " at token " << masks[m].position << ":\n";
    std::size_t token_width = 5;
    for (const FillMaskCandidate& candidate : masks[m].candidates)
      token_width = std::max(token_width, candidate.token.size());
    out << std::right << std::setw(5) << "rank"
        << "  " << std::left << std::setw(int(token_width)) << "token"
        << "  probability  sequence\n";
    for (std::size_t rank = 0; rank < masks[m].candidates.size(); ++rank) {
      const FillMaskCandidate& candidate = masks[m].candidates[rank];
      out << std::right << std::setw(5) << rank + 1 << "  " << std::left
          << std::setw(int(token_width)) << candidate.token << "  " << std::right << std::fixed
          << std::setprecision(6) << std::setw(11) << candidate.score << "  " << candidate.sequence
          << "\n";
    }
  }
  return out.str();
}

// The texts packed into batches. Each prints its tables (under the text, when there are several),
// or one JSON line {"line" (for a line of a file), "text", "pair" (with --pair), "masks"}.
int fill_texts(const FillMaskCommand& command, const Model& model, const FillMaskOptions& options,
               const std::vector<InputText>& texts) {
  const auto encoded = encode_each<MaskedInput>(texts, [&](const InputText& text) {
    MaskedInput input;
    try {
      input = encode_masked_input(model, text.text, command.pair, command.truncate);
    } catch (const Error& e) {
      text.fail(std::string(command.pair ? "with --pair: " : "") + e.what());
    }
    warn_truncated(text, input.dropped_tokens);
    return input;
  });
  if (encoded.items.empty()) return encoded.status;
  const bool headings = texts.size() > 1 || texts.front().line > 0;
  const std::string mask_token = model.tokenizer->token_string(*model.tokenizer->mask_id());
  Progress progress("fill-mask", "texts", command.common.quiet);
  std::int64_t tokens_done = 0;
  fill_mask(model, encoded.items, options, [&](std::size_t i, std::vector<MaskPrediction> masks) {
    const InputText& text = *encoded.sources[i];
    if (command.common.json) {
      nlohmann::ordered_json out = text_json(text);
      if (command.pair) out["pair"] = *command.pair;
      out["masks"] = predictions_json(masks);
      write_stdout(json_text(out) + "\n");
    } else {
      write_stdout((i > 0 ? "\n" : "") + (headings ? text.text + "\n" : "") +
                   predictions_table(masks, mask_token));
    }
    tokens_done += std::int64_t(encoded.items[i].ids.size());
    progress.update(std::int64_t(i) + 1, std::int64_t(encoded.items.size()), tokens_done);
  });
  flush_stdout();
  return encoded.status;
}

int FillMaskCommand::run(const CLI::App&) {
  const std::vector<InputText> texts = read_texts(input);
  const bool one_text = texts.size() == 1 && texts[0].line == 0;
  if (pair && !one_text) {
    throw UsageError("--pair: only with one text, given as an argument or with -p");
  }
  auto model = load_model(common.model_dir, common.dtype);
  check_fill_mask_model(*model);
  check_top_k(*model, top_k);
  const FillMaskOptions options{.top_k = top_k, .max_batch_tokens = batch_tokens};
  if (pair) require_utf8(*pair, "--pair");
  return fill_texts(*this, *model, options, texts);
}

}  // namespace

std::unique_ptr<Command> make_fill_mask_command() { return std::make_unique<FillMaskCommand>(); }

}  // namespace attn
