// attn classify: the labels of a sequence classifier (…ForSequenceClassification) for each text
// or text pair, with the scores of Hugging Face's text-classification pipeline; with --labels,
// zero-shot classification by an NLI model, as the zero-shot-classification pipeline does it.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "src/base/error.h"
#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/cli/progress.h"
#include "src/io/output_file.h"
#include "src/tasks/classify.h"
#include "src/tasks/zero_shot.h"

namespace attn {
namespace {

// attn classify: a sequence classifier's labels and scores for each text (or text pair), or
// with --labels, zero-shot classification over the given labels by an NLI model.
struct ClassifyCommand final : Command {
  ClassifyCommand()
      : Command("classify",
                "labels and scores from a sequence classifier (sentiment, NLI, rerankers)") {}
  void add_options(CLI::App& app) override;
  int run(const CLI::App& app) override;

  std::optional<std::string> pair;              // --pair: the second text of every input
  int top_k = 0;                                // -k: the best k labels; 0: all
  std::optional<ScoreFunction> function;        // --function; default: the pipeline's for the model
  bool truncate = false;                        // cut inputs longer than the model's context
  int batch_tokens = 1024;                      // tokens per packed batch
  std::optional<std::string> candidate_labels;  // --labels "a,b,c": zero-shot
  std::optional<std::string> hypothesis_template;  // --template, zero-shot
  bool multi_label = false;                        // --multi-label, zero-shot
};

// One input to classify: a text, its pair when it has one, and where it came from.
struct PairedText {
  const InputText* source = nullptr;
  std::string text;
  std::optional<std::string> pair;
};

// A line "premise<TAB>hypothesis" of a file or standard input is a pair; --pair pairs every
// text with the same second text.
PairedText paired_text(const InputText& input, const std::optional<std::string>& pair) {
  const std::size_t tab = input.line > 0 ? input.text.find('\t') : std::string::npos;
  if (tab == std::string::npos) {
    return {.source = &input, .text = input.text, .pair = pair};
  }
  if (pair) input.fail("a TAB makes the line a pair, and --pair gives a pair too");
  if (input.text.find('\t', tab + 1) != std::string::npos) {
    input.fail("more than one TAB (a line is one text, or a text and its pair around one TAB)");
  }
  return {.source = &input, .text = input.text.substr(0, tab), .pair = input.text.substr(tab + 1)};
}

// How a pair reaches a model without token-type embeddings (RoBERTa, DistilBERT): only the
// special tokens between the texts tell them apart.
void describe_pairs_without_token_types(const Model& model) {
  if (model.spec().n_token_types > 1) return;
  const Encoding example = model.tokenizer->encode("A", std::string_view("B"));
  std::string joined;
  for (int id : example.ids) {
    if (!joined.empty()) joined += ' ';
    joined += model.tokenizer->token_string(id);
  }
  spdlog::info("{}: the model has no token types; a pair is joined as {}", model.name(), joined);
}

// What the plain output shows above an input's labels when there are several.
std::string input_heading(const PairedText& input) {
  return input.pair ? input.text + "\t" + *input.pair + "\n" : input.text + "\n";
}

std::string ranked_labels_text(const std::vector<LabelScore>& ranked) {
  std::string out;
  for (const LabelScore& label : ranked)
    out += fmt::format("{}\t{:.4f}\n", label.label, label.score);
  return out;
}

nlohmann::ordered_json ranked_labels_json(const std::vector<LabelScore>& ranked) {
  nlohmann::ordered_json labels = nlohmann::ordered_json::array();
  for (const LabelScore& label : ranked)
    labels.push_back({{"label", label.label}, {"score", label.score}});
  return labels;
}

// Writes each input's result, plain or as a JSON line, in input order.
class ResultWriter {
 public:
  ResultWriter(const ClassifyCommand& command, bool several)
      : json_(command.common.json), several_(several) {}

  void write(const PairedText& input, nlohmann::ordered_json result,
             const std::vector<LabelScore>& ranked) {
    if (json_) {
      nlohmann::ordered_json out = text_json(*input.source);
      out["text"] = input.text;  // a TAB-separated line's first text
      if (input.pair) out["text_pair"] = *input.pair;
      out.update(result);
      out["labels"] = ranked_labels_json(ranked);
      write_stdout(json_text(out) + "\n");
    } else {
      std::string text = written_ > 0 ? "\n" : "";
      if (several_) text += input_heading(input);
      write_stdout(text + ranked_labels_text(ranked));
    }
    ++written_;
  }

