// attn serve's encoder routes: OpenAI's /v1/embeddings and text-embeddings-inference's /embed,
// /predict and /rerank, computed as attn embed, classify and rerank compute them, in batches the
// scheduler packs across requests.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/base/error.h"
#include "src/serve/server_state.h"
#include "src/tasks/classify.h"
#include "src/tasks/embed.h"

namespace attn {
namespace {

using namespace serve;

// TEI's /predict inputs: a text, a pair [text, text], or a list of either. `batch` says whether
// the reply is a list of results (a list given) or one result.
std::vector<std::pair<std::string, std::optional<std::string>>> predict_inputs(const Json& body,
                                                                               bool& batch) {
  if (!body.contains("inputs")) throw HttpError{400, "inputs: is required", "inputs"};
  const Json& value = body["inputs"];
  const auto sequence =
      [](const Json& item,
         const std::string& name) -> std::pair<std::string, std::optional<std::string>> {
    if (item.is_string()) return {text_field(item, name), std::nullopt};
    if (item.is_array() && item.size() == 2 && item[0].is_string() && item[1].is_string()) {
      return {text_field(item[0], name + "[0]"), text_field(item[1], name + "[1]")};
    }
    throw HttpError{400, name + ": must be a text or a pair of texts [text, text]", "inputs"};
  };
  // A list of two texts is a pair, as TEI reads it; a list of anything else is a batch.
  batch = value.is_array() && !(value.size() == 2 && value[0].is_string() && value[1].is_string());
  if (!batch) return {sequence(value, "inputs")};
  if (value.empty()) throw HttpError{400, "inputs: must not be an empty list", "inputs"};
  std::vector<std::pair<std::string, std::optional<std::string>>> inputs;
  for (std::size_t i = 0; i < value.size(); ++i) {
    inputs.push_back(sequence(value[i], "inputs[" + std::to_string(i) + "]"));
  }
  return inputs;
}

}  // namespace

std::vector<std::vector<float>> ModelServer::State::logits(
    const std::vector<std::pair<std::string, std::optional<std::string>>>& inputs, bool truncate,
    const char* field_name) {
  std::vector<Encoding> encodings;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    try {
      encodings.push_back(
          encode_for_classifier(
              model(), inputs[i].first,
              inputs[i].second ? std::optional<std::string_view>(*inputs[i].second) : std::nullopt,
              truncate ? Truncation::kLongestFirst : Truncation::kNone)
              .encoding);
    } catch (const Error& e) {
      throw HttpError{413,
                      std::string(field_name) + "[" + std::to_string(i) + "]: " + e.what() +
                          " (truncate: true cuts it)",
                      field_name};
    }
  }
  const auto ticket = queue_ticket();
  return scheduler->run_batched(classify_task, std::move(encodings));
}

void ModelServer::State::add_classifier_routes() {
  classify_task = [this](std::span<const Encoding> inputs, int batch_tokens,
                         const std::function<void(std::size_t, std::span<const float>)>& on_row) {
    classifier_logits(model(), inputs, batch_tokens, on_row);
  };
  // TEI's: {"inputs", "raw_scores", "truncate"} -> [{"score", "label"}, ...] best first (a list
  // of them for a list of inputs), scored as attn classify scores them.
  route("POST", "/predict", [this](const httplib::Request& request, httplib::Response& response) {
    const Json body = body_object(request);
    refuse_fields(body, {"truncation_direction"});
    bool batch = false;
    const auto inputs = predict_inputs(body, batch);
    const ScoreFunction function =
        field(body, "raw_scores", false)
            ? ScoreFunction::kNone
            : default_score_function(model().problem_type, int(model().labels.size()));
    Json results = Json::array();
    for (const std::vector<float>& row : logits(inputs, field(body, "truncate", false), "inputs")) {
      Json labels = Json::array();
      for (const LabelScore& label : ranked_labels(class_scores(row, function), model().labels)) {
        labels.push_back({{"score", label.score}, {"label", label.label}});
      }
      results.push_back(std::move(labels));
    }
    send_json(response, batch ? results : results[0]);
  });
  // TEI's: {"query", "texts", "raw_scores", "return_text", "truncate"} -> [{"index", "score",
  // "text"?}] best first; the score a cross-encoder's sigmoid unless raw_scores.
  route("POST", "/rerank", [this](const httplib::Request& request, httplib::Response& response) {
    const Json body = body_object(request);
    if (model().labels.size() != 1) {
      throw HttpError{400, model().name() + " has " + std::to_string(model().labels.size()) +
                               " labels; /rerank needs a cross-encoder (one label): use /predict"};
    }
    const std::string query = required_text(body, "query");
    const std::vector<std::string> texts = text_list(body, "texts");
    std::vector<std::pair<std::string, std::optional<std::string>>> inputs;
    for (const std::string& text : texts) inputs.emplace_back(query, text);
    const bool raw = field(body, "raw_scores", false);
    const std::vector<std::vector<float>> rows =
        logits(inputs, field(body, "truncate", false), "texts");
    std::vector<std::pair<std::size_t, float>> ranking;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      ranking.emplace_back(
          i, class_scores(rows[i], raw ? ScoreFunction::kNone : ScoreFunction::kSigmoid)[0]);
    }
    // Best first; tied texts keep their order, as sentence-transformers' sorted() keeps them.
    std::stable_sort(ranking.begin(), ranking.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    Json results = Json::array();
    for (const auto& [index, score] : ranking) {
      Json result = {{"index", index}, {"score", score}};
      if (field(body, "return_text", false)) result["text"] = texts[index];
      results.push_back(std::move(result));
    }
    send_json(response, results);
  });
}

