// attn fill-mask: prints the most likely tokens for every mask of each text (several texts, or
// the lines of a file, are packed into batches).
#include <spdlog/spdlog.h>

#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "src/base/error.h"
#include "src/cli/commands.h"
#include "src/cli/progress.h"
#include "src/io/output_file.h"
#include "src/tasks/fill_mask.h"

namespace attn {
namespace {

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

// One text given as an argument or -p: a table per mask, or --json's {"text", "pair" (with
// --pair), "masks"}, the object every text gets.
void fill_one(const FillMaskCommand& command, const Model& model, const FillMaskOptions& options,
              const InputText& text) {
  if (command.pair) require_utf8(*command.pair, "--pair");
  MaskedInput input;
  try {
    input = encode_masked_input(model, text.text, command.pair, command.truncate);
  } catch (const Error& e) {
    text.fail(std::string(command.pair ? "with --pair: " : "") + e.what());
  }
  if (input.dropped_tokens > 0) {
    spdlog::warn("{}: {} tokens cut off by --truncate", text.source, input.dropped_tokens);
  }
  const std::vector<MaskPrediction> masks = fill_mask(model, std::span(&input, 1), options)[0];
  if (command.common.json) {
    nlohmann::ordered_json out;
    out["text"] = text.text;
    if (command.pair) out["pair"] = *command.pair;
    out["masks"] = predictions_json(masks);
    write_stdout(json_text(out) + "\n");
  } else {
    write_stdout(
        predictions_table(masks, model.tokenizer->token_string(*model.tokenizer->mask_id())));
  }
}

// Several texts, or the lines of a file, packed into batches; blank lines are skipped. Each text
// prints its tables under the text (blank lines between texts), or one JSON line {"text",
// "masks"} (and "line" for a line of a file). A text that cannot be filled is reported on
// stderr, the rest still run, and the exit status is 1 at the end.
int fill_many(const FillMaskCommand& command, const Model& model, const FillMaskOptions& options,
              const std::vector<InputText>& texts) {
  std::vector<MaskedInput> inputs;
  std::vector<const InputText*> sources;
  const int failed = for_each_text(texts, [&](const InputText& text) {
    if (is_blank_line(text)) return;
    require_utf8(text.text, text.source);
    try {
      inputs.push_back(encode_masked_input(model, text.text, std::nullopt, command.truncate));
    } catch (const Error& e) {
      text.fail(e.what());
    }
    if (inputs.back().dropped_tokens > 0) {
      spdlog::warn("{}: {} tokens cut off by --truncate", text.source,
                   inputs.back().dropped_tokens);
    }
    sources.push_back(&text);
  });
  if (inputs.empty()) return failed;

  const std::string mask_token = model.tokenizer->token_string(*model.tokenizer->mask_id());
  Progress progress("fill-mask", "texts", command.common.quiet);
  std::int64_t tokens_done = 0;
  fill_mask(model, inputs, options, [&](std::size_t i, std::vector<MaskPrediction> masks) {
    const InputText& text = *sources[i];
    if (command.common.json) {
      nlohmann::ordered_json out;
      if (text.line > 0) out["line"] = text.line;
      out["text"] = text.text;
      out["masks"] = predictions_json(masks);
      write_stdout(json_text(out) + "\n");
    } else {
      write_stdout((i > 0 ? "\n" : "") + text.text + "\n" + predictions_table(masks, mask_token));
    }
    tokens_done += std::int64_t(inputs[i].ids.size());
    progress.update(std::int64_t(i) + 1, std::int64_t(inputs.size()), tokens_done);
  });
  flush_stdout();
  return failed;
}

}  // namespace

int run_fill_mask(const FillMaskCommand& command) {
  const std::vector<InputText> texts = read_texts(command.input);
  const bool one_text = texts.size() == 1 && texts[0].line == 0;
  if (command.pair && !one_text) {
    throw UsageError("--pair: only with one text, given as an argument or with -p");
  }
  auto model = load_model(command.common.model_dir, command.common.dtype);
  check_fill_mask_model(*model);
  check_top_k(*model, command.top_k);
  const FillMaskOptions options{.top_k = command.top_k, .max_batch_tokens = command.batch_tokens};
  if (one_text) {
    return for_each_text(texts,
                         [&](const InputText& text) { fill_one(command, *model, options, text); });
  }
  return fill_many(command, *model, options, texts);
}

}  // namespace attn
