// attn translate: translation with an encoder-decoder (Marian, T5). One text streams its
// translation as it is decoded; a file (or standard input) gives one JSON line per source line.
// Ctrl-C ends the translation being decoded early, prints it, and stops (src/cli/interrupt.h).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/cli/commands.h"
#include "src/cli/interrupt.h"
#include "src/cli/progress.h"
#include "src/io/output_file.h"
#include "src/tasks/translate.h"

namespace attn {
namespace {

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
  if (ids.empty()) throw Error(where + ": gives no tokens");
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

// One translation as JSON: the greedy result or the beams.
nlohmann::ordered_json translation_json(const Translator& translator, std::span<const int> ids) {
  if (translator.beam.beams > 1) {
    return beams_json(translator, translate_beams(translator.model, ids, translator.beam));
  }
  GenerateCallbacks callbacks;
  callbacks.stop = &interrupt_requested();
  const TranslateResult result = translate(translator.model, ids, translator.options, callbacks);
  return {{"generated_ids", result.generation.generated_ids},
          {"text", result.generation.text},
          {"stop_reason", result.generation.stop_reason}};
}

int translate_text(const Translator& translator) {
  const TranslateCommand& command = translator.command;
  const Model& model = translator.model;
  require_utf8(*command.text, "TEXT");
  const std::vector<int> ids = source_ids(translator, *command.text, "TEXT");
  catch_interrupts();
  if (translator.beam.beams > 1) {
    if (command.attention_out) throw UsageError("--attention-out does not go with --beams");
    const BeamSearchResult result = translate_beams(model, ids, translator.beam);
    nlohmann::ordered_json out = beams_json(translator, result);
    if (command.json) {
      out["source_ids"] = ids;
      write_stdout(json_text(out) + "\n");
    } else {
      std::string text;
      for (const auto& sequence : out["sequences"]) {
        text += fmt::format("[{:.4f}] {}\n", sequence["score"].get<double>(),
                            sequence["text"].get<std::string>());
      }
      write_stdout(text);
    }
    if (result.stop_reason != "interrupted") return 0;
    flush_stdout();
    spdlog::info("interrupted after {} steps: the best sequences so far, unfinished ones included",
                 result.steps);
    return kInterruptedStatus;
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
  if (!command.json) {
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
  // The first decoder pass is the start token's; the others each read one new token.
  const int decoder_passes = generation.decode_steps + 1;
  const double decode_ms = generation.prompt_ms + generation.decode_ms;
  const double rate = decoder_passes / (decode_ms / 1000);
  if (command.json) {
    write_stdout(json_text(nlohmann::ordered_json{{"source_ids", ids},
                                                  {"generated_ids", generation.generated_ids},
                                                  {"text", generation.text},
                                                  {"stop_reason", generation.stop_reason},
                                                  {"timings",
                                                   {{"load_ms", model.load_ms},
                                                    {"encode_ms", result.encode_ms},
                                                    {"decode_ms", decode_ms},
                                                    {"decode_tokens_per_s", rate}}}}) +
                 "\n");
  } else {
    write_stdout("\n");
  }
  flush_stdout();
  spdlog::info(
      "load {:.1f} ms | encode {} tokens, {:.1f} ms | decode {} passes, {:.1f} tokens/s | "
      "{} new tokens, stop: {}",
      model.load_ms, ids.size(), result.encode_ms, decoder_passes, rate,
      generation.generated_ids.size(), generation.stop_reason);
  return generation.stop_reason == "interrupted" ? kInterruptedStatus : 0;
}

// One source per line; blank lines are skipped. A line that cannot be translated is reported on
// stderr with its number, the rest still run, and the exit status is 1 at the end.
int translate_lines(const Translator& translator) {
  const TranslateCommand& command = translator.command;
  if (command.attention_out) {
    throw UsageError("--attention-out: only with one TEXT, not with --file or standard input");
  }
  const std::filesystem::path path = command.file.value_or("-");
  const std::string name = path == "-" ? "standard input" : "--file " + path.string();
  const std::string contents = read_input_text(path, "--file", kMaxInputTextBytes);
  if (contents.empty()) throw Error(name + ": is empty");
  const std::vector<std::string> lines = split_lines(contents);
  std::int64_t total = 0;
  for (const std::string& line : lines) {
    total += line.find_first_not_of(" \t") != std::string::npos;
  }
  if (total == 0) throw Error(name + ": has only blank lines");
  catch_interrupts();

  int failed = 0;
  bool interrupted = false;
  std::int64_t done = 0, tokens = 0;
  {
    Progress progress("translate", "lines", command.common.quiet);
    for (std::size_t i = 0; i < lines.size() && !interrupted; ++i) {
      if (lines[i].find_first_not_of(" \t") == std::string::npos) continue;
      const std::string where = name + ": line " + std::to_string(i + 1);
      try {
        require_utf8(lines[i], where);
        const std::vector<int> ids = source_ids(translator, lines[i], where);
        nlohmann::ordered_json out = {{"line", i + 1}, {"source", lines[i]}, {"source_ids", ids}};
        out.update(translation_json(translator, ids));
        write_stdout(json_text(out) + "\n");
        flush_stdout();
        tokens += std::int64_t(ids.size());
      } catch (const UsageError&) {
        throw;
      } catch (const Error& e) {
        print_error(e.what());
        ++failed;
      }
      progress.update(++done, total, tokens);
      // Ctrl-C: the line being translated was ended early and printed; the rest are not run.
      interrupted = interrupt_requested();
    }
  }  // the progress line ends before anything else goes to stderr
  if (interrupted) {
    spdlog::info("interrupted after {} of {} lines", done, total);
    return kInterruptedStatus;
  }
  return failed > 0 ? 1 : 0;
}

}  // namespace

int run_translate(const TranslateCommand& command) {
  if (command.text && command.file) {
    throw UsageError("TEXT and --file: give the source one way, not both");
  }
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
  return command.text ? translate_text(translator) : translate_lines(translator);
}

}  // namespace attn
