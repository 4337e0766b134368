// attn ner: the named entities a token classifier (…ForTokenClassification) finds in each text,
// with the labels, scores, words and character offsets of Hugging Face's token-classification
// pipeline for the chosen --aggregation.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <climits>
#include <nlohmann/json.hpp>

#include "src/base/error.h"
#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/cli/progress.h"
#include "src/io/output_file.h"
#include "src/tasks/classify.h"
#include "src/tasks/token_classify.h"

namespace attn {
namespace {

// attn ner: the named entities a token classifier (…ForTokenClassification) finds in each text,
// grouped as Hugging Face's token-classification pipeline groups them.
struct NerCommand final : Command {
  NerCommand()
      : Command("ner", "named entities from a token classifier (per-token labels, entity groups)") {
  }
  void add_options(CLI::App& app) override;
  int run(const CLI::App& app) override;

  Aggregation aggregation = Aggregation::kSimple;  // --aggregation
  std::vector<std::string> ignore_labels = {"O"};  // --ignore-labels: entities left out
  bool truncate = false;                           // cut inputs longer than the model's context
  int batch_tokens = 1024;                         // tokens per packed batch
};

const char* aggregation_name(Aggregation aggregation) {
  switch (aggregation) {
    case Aggregation::kNone:
      return "none";
    case Aggregation::kSimple:
      return "simple";
    case Aggregation::kFirst:
      return "first";
    case Aggregation::kAverage:
      return "average";
    case Aggregation::kMax:
      return "max";
  }
  return "?";
}

// The texts encoded, and each token's offsets in its text (`spans`, parallel to the encodings).
EncodedTexts<Encoding> encode_inputs(const NerCommand& command, const Model& model,
                                     const TokenOffsets& offsets,
                                     const std::vector<InputText>& texts,
                                     std::vector<std::vector<CharSpan>>& spans) {
  const Truncation truncation = command.truncate ? Truncation::kLongestFirst : Truncation::kNone;
  return encode_each<Encoding>(texts, [&](const InputText& source) {
    ClassifierInput classifier_input;
    try {
      classifier_input = encode_for_classifier(model, source.text, std::nullopt, truncation);
    } catch (const Error& e) {
      source.fail(e.what());
    }
    warn_truncated(source, classifier_input.dropped_tokens);
    std::vector<CharSpan> token_spans = offsets.token_offsets(source.text);
    // Truncation kept the first tokens and the closing special token.
    const std::size_t kept = classifier_input.encoding.ids.size();
    token_spans.erase(token_spans.begin() + long(kept) - 1, token_spans.end() - 1);
    spans.push_back(std::move(token_spans));
    return std::move(classifier_input.encoding);
  });
}

// The text with each entity marked "[words](LABEL)"; entities come in text order.
std::string marked_text(std::string_view text, const std::vector<Entity>& entities) {
  std::string marked;
  int done = 0;  // code points of the text already written
  for (const Entity& entity : entities) {
    if (entity.span.start < done || entity.span.end <= entity.span.start) {
      continue;
    }
    marked += text_slice(text, {done, entity.span.start});
    marked += fmt::format("[{}]({})", text_slice(text, entity.span), entity.label);
    done = entity.span.end;
  }
  marked += text_slice(text, {done, INT_MAX});
  return marked + "\n";
}

std::string entity_lines(const std::vector<Entity>& entities) {
  std::string out;
  for (const Entity& entity : entities) {
    out += fmt::format("{}\t{:.4f}\t{}-{}\t{}\n", entity.label, entity.score, entity.span.start,
                       entity.span.end, entity.word);
  }
  return out;
}

// The pipeline's fields: entity/entity_group, score, index (none only), word, start, end.
nlohmann::ordered_json entities_json(const std::vector<Entity>& entities, Aggregation aggregation) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Entity& entity : entities) {
    nlohmann::ordered_json item;
    item[aggregation == Aggregation::kNone ? "entity" : "entity_group"] = entity.label;
    item["score"] = entity.score;
    if (aggregation == Aggregation::kNone) item["index"] = entity.index;
    item["word"] = entity.word;
    item["start"] = entity.span.start;
    item["end"] = entity.span.end;
    out.push_back(std::move(item));
  }
  return out;
}

