// attn attention: the attention weights of one text (or BERT sentence pair) as JSON, bertviz
// JSON or an HTML page; for an encoder-decoder, its encoder, decoder and cross-attention.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "src/base/error.h"
#include "src/cli/commands.h"
#include "src/cli/progress.h"
#include "src/tasks/attention_capture.h"
#include "src/tasks/attention_flow.h"
#include "src/tasks/translate.h"

namespace attn {
namespace {

// Above this the user is told how large the output will be before the work starts.
constexpr double kLargeOutputBytes = 100e6;

void warn_if_large(double bytes, const std::string& shape) {
  if (bytes > kLargeOutputBytes) {
    spdlog::warn(
        "attention: the output will be up to {:.0f} MB ({}); --layers, --heads and --precision "
        "make it smaller",
        bytes / 1e6, shape);
  }
}

// The decoder's input: [start] + the target's ids without their final end-of-sequence (what the
// decoder reads when it is trained to produce the target), or [start] + the model's own greedy
// translation of the source.
std::vector<int> decoder_input(const AttentionCommand& command, const Model& model,
                               std::span<const int> source_ids) {
  if (!command.target) {
    return greedy_decoder_input(model, encode_source(model, source_ids), kMaxOwnTranslationTokens);
  }
  std::vector<int> ids = decoder_prompt(model);
  const std::vector<int> target = target_ids(model, *command.target);
  ids.insert(ids.end(), target.begin(), target.end());
  if (int(ids.size()) > model.spec().max_positions) {
    throw Error("--target: " + std::to_string(ids.size()) +
                " decoder tokens, more than the model's context of " +
                std::to_string(model.spec().max_positions));
  }
  return ids;
}

// Above this many elementary steps (attention_flow_cost) the user is told that --flow will take
// a while: about a minute on one core.
constexpr double kLongFlowCost = 3e10;

// "augmented" and "rollout" (--rollout), "flow" and "flow_raw_last" (--flow): one matrix per
// layer, each (tokens, tokens), in the field names of ../shared/golden/interp/.
void write_rollout_and_flow(const AttentionCommand& command, const Model& model,
                            const AttentionDocumentInfo& info, AttentionWriter& writer) {
  const MeanAttention mean = mean_attention(model, info.encoding);
  const int n_layers = mean.n_layers, n = mean.n_tokens;
  const std::vector<double> augmented = augmented_attention(mean);
  writer.add_matrices("augmented", augmented, n_layers, n, n);
  if (command.rollout) {
    writer.add_matrices("rollout", attention_rollout(augmented, n_layers, n), n_layers, n, n);
  }
  if (!command.flow) return;
  if (attention_flow_cost(n_layers, n) > kLongFlowCost) {
    spdlog::warn(
        "--flow: {} maximum flows over {} tokens and {} layers; this takes long (the "
        "work grows as layers^2 x tokens^4)",
        long(n_layers) * n * n, n, n_layers);
  }
  Progress progress("flow", "layers", command.common.quiet);
  const std::vector<double> raw = attention_flow_raw(
      augmented, n_layers, n, [&](int done) { progress.update(done, n_layers, 0); });
  const std::size_t size = std::size_t(n) * n;
  writer.add_matrices("flow", normalize_rows(raw, n), n_layers, n, n);
  writer.add_matrices("flow_raw_last", std::span(raw).subspan((n_layers - 1) * size), 1, n, n);
}

int run_encoder_decoder_attention(const AttentionCommand& command, const Model& model,
                                  const InputText& text, OutputFile& out,
                                  AttentionDocumentInfo info) {
  const ArchSpec& encoder_spec = model.encoder->spec();
  const ArchSpec& decoder_spec = model.spec();
  const AttentionSelection encoder_selection = select_attention(encoder_spec, command.attention);
  const AttentionSelection decoder_selection = select_attention(decoder_spec, command.attention);
  const std::vector<int>& source_ids = info.encoding.ids;
  if (int(source_ids.size()) > encoder_spec.max_positions) {
    text.fail(std::to_string(source_ids.size()) + " tokens, more than the model's context of " +
              std::to_string(encoder_spec.max_positions));
  }
  info.decoder_ids = decoder_input(command, model, source_ids);
  info.decoder_tokens = token_strings(*model.tokenizer, info.decoder_ids);
  info.target = command.target;
  info.n_layers = encoder_spec.n_layer;
  info.n_heads = encoder_spec.n_head;
  info.n_decoder_layers = decoder_spec.n_layer;
  info.n_decoder_heads = decoder_spec.n_head;
  const int n_source = int(source_ids.size()), n_target = int(info.decoder_ids.size());
  const int precision = command.attention.precision;
  warn_if_large(
      estimated_attention_bytes(encoder_selection, n_source, false, precision) +
          estimated_attention_bytes(decoder_selection, n_target, true, precision) +
          estimated_attention_bytes(decoder_selection, std::max(n_source, n_target), false,
                                    precision),
      std::to_string(n_source) + " source and " + std::to_string(n_target) + " target tokens");

  AttentionWriter writer(out, command.format, precision, info);
  std::optional<AttentionSection> current;
  capture_encoder_decoder_attention(model, source_ids, info.decoder_ids, encoder_selection,
                                    decoder_selection,
                                    [&](AttentionSection section, int layer, int head,
                                        const float* p, int n_queries, int n_keys) {
                                      if (section != current) writer.begin_section(section);
                                      current = section;
                                      writer.add_head(layer, head, p, n_queries, n_keys);
                                    });
  // Over the source: the encoder's self-attention (Abnar & Zuidema define them for one stack).
  if (command.rollout || command.flow) write_rollout_and_flow(command, model, info, writer);
  writer.finish();
  out.commit();
  return 0;
}

}  // namespace

int run_attention(const AttentionCommand& command) {
  const std::vector<InputText> texts = read_texts(command.input);
  if (texts.size() != 1) {
    throw UsageError("attention: one text at a time (" + std::to_string(texts.size()) +
                     " given); run it once per text");
  }
  const InputText& text = texts.front();
  require_utf8(text.text, text.source);
  if (command.pair) require_utf8(*command.pair, "--pair");
  if (command.target) require_utf8(*command.target, "--target");
  OutputFile out(std::nullopt, "-o");  // standard output, or main's -o file
  auto model = load_model(command.common.model_dir, command.common.dtype);
  const ArchSpec& spec = model->spec();
  const bool encoder_decoder = model->kind() == ModelKind::kEncoderDecoder;
  if (command.pair && spec.causal) {
    throw UsageError("--pair: sentence pairs need an encoder such as BERT; '" + model->model_type +
                     "' is a" + (encoder_decoder ? "n encoder-decoder" : " decoder"));
  }
  if (command.target && !encoder_decoder) {
    throw UsageError("--target: only for an encoder-decoder (Marian, T5); '" + model->model_type +
                     "' is " + (spec.causal ? "a decoder" : "an encoder"));
  }
  if (encoder_decoder) check_translation_model(*model, "attention");
  if ((command.rollout || command.flow) && command.format == AttentionFormat::kBertviz) {
    throw UsageError(std::string(command.rollout ? "--rollout" : "--flow") +
                     ": bertviz's JSON has no place for it; use --format json or html");
  }

  Encoding encoding = model->tokenizer->encode(text.text, command.pair);
  std::vector<std::string> tokens = token_strings(*model->tokenizer, encoding.ids);
  AttentionDocumentInfo info{.model = model->name(),
                             .model_type = model->model_type,
                             .text = text.text,
                             .pair = command.pair,
                             .encoding = std::move(encoding),
                             .tokens = std::move(tokens),
                             .n_layers = spec.n_layer,
                             .n_heads = spec.n_head};
  const auto windowed = [](const LayerSpec& layer) { return layer.window > 0; };
  if (std::any_of(spec.layers.begin(), spec.layers.end(), windowed)) {
    for (const LayerSpec& layer : spec.layers) info.windows.push_back(layer.window);
    info.causal = spec.causal;
  }
  const int n_tokens = int(info.encoding.ids.size());
  // Bad text is bad input (exit status 1), as for every command.
  if (n_tokens == 0) text.fail("gives no tokens");
  if (encoder_decoder)
    return run_encoder_decoder_attention(command, *model, text, out, std::move(info));

  const AttentionSelection selection = select_attention(spec, command.attention);
  if (n_tokens > spec.max_positions) {
    text.fail(std::to_string(n_tokens) + " tokens, more than the model's context of " +
              std::to_string(spec.max_positions));
  }
  warn_if_large(
      estimated_attention_bytes(selection, n_tokens, spec.causal, command.attention.precision),
      std::to_string(selection.layers.size()) + " layers x " +
          std::to_string(selection.heads.size()) + " heads x " + std::to_string(n_tokens) + "x" +
          std::to_string(n_tokens) + " weights");

  AttentionWriter writer(out, command.format, command.attention.precision, info);
  capture_attention(*model, info.encoding, selection,
                    [&](int layer, int head, const float* probabilities, int n) {
                      writer.add_head(layer, head, probabilities, n, n);
                    });
  if (command.rollout || command.flow) write_rollout_and_flow(command, *model, info, writer);
  writer.finish();
  out.commit();
  return 0;
}

}  // namespace attn
