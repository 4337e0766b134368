// attn attention: the attention weights of one text (or BERT sentence pair) as JSON, bertviz
// JSON or an HTML page.
#include <spdlog/spdlog.h>

#include "src/base/error.h"
#include "src/cli/commands.h"
#include "src/tasks/attention_capture.h"

namespace attn {
namespace {

// Above this the user is told how large the output will be before the work starts.
constexpr double kLargeOutputBytes = 100e6;

}  // namespace

int run_attention(const AttentionCommand& command) {
  require_utf8(command.text, "TEXT");
  if (command.pair) require_utf8(*command.pair, "--pair");
  // Opened first, so that an unwritable path fails before the model is even loaded.
  OutputFile out(command.output, "-o");
  auto model = load_model(command.common.model_dir, command.common.dtype);
  const ArchSpec& spec = model->spec();
  const AttentionSelection selection = select_attention(spec, command.attention);
  if (command.pair && spec.causal) {
    throw UsageError("--pair: sentence pairs need an encoder such as BERT; '" + model->model_type +
                     "' is a decoder");
  }

  Encoding encoding = model->tokenizer->encode(command.text, command.pair);
  std::vector<std::string> tokens = token_strings(*model->tokenizer, encoding.ids);
  const AttentionDocumentInfo info{.model = model->name(),
                                   .model_type = model->model_type,
                                   .text = command.text,
                                   .pair = command.pair,
                                   .encoding = std::move(encoding),
                                   .tokens = std::move(tokens),
                                   .n_layers = spec.n_layer,
                                   .n_heads = spec.n_head};
  const int n_tokens = int(info.encoding.ids.size());
  // Bad text is bad input (exit status 1), as for every command.
  if (n_tokens == 0) throw Error("TEXT: gives no tokens");
  if (n_tokens > spec.max_positions) {
    throw Error("TEXT: " + std::to_string(n_tokens) + " tokens, more than the model's " +
                "context of " + std::to_string(spec.max_positions));
  }
  const double bytes =
      estimated_attention_bytes(selection, n_tokens, spec.causal, command.attention.precision);
  if (bytes > kLargeOutputBytes) {
    spdlog::warn(
        "attention: the output will be up to {:.0f} MB ({} layers x {} heads x {}x{} weights); "
        "--layers, --heads and --precision make it smaller",
        bytes / 1e6, selection.layers.size(), selection.heads.size(), n_tokens, n_tokens);
  }

  AttentionWriter writer(out, command.format, command.attention.precision, info);
  capture_attention(*model, info.encoding, selection,
                    [&](int layer, int head, const float* probabilities, int n) {
                      writer.add_head(layer, head, probabilities, n);
                    });
  writer.finish();
  out.commit();
  return 0;
}

}  // namespace attn
