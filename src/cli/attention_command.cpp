// attn attention: the attention weights of one text (or BERT sentence pair) as JSON, bertviz
// JSON or an HTML page; for an encoder-decoder, its encoder, decoder and cross-attention.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "src/base/error.h"
#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/cli/progress.h"
#include "src/tasks/attention_capture.h"
#include "src/tasks/attention_flow.h"
#include "src/tasks/translate.h"

namespace attn {
namespace {

struct AttentionCommand final : Command {
  AttentionCommand()
      : Command("attention", "write the attention weights of every layer and head") {}
  void add_options(CLI::App& app) override;
  int run(const CLI::App& app) override;

  std::optional<std::string> pair;
  // Encoder-decoders: the decoder's text, teacher-forced; without it, the model's own
  // translation of `text`.
  std::optional<std::string> target;
  AttentionFormat format = AttentionFormat::kJson;
  AttentionOptions attention;
  // Abnar & Zuidema's attention rollout and attention flow (src/tasks/attention_flow.h),
  // written after the weights.
  bool rollout = false;
  bool flow = false;
};

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

// The size estimate behind warn_if_large, of an encoder-decoder's three sections.
void warn_if_large_encoder_decoder(const AttentionCommand& command, const Model& model,
                                   const AttentionDocumentInfo& info) {
  const AttentionSelection encoder_selection =
      select_attention(model.encoder->spec(), command.attention);
  const AttentionSelection decoder_selection = select_attention(model.spec(), command.attention);
  const int n_source = int(info.encoding.ids.size()), n_target = int(info.decoder_ids.size());
  const int precision = command.attention.precision;
  warn_if_large(
      estimated_attention_bytes(encoder_selection, n_source, false, precision) +
          estimated_attention_bytes(decoder_selection, n_target, true, precision) +
          estimated_attention_bytes(decoder_selection, std::max(n_source, n_target), false,
                                    precision),
      std::to_string(n_source) + " source and " + std::to_string(n_target) + " target tokens");
}

}  // namespace

void AttentionCommand::add_options(CLI::App& app) {
  add_common_options(app, common, "tiny-gpt2-brown");
  add_output_options(app, common, "the same as --format json");
  add_text_options(app, input, "the text to run through the model (one)");
  app.add_option("--pair", pair, "second sentence (encoders)");
  app.add_option("--target", target,
                 "encoder-decoders: the decoder's text, teacher-forced (default: the "
                 "model's own translation of TEXT)");
  const std::map<std::string, AttentionFormat> attention_formats = {
      {"json", AttentionFormat::kJson},
      {"html", AttentionFormat::kHtml},
      {"bertviz", AttentionFormat::kBertviz}};
  app.add_option_function<std::string>(
         "--format",
         [this, attention_formats](const std::string& name) {
           format = attention_formats.at(name);
         },
         "json (the default), html (a page with a heat map) or bertviz (bertviz's JSON layout)")
      ->check(CLI::IsMember(attention_formats))
      ->excludes("--json");
  add_attention_options(app, attention);
  app.add_flag("--rollout", rollout,
               "add attention rollout (Abnar & Zuidema 2020): what each input token "
               "contributes to each position of each layer, through the residuals "
               "(an encoder-decoder's encoder)");
  app.add_flag("--flow", flow,
               "add attention flow (Abnar & Zuidema 2020): the same as maximum flows "
               "through the layers (slow past about 64 tokens)");
  add_examples(
      app, {"attn attention \"The jury said the judge was fair.\"",
            "attn attention -m bert-base-uncased --format html -o attention.html \"The cat sat.\"",
            "attn attention -m DIR --layers 0,5-7 --heads 0 --rollout \"A short text.\""});
}

int AttentionCommand::run([[maybe_unused]] const CLI::App& app) {
  if (common.json) format = AttentionFormat::kJson;
  const AttentionCommand& command = *this;
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
  const int n_tokens = int(encoding.ids.size());
  // Bad text is bad input (exit status 1), as for every command.
  if (n_tokens == 0) text.fail(kNoTokens);
  const ArchSpec& input_spec = model->input_stack().spec();
  if (n_tokens > input_spec.max_positions) {
    text.fail(std::to_string(n_tokens) + " tokens, more than the model's context of " +
              std::to_string(input_spec.max_positions));
  }
  std::vector<int> decoder_ids;
  if (encoder_decoder) decoder_ids = decoder_input(command, *model, encoding.ids);
  const AttentionDocumentInfo info = attention_document_info(
      *model, text.text, command.pair, std::move(encoding), std::move(decoder_ids), command.target);
  if (encoder_decoder) {
    warn_if_large_encoder_decoder(command, *model, info);
  } else {
    const AttentionSelection selection = select_attention(spec, command.attention);
    warn_if_large(
        estimated_attention_bytes(selection, n_tokens, spec.causal, command.attention.precision),
        std::to_string(selection.layers.size()) + " layers x " +
            std::to_string(selection.heads.size()) + " heads x " + std::to_string(n_tokens) + "x" +
            std::to_string(n_tokens) + " weights");
  }
  AttentionWriter writer(out, command.format, command.attention.precision, info);
  write_attention_heads(*model, info, command.attention, writer);
  // An encoder-decoder's over the source: the encoder's self-attention (Abnar & Zuidema define
  // them for one stack).
  if (command.rollout || command.flow) write_rollout_and_flow(command, *model, info, writer);
  writer.finish();
  out.commit();
  return 0;
}

std::unique_ptr<Command> make_attention_command() { return std::make_unique<AttentionCommand>(); }

}  // namespace attn
