// attn fill-mask: prints the most likely tokens for every mask of one input, or of every line of
// a file (one JSON line per input, inputs packed into batches).
#include <spdlog/spdlog.h>

#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "src/base/error.h"
#include "src/base/files.h"
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

int fill_one(const FillMaskCommand& command, const Model& model, const FillMaskOptions& options) {
  require_utf8(*command.text, "text");
  if (command.pair) require_utf8(*command.pair, "--pair");
  MaskedInput input;
  try {
    input = encode_masked_input(model, *command.text, command.pair, command.truncate);
  } catch (const Error& e) {
    throw Error(std::string(command.pair ? "text with --pair" : "text") + ": " + e.what());
  }
  if (input.dropped_tokens > 0) {
    spdlog::warn("text: {} tokens cut off by --truncate", input.dropped_tokens);
  }
  const std::vector<MaskPrediction> masks = fill_mask(model, std::span(&input, 1), options)[0];
  if (command.json) {
    write_stdout(json_text(predictions_json(masks)) + "\n");
  } else {
    write_stdout(
        predictions_table(masks, model.tokenizer->token_string(*model.tokenizer->mask_id())));
  }
  return 0;
}

bool is_blank(std::string_view line) {
  return line.find_first_not_of(" \t") == std::string_view::npos;
}

// One text per line; blank lines are skipped. A line that cannot be filled is reported on
// stderr with its number, the rest still run, and the exit status is 1 at the end.
int fill_file(const FillMaskCommand& command, const Model& model, const FillMaskOptions& options) {
  const std::string file_name = "--file " + command.file->string();
  const std::string contents = read_input_text(*command.file, "--file", kMaxInputTextBytes);
  if (contents.empty()) throw Error(file_name + ": is empty");
  std::vector<MaskedInput> inputs;
  std::vector<int> line_numbers;
  std::vector<std::string> texts;
  int failed_lines = 0;
  int line_number = 0;
  for (std::string& line : split_lines(contents)) {
    ++line_number;
    if (is_blank(line)) continue;
    const std::string where = file_name + ": line " + std::to_string(line_number) + ": ";
    try {
      inputs.push_back(encode_masked_input(model, line, std::nullopt, command.truncate));
    } catch (const Error& e) {
      print_error(where + e.what());
      ++failed_lines;
      continue;
    }
    if (inputs.back().dropped_tokens > 0) {
      spdlog::warn("{}{} tokens cut off by --truncate", where, inputs.back().dropped_tokens);
    }
    line_numbers.push_back(line_number);
    texts.push_back(std::move(line));
  }

  if (inputs.empty() && failed_lines == 0) throw Error(file_name + ": has only blank lines");

  Progress progress("fill-mask", "lines", command.common.quiet);
  std::int64_t tokens_done = 0;
  fill_mask(model, inputs, options, [&](std::size_t i, std::vector<MaskPrediction> masks) {
    const nlohmann::ordered_json out = {
        {"line", line_numbers[i]}, {"text", texts[i]}, {"masks", predictions_json(masks)}};
    write_stdout(json_text(out) + "\n");
    tokens_done += std::int64_t(inputs[i].ids.size());
    progress.update(std::int64_t(i) + 1, std::int64_t(inputs.size()), tokens_done);
  });
  flush_stdout();
  spdlog::debug("{}: filled {} lines, {} failed", file_name, inputs.size(), failed_lines);
  return failed_lines > 0 ? 1 : 0;
}

}  // namespace

int run_fill_mask(const FillMaskCommand& command) {
  if (command.text && command.file) {
    throw UsageError("text and --file: give the input one way, not both");
  }
  if (!command.text && !command.file) throw UsageError("fill-mask: give a text or --file");
  if (command.pair && command.file) throw UsageError("--pair: only with a text, not with --file");
  auto model = load_model(command.common.model_dir, command.common.dtype);
  check_fill_mask_model(*model);
  check_top_k(*model, command.top_k);
  const FillMaskOptions options{.top_k = command.top_k, .max_batch_tokens = command.batch_tokens};
  return command.file ? fill_file(command, *model, options) : fill_one(command, *model, options);
}

}  // namespace attn
