// attn ner: the named entities a token classifier (…ForTokenClassification) finds in each text,
// with the labels, scores, words and character offsets of Hugging Face's token-classification
// pipeline for the chosen --aggregation.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <climits>
#include <nlohmann/json.hpp>

#include "src/base/error.h"
#include "src/cli/commands.h"
#include "src/cli/progress.h"
#include "src/io/output_file.h"
#include "src/tasks/token_classify.h"

namespace attn {
namespace {

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

// A text ready for the model: its ids and each id's offsets.
struct NerInput {
  const InputText* source = nullptr;
  Encoding encoding;
  std::vector<CharSpan> offsets;
};

// The inputs, encoded; a blank line of a file is skipped, and an input that cannot be encoded
// is reported and counted in `failed`.
struct EncodedNerInputs {
  std::vector<NerInput> inputs;
  std::vector<Encoding> encodings;
  int failed = 0;
};

EncodedNerInputs encode_inputs(const NerCommand& command, const Model& model,
                               const TokenOffsets& offsets, const std::vector<InputText>& texts) {
  EncodedNerInputs encoded;
  const Truncation truncation = command.truncate ? Truncation::kLongestFirst : Truncation::kNone;
  encoded.failed = for_each_text(texts, [&](const InputText& source) {
    if (is_blank_line(source)) return;
    require_utf8(source.text, source.source);
    if (source.text.empty()) source.fail("the text is empty");
    ClassifierInput classifier_input;
    try {
      classifier_input = encode_for_classifier(model, source.text, std::nullopt, truncation);
    } catch (const Error& e) {
      source.fail(e.what());
    }
    NerInput input{.source = &source,
                   .encoding = std::move(classifier_input.encoding),
                   .offsets = offsets.token_offsets(source.text)};
    // Truncation kept the first tokens and the closing special token.
    const std::size_t kept = input.encoding.ids.size();
    input.offsets.erase(input.offsets.begin() + long(kept) - 1, input.offsets.end() - 1);
    if (classifier_input.dropped_tokens > 0) {
      spdlog::warn("{}: {} tokens cut off by --truncate", source.source,
                   classifier_input.dropped_tokens);
    }
    encoded.encodings.push_back(input.encoding);
    encoded.inputs.push_back(std::move(input));
  });
  return encoded;
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
    nlohmann::ordered_json out = {{"text", source.text},
                                  {"entities", entities_json(entities, command.aggregation)}};
    if (source.line > 0) out["line"] = source.line;
    write_stdout(json_text(out) + "\n");
  } else {
    std::string text = first ? "" : "\n";
    write_stdout(text + marked_text(source.text, entities) + entity_lines(entities));
  }
}

}  // namespace

int run_ner(const NerCommand& command) {
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
  const EncodedNerInputs encoded = encode_inputs(command, *model, offsets, texts);
  Progress progress("ner", "texts", command.common.quiet);
  std::int64_t tokens_done = 0;
  classifier_logits(
      *model, encoded.encodings, command.batch_tokens,
      [&](std::size_t i, std::span<const float> logits) {
        const NerInput& input = encoded.inputs[i];
        const TokenLogits token_logits{.text = input.source->text,
                                       .ids = input.encoding.ids,
                                       .logits = logits,
                                       .offsets = input.offsets};
        write_entities(command, *input.source,
                       find_entities(token_logits, *model->tokenizer, offsets, model->labels,
                                     command.aggregation, command.ignore_labels),
                       i == 0);
        tokens_done += std::int64_t(input.encoding.ids.size());
        progress.update(std::int64_t(i) + 1, std::int64_t(encoded.inputs.size()), tokens_done);
      });
  flush_stdout();
  return encoded.failed;
}

}  // namespace attn
