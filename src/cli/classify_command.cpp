// attn classify: the labels of a sequence classifier (…ForSequenceClassification) for each text,
// with the scores Hugging Face's text-classification pipeline gives. WIP (issue 27): one
// sequence at a time; no zero-shot, no batches yet.
#include <spdlog/fmt/fmt.h>

#include <nlohmann/json.hpp>

#include "src/base/error.h"
#include "src/cli/commands.h"
#include "src/io/output_file.h"

namespace attn {
namespace {

// The head's logits (labels) for one encoded input.
std::vector<float> sequence_logits(const Model& model, const Encoding& encoding) {
  const ArchSpec& spec = model.spec();
  const int n = static_cast<int>(encoding.ids.size());
  KVCache cache(spec, n, spec.n_layer);
  RunState state(spec, n, n);
  Batch batch;
  batch.add_sequence(encoding.ids, encoding.type_ids);
  model.transformer->forward(batch, cache, state);
  std::vector<float> logits(model.labels.size());
  const int first = 0;
  model.transformer->compute_class_logits(state, std::span(&first, 1), logits.data());
  return logits;
}

}  // namespace

int run_classify(const ClassifyCommand& command) {
  const std::vector<InputText> texts = read_texts(command.input);
  auto model = load_model(command.common.model_dir, command.common.dtype);
  const ClassifierHead* head = model->transformer->classifier();
  if (!head || head->pooling != ClassifierHead::Pooling::kFirstToken) {
    throw UsageError(model->dir.string() + ": classify needs a …ForSequenceClassification " +
                     "model; this one is " +
                     (model->architecture.empty() ? model->model_type : model->architecture) +
                     (head ? " (try attn ner)" : ""));
  }
  const ScoreFunction function = command.function.value_or(
      default_score_function(model->problem_type, int(model->labels.size())));
  const bool several = texts.size() > 1;
  bool first = true;
  return for_each_text(texts, [&](const InputText& text) {
    require_utf8(text.text, text.source);
    const Encoding encoding = model->tokenizer->encode(text.text, command.pair);
    if (int(encoding.ids.size()) > model->spec().max_positions) {
      text.fail("the text is " + std::to_string(encoding.ids.size()) +
                " tokens, longer than the context of " +
                std::to_string(model->spec().max_positions));
    }
    const std::vector<float> logits = sequence_logits(*model, encoding);
    const std::vector<float> scores = class_scores(logits, function);
    const std::vector<LabelScore> ranked = ranked_labels(scores, model->labels, command.top_k);
    if (command.common.json) {
      nlohmann::ordered_json labels = nlohmann::ordered_json::array();
      for (const LabelScore& label : ranked)
        labels.push_back({{"label", label.label}, {"score", label.score}});
      nlohmann::ordered_json out = {{"text", text.text}};
      if (command.pair) out["text_pair"] = *command.pair;
      out["logits"] = logits;
      out["scores"] = scores;
      out["labels"] = labels;
      if (text.line > 0) out["line"] = text.line;
      write_stdout(json_text(out) + "\n");
      return;
    }
    std::string block = several && !first ? "\n" : "";
    first = false;
    for (const LabelScore& label : ranked)
      block += fmt::format("{}\t{:.4f}\n", label.label, label.score);
    write_stdout(block);
  });
}

}  // namespace attn
