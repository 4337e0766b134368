// attn rerank: a cross-encoder's relevance score for one query against each of several passages,
// best first, as sentence-transformers' CrossEncoder.rank reports them: each passage paired as
// (query, passage), the raw logit as the score (sigmoid of it with --activation), sorted by
// score with ties in input order, corpus_id the passage's place in the input.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "src/base/error.h"
#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/cli/progress.h"
#include "src/io/json_util.h"
#include "src/io/output_file.h"
#include "src/tasks/classify.h"

namespace attn {
namespace {

// attn rerank: a cross-encoder's score for one query against each passage, best first, as
// sentence-transformers' CrossEncoder.rank reports them.
struct RerankCommand final : Command {
  RerankCommand()
      : Command("rerank", "passages sorted by a cross-encoder's relevance score for a query") {}
  void add_options(CLI::App& app) override;
  int run(const CLI::App& app) override;

  std::string query;
  int top_k = 0;            // -k: the best k passages; 0: all
  bool activation = false;  // --activation: the sigmoid of each logit instead of the logit
  bool truncate = false;    // cut a pair longer than the model's context (its longer text)
  int batch_tokens = 1024;  // tokens per packed batch
};

// The activation sentence-transformers applies by default to this folder's scores, as
// config.json names it: "sentence_transformers": {"activation_fn": ...} (version 4 on), or
// "sbert_ce_default_activation_function" (before). The ms-marco cross-encoders name
// torch.nn.modules.linear.Identity; empty when the folder names none.
std::string configured_activation(const Model& model) {
  const nlohmann::json config = read_json_file(model.dir / "config.json");
  const nlohmann::json& settings = config.value("sentence_transformers", nlohmann::json());
  if (settings.is_object() && settings.value("activation_fn", nlohmann::json()).is_string()) {
    return settings["activation_fn"].get<std::string>();
  }
  const nlohmann::json& legacy =
      config.value("sbert_ce_default_activation_function", nlohmann::json());
  return legacy.is_string() ? legacy.get<std::string>() : std::string();
}

// A reranker gives one score per pair: a sequence classifier with one label.
void require_cross_encoder(const Model& model, const RerankCommand& command) {
  require_sequence_classifier(model, "rerank");
  if (model.labels.size() != 1) {
    throw UsageError(model.dir.string() + ": rerank needs a cross-encoder, a classifier with one " +
                     "label (its score); this one has " + std::to_string(model.labels.size()) +
                     " labels " + json_text(nlohmann::json(model.labels)) +
                     " (try attn classify --pair)");
  }
  const std::string activation = configured_activation(model);
  if (!command.activation && activation.ends_with("Sigmoid")) {
    spdlog::warn(
        "{}: config.json names {} as the cross-encoder's activation, which sentence-transformers "
        "applies by default; these scores are raw logits (--activation: its sigmoid)",
        model.name(), activation);
  }
}

// The passages, encoded as (query, passage) pairs, and each one's place among the passages given
// (`corpus_ids`, parallel to the encodings; blank lines are not passages).
EncodedTexts<Encoding> encode_passages(const RerankCommand& command, const Model& model,
                                       const std::vector<InputText>& passages,
                                       std::vector<int>& corpus_ids) {
  const Truncation truncation = command.truncate ? Truncation::kLongestFirst : Truncation::kNone;
  int corpus_id = 0;
  return encode_each<Encoding>(passages, [&](const InputText& source) {
    const int id = corpus_id++;
    ClassifierInput input;
    try {
      input = encode_for_classifier(model, command.query, source.text, truncation);
    } catch (const Error& e) {
      source.fail("the passage with the query " + std::string(e.what()));
    }
    warn_truncated(source, input.dropped_tokens);
    corpus_ids.push_back(id);
    return std::move(input.encoding);
  });
}

// A passage's place in the ranking.
struct Ranked {
  std::size_t passage;  // index into the encoded passages
  float score;
};

void write_ranking(const RerankCommand& command, const EncodedTexts<Encoding>& passages,
                   const std::vector<int>& corpus_ids, const std::vector<Ranked>& ranking) {
  if (!command.common.json) {
    std::string out;
    for (std::size_t rank = 0; rank < ranking.size(); ++rank) {
      out += fmt::format("{}\t{:.4f}\t{}\n", rank + 1, ranking[rank].score,
                         passages.sources[ranking[rank].passage]->text);
    }
    write_stdout(out);
    return;
  }
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const Ranked& ranked : ranking) {
    const InputText& source = *passages.sources[ranked.passage];
    nlohmann::ordered_json result = {{"corpus_id", corpus_ids[ranked.passage]},
                                     {"score", ranked.score}};
    result.update(text_json(source));
    results.push_back(std::move(result));
  }
  write_stdout(json_text(nlohmann::ordered_json{{"query", command.query}, {"results", results}}) +
               "\n");
}

}  // namespace