void write_entities(const NerCommand& command, const InputText& source,
                    const std::vector<Entity>& entities, bool first) {
  if (command.common.json) {
    nlohmann::ordered_json out = text_json(source);
    out["entities"] = entities_json(entities, command.aggregation);
    write_stdout(json_text(out) + "\n");
  } else {
    std::string text = first ? "" : "\n";
    write_stdout(text + marked_text(source.text, entities) + entity_lines(entities));
  }
}

}  // namespace

void NerCommand::add_options(CLI::App& app) {
  add_common_options(app, common, nullptr);
  add_output_options(app, common,
                     "one JSON object per text: {text, entities}, each entity with the "
                     "pipeline's fields");
  add_text_options(app, input, "texts to find entities in");
  const std::map<std::string, Aggregation> aggregations = {{"none", Aggregation::kNone},
                                                           {"simple", Aggregation::kSimple},
                                                           {"first", Aggregation::kFirst},
                                                           {"average", Aggregation::kAverage},
                                                           {"max", Aggregation::kMax}};
  app.add_option_function<std::string>(
         "--aggregation",
         [this, aggregations](const std::string& name) { aggregation = aggregations.at(name); },
         "how tokens become entities, as Hugging Face's pipeline: none (every token), simple "
         "(B-/I- runs of tokens), first, average or max (whole words, labelled by their first "
         "token, mean scores or best token) (default: simple)")
      ->check(CLI::IsMember({"none", "simple", "first", "average", "max"}))
      ->type_name("NAME");
  app.add_option("--ignore-labels", ignore_labels,
                 "labels left out, separated by commas (default: O)")
      ->delimiter(',')
      ->type_name("LIST");
  app.add_flag("--truncate", truncate,
               "keep the first tokens of a text longer than the model's context instead of "
               "failing");
  add_batch_tokens_option(app, batch_tokens);
  add_examples(app, {"attn ner -m dslim/bert-base-NER \"George Washington went to Paris.\"",
                     "attn ner -m DIR --aggregation first -f texts.txt --json"});
}

int NerCommand::run([[maybe_unused]] const CLI::App& app) {
  const NerCommand& command = *this;
  const std::vector<InputText> texts = read_texts(command.input);
  auto model = load_model(command.common.model_dir, command.common.dtype);
  require_token_classifier(*model, "ner");
  const TokenOffsets& offsets = model->tokenizer->offsets();
  if (!offsets.word_aware() && command.aggregation != Aggregation::kNone &&
      command.aggregation != Aggregation::kSimple) {
    // The pipeline's UserWarning "Tokenizer does not support real words, using fallback
    // heuristic".
    spdlog::warn(
        "--aggregation {}: the tokenizer does not mark the pieces inside a word; a token starts a "
        "word when a space is before it, as Hugging Face's pipeline guesses",
        aggregation_name(command.aggregation));
  }
  std::vector<std::vector<CharSpan>> spans;
  const auto encoded = encode_inputs(command, *model, offsets, texts, spans);
  Progress progress("ner", "texts", command.common.quiet);
  std::int64_t tokens_done = 0;
  classifier_logits(
      *model, encoded.items, command.batch_tokens,
      [&](std::size_t i, std::span<const float> logits) {
        const InputText& source = *encoded.sources[i];
        const TokenLogits token_logits{.text = source.text,
                                       .ids = encoded.items[i].ids,
                                       .logits = logits,
                                       .offsets = spans[i]};
        write_entities(command, source,
                       find_entities(token_logits, *model->tokenizer, offsets, model->labels,
                                     command.aggregation, command.ignore_labels),
                       i == 0);
        tokens_done += std::int64_t(encoded.items[i].ids.size());
        progress.update(std::int64_t(i) + 1, std::int64_t(encoded.items.size()), tokens_done);
      });
  flush_stdout();
  return encoded.status;
}

std::unique_ptr<Command> make_ner_command() { return std::make_unique<NerCommand>(); }

}  // namespace attn