void ModelServer::State::add_embedding_routes() {
  embed_task = [this](std::span<const Encoding> inputs, int batch_tokens,
                      const std::function<void(std::size_t, std::span<const float>)>& on_row) {
    // Normalized per request: /embed's normalize may differ between requests of one batch.
    EmbeddingOptions options = *served.embedding;
    options.normalize = false;
    options.max_batch_tokens = batch_tokens;
    std::vector<EmbeddingInput> texts;
    for (const Encoding& input : inputs) texts.push_back({input.ids, 0});
    embed(model(), texts, options, on_row);
  };
  // The texts' vectors, as attn embed computes them with `options`; truncated to max_seq_length
  // unless `refuse_longer`.
  const auto embed_texts = [this](const std::vector<std::string>& texts,
                                  const EmbeddingOptions& options, bool refuse_longer,
                                  int& tokens) {
    std::vector<Encoding> inputs;
    for (std::size_t i = 0; i < texts.size(); ++i) {
      EmbeddingInput input = encode_for_embedding(model(), texts[i], options);
      if (refuse_longer && input.dropped_tokens > 0) {
        throw HttpError{413,
                        "inputs[" + std::to_string(i) +
                            "]: " + std::to_string(input.ids.size() + input.dropped_tokens) +
                            " tokens, more than the model's " +
                            std::to_string(options.max_seq_length) + " (truncate: true cuts it)",
                        "inputs"};
      }
      tokens += int(input.ids.size());
      inputs.push_back({std::move(input.ids), {}});
    }
    metrics.tokens(tokens, 0);
    const auto ticket = queue_ticket();
    std::vector<std::vector<float>> vectors = scheduler->run_batched(embed_task, std::move(inputs));
    if (options.normalize) {
      for (std::vector<float>& vector : vectors) l2_normalize(vector);
    }
    return vectors;
  };
  // OpenAI's: {"input", "encoding_format"} -> {"data": [{"embedding", "index"}], "usage"}.
  route("POST", "/v1/embeddings",
        [this, embed_texts](const httplib::Request& request, httplib::Response& response) {
          const Json body = body_object(request);
          refuse_fields(body, {"dimensions"});
          const std::string format = field(body, "encoding_format", std::string("float"));
          if (format != "float" && format != "base64") {
            throw HttpError{400, "encoding_format: must be float or base64, got " + format,
                            "encoding_format"};
          }
          int tokens = 0;
          const auto vectors =
              embed_texts(text_list(body, "input"), *served.embedding, false, tokens);
          Json data = Json::array();
          for (std::size_t i = 0; i < vectors.size(); ++i) {
            data.push_back(
                {{"object", "embedding"},
                 {"index", i},
                 {"embedding", format == "base64" ? Json(base64(vectors[i])) : Json(vectors[i])}});
          }
          send_json(response, {{"object", "list"},
                               {"data", data},
                               {"model", model().name()},
                               {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
        });
  // text-embeddings-inference's: {"inputs", "normalize" (default true), "truncate" (default
  // false)} -> [[...], ...].
  route("POST", "/embed",
        [this, embed_texts](const httplib::Request& request, httplib::Response& response) {
          const Json body = body_object(request);
          refuse_fields(body, {"prompt_name", "truncation_direction", "dimensions"});
          EmbeddingOptions options = *served.embedding;
          options.normalize = field(body, "normalize", true);
          int tokens = 0;
          send_json(response, Json(embed_texts(text_list(body, "inputs"), options,
                                               !field(body, "truncate", false), tokens)));
        });
}

}  // namespace attn
