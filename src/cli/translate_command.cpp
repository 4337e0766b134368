// attn translate: translation with an encoder-decoder (Marian, T5). One text streams its
// translation as it is decoded; several texts (or the lines of a file) print one translation a
// line, or one JSON line each. Ctrl-C ends the translation being decoded early, prints it, and
// stops (src/cli/interrupt.h).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "src/base/error.h"
#include "src/cli/commands.h"
#include "src/cli/interrupt.h"
#include "src/cli/options.h"
#include "src/cli/progress.h"
#include "src/io/output_file.h"
#include "src/tasks/translate.h"

namespace attn {
namespace {

struct TranslateCommand final : Command {
  TranslateCommand() : Command("translate", "translate with an encoder-decoder (Marian, T5)") {}
  void add_options(CLI::App& app) override;
  int run(const CLI::App& app) override;

  std::optional<int> max_new_tokens;  // default: generation_config.json, else 256
  BeamSearchOptions beam;             // beams from generation_config.json when not given
  bool beams_given = false;
  bool beam_options_given = false;  // --num-return, --length-penalty or --early-stopping
  bool truncate = false;
  // JSON Lines with the cross-attention row behind each generated token, when given.
  std::optional<std::filesystem::path> attention_out;
  AttentionOptions attention;
};

// New tokens when neither -n nor generation_config.json's max_new_tokens says.
constexpr int kDefaultMaxNewTokens = 256;

struct Translator {
  const TranslateCommand& command;
  const Model& model;
  GenerateOptions options;  // greedy
  BeamSearchOptions beam;   // used when beam.beams > 1
};

Translator make_translator(const TranslateCommand& command, const Model& model) {
  Translator translator{.command = command, .model = model, .options = {}, .beam = command.beam};
  const int context = model.spec().max_positions;
  int max_new_tokens = command.max_new_tokens.value_or(
      model.generation.max_new_tokens.value_or(kDefaultMaxNewTokens));
  // The decoder's own context: its start token and the new tokens.
  if (max_new_tokens > context - 1) {
    if (command.max_new_tokens) {
      spdlog::warn("-n {}: the decoder's context of {} holds at most {} new tokens", max_new_tokens,
                   context, context - 1);
    }
    max_new_tokens = context - 1;
  }
  translator.options.max_new_tokens = max_new_tokens;
  translator.options.sampling.temperature = 0;
  if (!command.beams_given) translator.beam.beams = model.generation.num_beams.value_or(1);
  translator.beam.num_return = std::min(translator.beam.num_return, translator.beam.beams);
  translator.beam.max_new_tokens = max_new_tokens;
  translator.beam.eos_ids = model.generation.eos_token_ids;
  translator.beam.stop = &interrupt_requested();
  return translator;
}

// The source's ids, within the encoder's context: longer sources fail, or with --truncate keep
// their first tokens and the final end-of-sequence (as Hugging Face's truncation does).
std::vector<int> source_ids(const Translator& translator, const std::string& text,
                            const std::string& where) {
  std::vector<int> ids = translator.model.tokenizer->encode(text).ids;
  if (ids.empty()) throw Error(where + ": " + kNoTokens);
  const int context = translator.model.encoder->spec().max_positions;
  if (int(ids.size()) <= context) return ids;
  if (!translator.command.truncate) {
    throw Error(where + ": " + std::to_string(ids.size()) +
                " tokens, more than the model's context of " + std::to_string(context) +
                " (use --truncate to keep the first tokens)");
  }
  spdlog::warn("{}: {} tokens, truncated to the first {}", where, ids.size(), context);
  const int last = ids.back();
  ids.resize(context);
  ids.back() = last;
  return ids;
}

nlohmann::ordered_json beams_json(const Translator& translator, const BeamSearchResult& result) {
  nlohmann::ordered_json sequences = nlohmann::ordered_json::array();
  for (const BeamHypothesis& hypothesis : result.sequences) {
    sequences.push_back({{"generated_ids", hypothesis.ids},
                         {"text", translator.model.tokenizer->decode(hypothesis.ids, true)},
                         {"score", hypothesis.score},
                         {"finished", hypothesis.finished}});
  }
  return {{"beams", translator.beam.beams},
          {"steps", result.steps},
          {"stop_reason", result.stop_reason},
          {"sequences", sequences}};
}

// The decoder passes of a greedy translation: the first is the start token's, the others each
// read one new token.
int decoder_passes(const TranslateResult& result) { return result.generation.decode_steps + 1; }
double decoder_ms(const TranslateResult& result) {
  return result.generation.prompt_ms + result.generation.decode_ms;
}

// A greedy translation as JSON, the same for one text and for each line of a file.
nlohmann::ordered_json greedy_json(const Model& model, const TranslateResult& result) {
  const GenerateResult& generation = result.generation;
  return {{"generated_ids", generation.generated_ids},
          {"text", generation.text},
          {"stop_reason", generation.stop_reason},
          {"timings",
           {{"load_ms", model.load_ms},
            {"encode_ms", result.encode_ms},
            {"decode_ms", decoder_ms(result)},
            {"decode_tokens_per_s", decoder_passes(result) / (decoder_ms(result) / 1000)}}}};
}

// One translation as JSON: the greedy result or the beams.
nlohmann::ordered_json translation_json(const Translator& translator, std::span<const int> ids) {
  if (translator.beam.beams > 1) {
    return beams_json(translator, translate_beams(translator.model, ids, translator.beam));
  }
  GenerateCallbacks callbacks;
  callbacks.stop = &interrupt_requested();
  return greedy_json(translator.model,
                     translate(translator.model, ids, translator.options, callbacks));
}

// The beams' text output: "[score] text" a line, best first.
std::string beams_text(const nlohmann::ordered_json& beams) {
  std::string text;
  for (const auto& sequence : beams["sequences"]) {
    text += fmt::format("[{:.4f}] {}\n", sequence["score"].get<double>(),
                        sequence["text"].get<std::string>());
  }
  return text;
}

// One text given as an argument or -p: its translation streams as it is decoded.
void translate_text(const Translator& translator, const InputText& source) {
  const TranslateCommand& command = translator.command;
  const Model& model = translator.model;
  const std::vector<int> ids = source_ids(translator, source.text, source.source);
  if (translator.beam.beams > 1) {
    if (command.attention_out) throw UsageError("--attention-out does not go with --beams");
    const BeamSearchResult result = translate_beams(model, ids, translator.beam);
    nlohmann::ordered_json out = {{"source", source.text}, {"source_ids", ids}};
    out.update(beams_json(translator, result));
    write_stdout(command.common.json ? json_text(out) + "\n" : beams_text(out));
    if (result.stop_reason == "interrupted") {
      flush_stdout();
      spdlog::info("interrupted after {}: the best sequences so far, unfinished ones included",
                   plural(result.steps, "step"));
    }
    return;
  }

  std::optional<OutputFile> attention_out;
  std::optional<GenerationAttentionRecorder> recorder;
  GenerateCallbacks callbacks;
  callbacks.stop = &interrupt_requested();
  if (command.attention_out) {
    attention_out.emplace(command.attention_out, "--attention-out");
    recorder.emplace(select_attention(model.spec(), command.attention), true);
    callbacks.observer = recorder->observer();
  }
  if (!command.common.json) {
    callbacks.on_text = [](std::string_view text) {
      write_stdout(text);
      flush_stdout();
    };
  }
  const TranslateResult result = translate(model, ids, translator.options, callbacks);
  const GenerateResult& generation = result.generation;
  if (recorder) {
    recorder->write_jsonl(*attention_out, *model.tokenizer, generation.generated_ids,
                          command.attention.precision);
    attention_out->commit();
  }
  const int passes = decoder_passes(result);
  const double rate = passes / (decoder_ms(result) / 1000);
  if (command.common.json) {
    // The keys of a line of a file (translate_each), less "line".
    nlohmann::ordered_json out = {{"source", source.text}, {"source_ids", ids}};
    out.update(greedy_json(model, result));
    write_stdout(json_text(out) + "\n");
  } else {
    write_stdout("\n");
  }
  flush_stdout();
  spdlog::info("load {:.1f} ms | encode {}, {:.1f} ms | decode {}, {:.1f} tokens/s | {}, stop: {}",
               model.load_ms, plural(long(ids.size()), "token"), result.encode_ms,
               plural(passes, "pass", "passes"), rate,
               plural(long(generation.generated_ids.size()), "new token"), generation.stop_reason);
}

// Several texts, or the lines of a file: one translation a line (with --num-return above 1,
// its "[score] text" lines and a blank line), so that `attn translate < in.txt > out.txt` keeps
// the lines in step: a blank line gives a blank line, and a text that cannot be translated its
// error line ("attn: error: ..."), besides on stderr. --json: one JSON line per text, with
// "line" (blank lines skipped). The rest still run after a failed text, and the exit status is
// 1 at the end.
int translate_each(const Translator& translator, const std::vector<InputText>& texts) {
  const TranslateCommand& command = translator.command;
  if (command.attention_out) throw UsageError("--attention-out: only with one text");
  std::int64_t total = 0;
  for (const InputText& text : texts) total += !is_blank_line(text);
  std::optional<Progress> progress(std::in_place, "translate", "texts", command.common.quiet);
  std::int64_t done = 0, tokens = 0;
  const auto translate = [&](const InputText& text) {
    // Ctrl-C: the text being translated was ended early and printed; the rest are not run.
    if (interrupt_requested()) return;
    if (is_blank_line(text)) {
      write_stdout("\n");
      return;
    }
    const std::vector<int> ids = source_ids(translator, text.text, text.source);
    nlohmann::ordered_json out;
    if (text.line > 0) out["line"] = text.line;
    out["source"] = text.text;  // not text_json's "text": the output's "text" is the translation
    out["source_ids"] = ids;
    out.update(translation_json(translator, ids));
    if (command.common.json) {
      write_stdout(json_text(out) + "\n");
    } else if (translator.beam.num_return > 1) {
      write_stdout(beams_text(out) + "\n");
    } else {
      write_stdout((out.contains("sequences") ? out["sequences"][0]["text"] : out["text"])
                       .get<std::string>() +
                   "\n");
    }
    flush_stdout();
    tokens += std::int64_t(ids.size());
    progress->update(++done, total, tokens);
  };
  const int status = for_each_text(texts, translate, {.line_for_line = !command.common.json});
  progress.reset();  // the progress line ends before anything else goes to stderr
  if (interrupt_requested()) spdlog::info("interrupted after {} of {} texts", done, total);
  return status;
}

}  // namespace

void TranslateCommand::add_options(CLI::App& app) {
  add_common_options(app, common, nullptr);
  add_output_options(app, common,
                     "one JSON object per source (ids, text, stop_reason) instead of the text");
  add_text_options(app, input, "source texts");
  app.add_option("-n,--max-new-tokens", max_new_tokens,
                 "most tokens to generate (default: the model's generation_config.json, "
                 "else 256)")
      ->check(whole_number<int>())
      ->check(positive());
  add_beam_options(app, beam,
                   "beam search with this many beams (default: the model's num_beams, else 1: "
                   "greedy)");
  app.add_flag("--truncate", truncate,
               "keep the first tokens of a source longer than the context instead of "
               "failing");
  add_attention_out_option(app, attention_out, attention,
                           "write the cross-attention row over the source behind each generated "
                           "token to this file (JSON Lines)");
  add_examples(
      app, {"attn translate -m Helsinki-NLP/opus-mt-en-de \"The jury said it was fair.\"",
            "attn translate -m DIR --beams 4 -f sources.txt -o targets.txt",
            "attn translate -m google-t5/t5-small \"translate English to German: Hello.\" --json"});
}

int TranslateCommand::run([[maybe_unused]] const CLI::App& app) {
  beams_given = app.count("--beams") > 0;
  beam_options_given = attn::beam_options_given(app);
  const TranslateCommand& command = *this;
  const std::vector<InputText> texts = read_texts(command.input);
  if (command.attention_out && *command.attention_out == "-") {
    throw UsageError("--attention-out: give a file; standard output carries the translation");
  }
  if (command.beam.num_return > command.beam.beams && command.beams_given) {
    throw UsageError("--num-return: must be at most --beams (" +
                     std::to_string(command.beam.beams) + "), got " +
                     std::to_string(command.beam.num_return));
  }
  auto model = load_model(command.common.model_dir, command.common.dtype);
  check_translation_model(*model, "translate");
  const Translator translator = make_translator(command, *model);
  if (command.beam_options_given && translator.beam.beams == 1) {
    throw UsageError(
        "--num-return, --length-penalty and --early-stopping: only with beam search (--beams 2 "
        "or more; this model's generation_config.json asks for none)");
  }
  catch_interrupts();
  const int status =
      texts.size() == 1 && texts[0].line == 0
          ? for_each_text(texts, [&](const InputText& text) { translate_text(translator, text); })
          : translate_each(translator, texts);
  return interrupt_requested() ? kInterruptedStatus : status;
}

std::unique_ptr<Command> make_translate_command() { return std::make_unique<TranslateCommand>(); }

}  // namespace attn