 private:
  bool json_;
  bool several_;  // the plain output shows each input above its labels
  int written_ = 0;
};

int classify_texts(const ClassifyCommand& command, const Model& model,
                   const std::vector<InputText>& texts) {
  require_sequence_classifier(model, "classify");
  if (command.pair) describe_pairs_without_token_types(model);
  const ScoreFunction function = command.function.value_or(
      default_score_function(model.problem_type, int(model.labels.size())));
  const Truncation truncation = command.truncate ? Truncation::kLongestFirst : Truncation::kNone;
  std::vector<PairedText> inputs;  // parallel to encoded.items
  const auto encoded = encode_each<Encoding>(texts, [&](const InputText& text) {
    PairedText input = paired_text(text, command.pair);
    ClassifierInput classifier_input;
    try {
      classifier_input = encode_for_classifier(model, input.text, input.pair, truncation);
    } catch (const Error& e) {
      text.fail(e.what());
    }
    warn_truncated(text, classifier_input.dropped_tokens);
    inputs.push_back(std::move(input));
    return std::move(classifier_input.encoding);
  });
  ResultWriter writer(command, inputs.size() > 1 || texts.front().line > 0);
  Progress progress("classify", "texts", command.common.quiet);
  std::int64_t tokens_done = 0;
  classifier_logits(model, encoded.items, command.batch_tokens,
                    [&](std::size_t i, std::span<const float> logits) {
                      const std::vector<float> scores = class_scores(logits, function);
                      writer.write(inputs[i], {{"logits", logits}, {"scores", scores}},
                                   ranked_labels(scores, model.labels, command.top_k));
                      tokens_done += std::int64_t(encoded.items[i].ids.size());
                      progress.update(std::int64_t(i) + 1, std::int64_t(inputs.size()),
                                      tokens_done);
                    });
  flush_stdout();
  return encoded.status;
}

// Zero-shot's candidate labels and the hypothesis of each.
struct Candidates {
  std::vector<std::string> labels;
  std::vector<std::string> hypotheses;
};

// Checks the options before the model is loaded: zero-shot's with --labels, or none of them.
std::optional<Candidates> zero_shot_candidates(const ClassifyCommand& command) {
  if (!command.candidate_labels) {
    if (command.multi_label || command.hypothesis_template) {
      throw UsageError(std::string(command.multi_label ? "--multi-label" : "--template") +
                       ": only for zero-shot classification, with --labels");
    }
    return std::nullopt;
  }
  if (command.function) throw UsageError("--function: not with --labels, scored as zero-shot");
  if (command.pair) throw UsageError("--pair: not with --labels, whose hypotheses are the pairs");
  Candidates candidates;
  try {
    candidates.labels = split_candidate_labels(*command.candidate_labels, "--labels");
    const std::string hypothesis_template =
        command.hypothesis_template.value_or(std::string(kDefaultHypothesisTemplate));
    for (const std::string& label : candidates.labels) {
      candidates.hypotheses.push_back(hypothesis_for(hypothesis_template, label, "--template"));
    }
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  return candidates;
}

// Zero-shot: each text against a hypothesis per candidate label, the pairs of one text run as
// one packed batch.
int classify_zero_shot(const ClassifyCommand& command, const Model& model,
                       const std::vector<InputText>& texts, const Candidates& candidates) {
  const std::vector<std::string>& labels = candidates.labels;
  const std::vector<std::string>& hypotheses = candidates.hypotheses;
  require_sequence_classifier(model, "classify --labels");
  const int entailment_id = entailment_label_id(model.labels);
  if (entailment_id < 0 || model.labels.size() < 2) {
    throw UsageError(model.dir.string() + ": zero-shot classification needs an NLI model, with " +
                     "a label starting with 'entail' in config.json's id2label; its labels are " +
                     json_text(nlohmann::json(model.labels)));
  }
  const int nli_labels = int(model.labels.size());
  const Truncation truncation = command.truncate ? Truncation::kOnlyFirst : Truncation::kNone;
  ResultWriter writer(command, texts.size() > 1 || texts.front().line > 0);
  Progress progress("classify", "texts", command.common.quiet);
  std::int64_t tokens_done = 0;
  std::size_t done = 0;
  return for_each_text(texts, [&](const InputText& source) {
    PairedText input = paired_text(source, std::nullopt);
    if (input.pair) source.fail("a TAB-separated pair: zero-shot takes one text per line");
    std::vector<Encoding> pairs;
    int dropped_tokens = 0;
    for (const std::string& hypothesis : hypotheses) {
      try {
        ClassifierInput pair = encode_for_classifier(model, input.text, hypothesis, truncation);
        dropped_tokens = std::max(dropped_tokens, pair.dropped_tokens);
        pairs.push_back(std::move(pair.encoding));
      } catch (const Error& e) {
        source.fail("with the hypothesis '" + hypothesis + "': " + e.what());
      }
      tokens_done += std::int64_t(pairs.back().ids.size());
    }
    warn_truncated(source, dropped_tokens);  // the most of any hypothesis
    std::vector<float> logits;               // (candidates, nli_labels)
    classifier_logits(model, pairs, command.batch_tokens,
                      [&](std::size_t, std::span<const float> row) {
                        logits.insert(logits.end(), row.begin(), row.end());
                      });
    const std::vector<float> scores =
        zero_shot_scores(logits, nli_labels, entailment_id, command.multi_label);
    std::vector<LabelScore> ranked;
    for (int c : zero_shot_order(scores)) ranked.push_back({labels[c], scores[c]});
    if (command.top_k > 0 && command.top_k < int(ranked.size())) ranked.resize(command.top_k);
    nlohmann::ordered_json logit_rows = nlohmann::ordered_json::array();
    for (std::size_t c = 0; c < labels.size(); ++c) {
      logit_rows.push_back(std::vector<float>(logits.begin() + long(c) * nli_labels,
                                              logits.begin() + long(c + 1) * nli_labels));
    }
    writer.write(input, {{"hypotheses", hypotheses}, {"logits", logit_rows}, {"scores", scores}},
                 ranked);
    progress.update(std::int64_t(++done), std::int64_t(texts.size()), tokens_done);
  });
}

}  // namespace

void ClassifyCommand::add_options(CLI::App& app) {
  add_common_options(app, common, nullptr);
  add_output_options(app, common,
                     "one JSON object per text: {text, text_pair, logits, scores, labels}");
  add_text_options(app, input, "texts to classify");
  app.add_option("--pair", pair, "the second text of every input (NLI, rerankers)");
  app.add_option("-k,--top-k", top_k, "the best k labels (default: all)")
      ->check(whole_number<int>())
      ->check(non_negative());
  const std::map<std::string, ScoreFunction> score_functions = {
      {"softmax", ScoreFunction::kSoftmax},
      {"sigmoid", ScoreFunction::kSigmoid},
      {"none", ScoreFunction::kNone}};
  app.add_option_function<std::string>(
         "--function",
         [this, score_functions](const std::string& name) { function = score_functions.at(name); },
         "softmax, sigmoid or none (default: as Hugging Face's pipeline, from the model)")
      ->check(CLI::IsMember({"softmax", "sigmoid", "none"}))
      ->type_name("NAME");
  app.add_flag("--truncate", truncate,
               "cut an input longer than the model's context (a pair: its longer text)");
  add_batch_tokens_option(app, batch_tokens);
  app.add_option("--labels", candidate_labels,
                 "zero-shot: candidate labels separated by commas, scored by an NLI model")
      ->type_name("LIST");
  app.add_option("--template", hypothesis_template,
                 "zero-shot: the hypothesis, {} standing for a label "
                 "(default: \"This example is {}.\")");
  app.add_flag("--multi-label", multi_label,
               "zero-shot: score each label on its own (entailment against "
               "contradiction) instead of over all labels");
  add_examples(app, {"attn classify -m distilbert/distilbert-base-uncased-finetuned-sst-2-english "
                     "\"A fine film.\"",
                     "attn classify -m FacebookAI/roberta-large-mnli \"A man sleeps.\" --pair \"A "
                     "person rests.\"",
                     "attn classify -m facebook/bart-large-mnli --labels sports,politics \"The "
                     "match ran late.\""});
}

int ClassifyCommand::run([[maybe_unused]] const CLI::App& app) {
  const ClassifyCommand& command = *this;
  const std::optional<Candidates> candidates = zero_shot_candidates(command);
  const std::vector<InputText> texts = read_texts(command.input);
  auto model = load_model(command.common.model_dir, command.common.dtype);
  const int status = candidates ? classify_zero_shot(command, *model, texts, *candidates)
                                : classify_texts(command, *model, texts);
  flush_stdout();
  return status;
}

std::unique_ptr<Command> make_classify_command() { return std::make_unique<ClassifyCommand>(); }

}  // namespace attn