void RerankCommand::add_options(CLI::App& app) {
  add_common_options(app, common, nullptr);
  add_output_options(app, common,
                     "one JSON object: {query, results: [{corpus_id, score, text}, ...]}");
  add_text_options(app, input, "passages to rank");
  app.add_option("--query", query, "the query every passage is scored against")->required();
  app.add_option("-k,--top-k", top_k, "the best k passages (default: all)")
      ->check(whole_number<int>())
      ->check(non_negative());
  app.add_flag("--activation", activation,
               "score with the sigmoid of the logit (default: the raw logit)");
  app.add_flag("--truncate", truncate,
               "cut a pair longer than the model's context (its longer text)");
  add_batch_tokens_option(app, batch_tokens);
  add_examples(app, {"attn rerank -m cross-encoder/ms-marco-MiniLM-L-6-v2 --query \"jury verdict\" "
                     "-f passages.txt",
                     "attn rerank -m DIR --query \"Where is Paris?\" \"Paris is in France.\" "
                     "\"Rome is in Italy.\" --json"});
}

int RerankCommand::run([[maybe_unused]] const CLI::App& app) {
  const RerankCommand& command = *this;
  require_utf8(command.query, "--query");
  const std::vector<InputText> passages = read_texts(command.input);
  auto model = load_model(command.common.model_dir, command.common.dtype);
  require_cross_encoder(*model, command);
  std::vector<int> corpus_ids;
  const auto encoded = encode_passages(command, *model, passages, corpus_ids);
  if (encoded.items.empty()) return encoded.status;

  std::vector<float> scores(encoded.items.size());  // (passages)
  Progress progress("rerank", "passages", command.common.quiet);
  std::int64_t tokens_done = 0;
  classifier_logits(
      *model, encoded.items, command.batch_tokens,
      [&](std::size_t i, std::span<const float> logits) {
        scores[i] = class_scores(
            logits, command.activation ? ScoreFunction::kSigmoid : ScoreFunction::kNone)[0];
        tokens_done += std::int64_t(encoded.items[i].ids.size());
        progress.update(std::int64_t(i) + 1, std::int64_t(scores.size()), tokens_done);
      });

  // Best first; Python's sorted(reverse=True) keeps tied passages in input order, as this does.
  std::vector<Ranked> ranking;
  for (std::size_t i = 0; i < scores.size(); ++i) ranking.push_back({i, scores[i]});
  std::stable_sort(ranking.begin(), ranking.end(),
                   [](const Ranked& a, const Ranked& b) { return a.score > b.score; });
  if (command.top_k > 0 && command.top_k < int(ranking.size())) ranking.resize(command.top_k);
  write_ranking(command, encoded, corpus_ids, ranking);
  flush_stdout();
  return encoded.status;
}

std::unique_ptr<Command> make_rerank_command() { return std::make_unique<RerankCommand>(); }

}  // namespace attn
