#include "src/serve/model_server.h"

#include <httplib.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string_view>
#include <thread>
#include <vector>

#include "src/base/error.h"
#include "src/base/unicode.h"
#include "src/serve/http_json.h"
#include "src/serve/metrics.h"
#include "src/serve/scheduler.h"
#include "src/tasks/attention_capture.h"
#include "src/tasks/chat.h"
#include "src/tasks/classify.h"
#include "src/tasks/generation_settings.h"
#include "src/tasks/model_info.h"
#include "src/tasks/translate.h"

namespace attn {
namespace {

using namespace serve;
using Clock = std::chrono::steady_clock;

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

// OpenAI's finish_reason for a generation's stop_reason.
std::string finish_reason(const std::string& stop_reason) {
  return stop_reason == "length" || stop_reason == "context" ? "length" : "stop";
}

// The generation a completion request asks for: its fields over the model's
// generation_config.json, as attn generate's options go over it. Without max_tokens it runs to
// the end of the text or of the context, as OpenAI's does.
GenerateOptions requested_generation(const Json& body, const Model& model) {
  refuse_fields(body, {"logprobs", "top_logprobs", "logit_bias", "response_format", "suffix",
                       "best_of", "echo", "tool_choice", "parallel_tool_calls", "functions"});
  for (const char* penalty : {"presence_penalty", "frequency_penalty"}) {
    if (field(body, penalty, 0.0) != 0.0) {
      throw HttpError{400, std::string(penalty) + ": not supported by attn serve (0 only)",
                      penalty};
    }
  }
  if (field(body, "n", 1) != 1) throw HttpError{400, "n: attn serve gives one choice", "n"};
  GenerationSettings settings;
  GenerationFlagsGiven& given = settings.given;
  const int context = model.spec().max_positions;
  const char* length =
      body.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  const int max_tokens = field(body, length, context);
  if (max_tokens < 1 || max_tokens > context) {
    throw HttpError{400,
                    std::string(length) + ": must be from 1 to the context, " +
                        std::to_string(context) + ", got " + std::to_string(max_tokens),
                    length};
  }
  settings.options.max_new_tokens = max_tokens;
  given.max_new_tokens = true;
  settings.options.ignore_eos = field(body, "ignore_eos", false);  // llama-server's
  SamplingOptions& sampling = settings.options.sampling;
  const auto number = [&](const char* name, float& value, bool& was_given, float low, float high) {
    if (!body.contains(name) || body[name].is_null()) return;
    value = field(body, name, value);
    if (!(value >= low && value <= high)) {
      throw HttpError{400,
                      std::string(name) + ": must be from " + fmt::format("{}", low) + " to " +
                          fmt::format("{}", high),
                      name};
    }
    was_given = true;
  };
  number("temperature", sampling.temperature, given.temperature, 0, 100);
  number("top_p", sampling.top_p, given.top_p, 0, 1);
  number("min_p", sampling.min_p, given.min_p, 0, 1);
  number("typical_p", sampling.typical_p, given.typical_p, 0, 1);
  number("repetition_penalty", sampling.repetition_penalty, given.repetition_penalty, 0.01f, 100);
  if (body.contains("top_k") && !body["top_k"].is_null()) {
    sampling.top_k = field(body, "top_k", 0);
    if (sampling.top_k < 0) throw HttpError{400, "top_k: must be 0 or more", "top_k"};
    given.top_k = true;
  }
  if (body.contains("seed") && !body["seed"].is_null()) {
    settings.seed = field(body, "seed", std::int64_t(-1));
    given.seed = true;
  }
  if (body.contains("stop") && !body["stop"].is_null()) {
    const Json& stop = body["stop"];
    for (const Json& item : stop.is_array() ? stop : Json::array({stop})) {
      const std::string text = text_field(item, "stop");
      if (text.empty()) throw HttpError{400, "stop: must not be empty", "stop"};
      settings.options.stop.push_back(text);
    }
  }
  return with_generation_config(settings, model.generation);
}

// Connections waiting to be accepted: as many as --connections may take at most, and more.
constexpr int kListenBacklog = 1024;

// The largest attention document /attention writes: past this a request is better served by
// attn attention on the server's own machine.
constexpr double kMaxAttentionBytes = 64 << 20;

}  // namespace

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

struct ModelServer::State {
  ServedModel served;
  ServeOptions options;
  httplib::Server http;
  Metrics metrics;
  // Every computation of the model; made by the constructor, ended before the rest.
  std::unique_ptr<Scheduler> scheduler;
  // The encoder tasks the scheduler batches across requests.
  EncoderTask embed_task, classify_task;

  // A request's place in the queue for the model, until the response is sent: 503 when the
  // queue is full.
  std::shared_ptr<QueueTicket> queue_ticket() {
    return std::make_shared<QueueTicket>(metrics, options.queue);
  }
  // A shutdown's grace: stop() starts `grace`, which ends the generations still running after
  // options.grace_seconds unless run() has returned first (served_out).
  std::mutex grace_mutex;
  std::condition_variable grace_over;
  bool served_out = false;
  std::thread grace;
  void end_grace() {
    {
      const std::lock_guard lock(grace_mutex);
      served_out = true;
    }
    grace_over.notify_all();
    if (grace.joinable()) grace.join();
  }
  ~State() { end_grace(); }

  std::time_t started = std::time(nullptr);
  std::vector<std::string> routes;  // "GET /health", ... for the 404 message

  const Model& model() const { return *served.model; }

  // Registers `handler` for `method` `path`; its HttpError and attn::Error become error responses.
  void route(const char* method, const char* path,
             std::function<void(const httplib::Request&, httplib::Response&)> handler) {
    routes.push_back(std::string(method) + " " + path);
    auto guarded = [handler](const httplib::Request& request, httplib::Response& response) {
      try {
        handler(request, response);
      } catch (const HttpError& error) {
        send_error(response, error);
        if (error.status == 503) response.set_header("Retry-After", "1");
      } catch (const Error& error) {  // bad input, UsageError included
        send_error(response, {400, error.what()});
      } catch (const std::bad_alloc&) {
        send_error(response, {500, "out of memory"});
      } catch (const std::exception&) {
        // Never the details: they may name files of the server.
        send_error(response, {500, "internal error"});
      }
    };
    if (std::strcmp(method, "GET") == 0) {
      http.Get(path, guarded);
    } else {
      http.Post(path, guarded);
    }
  }

  void add_routes();
  void add_embedding_routes();
  void add_classifier_routes();
  void add_decoder_routes();
  // Answers a completion: generates after `prompt` in a generation slot, whole or as server-sent
  // events; `chat` picks OpenAI's chat or text shape.
  void complete(httplib::Response& response, bool chat, const Json& body, std::vector<int> prompt,
                GenerateOptions generation);
  std::atomic<int> next_id = 0;  // completions are numbered across connection threads
  int listening_socket = -1;     // the socket bound, once it is

  // The logits of each input (a text, or a text and its pair), packed into batches.
  std::vector<std::vector<float>> logits(
      const std::vector<std::pair<std::string, std::optional<std::string>>>& inputs, bool truncate,
      const char* field_name);
};

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

void ModelServer::State::add_routes() {
  route("GET", "/health", [](const httplib::Request&, httplib::Response& response) {
    send_json(response, {{"status", "ok"}});
  });
  route("GET", "/info", [this](const httplib::Request&, httplib::Response& response) {
    send_json(response, model_info(model(), served.sentence_transformers));
  });
  route("GET", "/metrics", [this](const httplib::Request&, httplib::Response& response) {
    response.set_content(metrics.text(), "text/plain; version=0.0.4");
  });
  route("GET", "/v1/models", [this](const httplib::Request&, httplib::Response& response) {
    send_json(response, {{"object", "list"},
                         {"data", Json::array({{{"id", model().name()},
                                                {"object", "model"},
                                                {"created", started},
                                                {"owned_by", "attn"}}})}});
  });
  // llama-server's: {"content", "add_special" (default false), "with_pieces"} -> {"tokens"}.
  route("POST", "/tokenize", [this](const httplib::Request& request, httplib::Response& response) {
    const Json body = body_object(request);
    const std::string text = required_text(body, "content");
    const Tokenizer& tokenizer = *model().tokenizer;
    const std::vector<int> ids = field(body, "add_special", false) ? tokenizer.encode(text).ids
                                                                   : tokenizer.encode_plain(text);
    const bool with_pieces = field(body, "with_pieces", false);
    Json tokens = Json::array();
    for (int id : ids) {
      if (with_pieces) {
        tokens.push_back({{"id", id}, {"piece", tokenizer.token_string(id)}});
      } else {
        tokens.push_back(id);
      }
    }
    send_json(response, {{"tokens", tokens}});
  });
  route("POST", "/detokenize",
        [this](const httplib::Request& request, httplib::Response& response) {
          const Json body = body_object(request);
          const std::vector<int> ids = field(body, "tokens", std::vector<int>{});
          const int vocab = model().tokenizer->vocab_size();
          for (int id : ids) {
            if (id < 0 || id >= vocab) {
              throw HttpError{400,
                              "tokens: " + std::to_string(id) + " is outside the vocabulary (" +
                                  std::to_string(vocab) + " ids)",
                              "tokens"};
            }
          }
          send_json(response,
                    {{"content", replace_invalid_utf8(model().tokenizer->decode(ids, false))}});
        });
  // {"text", "pair", "layers", "heads", "precision"} -> the document attn attention --json writes
  // (an encoder-decoder's decoder reads the model's own greedy translation).
  route("POST", "/attention", [this](const httplib::Request& request, httplib::Response& response) {
    const Json body = body_object(request);
    const std::string text = required_text(body, "text");
    std::optional<std::string> pair;
    if (body.contains("pair") && !body["pair"].is_null()) pair = text_field(body["pair"], "pair");
    const bool encoder_decoder = model().kind() == ModelKind::kEncoderDecoder;
    if (pair && (model().spec().causal || encoder_decoder)) {
      throw HttpError{400, "pair: sentence pairs need an encoder such as BERT", "pair"};
    }
    AttentionOptions options;
    options.layers = field(body, "layers", std::string());
    options.heads = field(body, "heads", std::string());
    options.precision = field(body, "precision", options.precision);
    if (options.precision < 1 || options.precision > 9) {
      throw HttpError{400, "precision: must be from 1 to 9", "precision"};
    }
    Encoding encoding = model().tokenizer->encode(text, pair);
    const ArchSpec& spec = model().input_stack().spec();
    const int n = int(encoding.ids.size());
    if (n == 0) throw HttpError{400, "text: the text gives no tokens", "text"};
    if (n > spec.max_positions) {
      throw HttpError{400,
                      "text: " + std::to_string(n) + " tokens, more than the context of " +
                          std::to_string(spec.max_positions),
                      "text"};
    }
    AttentionSelection selection;
    try {
      selection = select_attention(spec, options);
    } catch (const Error& e) {
      throw HttpError{400, e.what()};
    }
    if (estimated_attention_bytes(selection, n, spec.causal, options.precision) >
        kMaxAttentionBytes) {
      throw HttpError{413, "the attention of " + std::to_string(n) + " tokens over " +
                               std::to_string(selection.head_count()) +
                               " heads is larger than the server writes (64 MiB): choose layers "
                               "and heads, or run attn attention"};
    }
    const auto ticket = queue_ticket();
    StringSink document;
    scheduler->run([&] {
      std::vector<int> decoder_ids;
      if (encoder_decoder) {
        decoder_ids = greedy_decoder_input(model(), encode_source(model(), encoding.ids),
                                           kMaxOwnTranslationTokens);
      }
      const AttentionDocumentInfo info =
          attention_document_info(model(), text, pair, std::move(encoding), std::move(decoder_ids));
      AttentionWriter writer(document, AttentionFormat::kJson, options.precision, info);
      write_attention_heads(model(), info, options, writer);
      writer.finish();
    });
    response.set_content(document.text, "application/json");
  });
  if (served.embedding) add_embedding_routes();
  if (model().kind() == ModelKind::kDecoder) add_decoder_routes();
  if (const ClassifierHead* head = model().transformer->classifier();
      head && head->pooling != ClassifierHead::Pooling::kEveryToken) {
    add_classifier_routes();
  }
}

void ModelServer::State::add_classifier_routes() {
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

void ModelServer::State::complete(httplib::Response& response, bool chat, const Json& body,
                                  std::vector<int> prompt, GenerateOptions generation) {
  const bool stream = field(body, "stream", false);
  // OpenAI's stream_options.include_usage: a last chunk with the usage and no choices.
  const bool stream_usage = body.contains("stream_options") && body["stream_options"].is_object() &&
                            field(body["stream_options"], "include_usage", false);
  const std::string id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(++next_id);
  const std::time_t created = std::time(nullptr);
  const Json head = {
      {"id", id},
      {"object", chat ? (stream ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
      {"created", created},
      {"model", model().name()}};
  const int prompt_tokens = int(prompt.size());
  const auto usage = [prompt_tokens](const GenerateResult& result) {
    const int completion = int(result.generated_ids.size());
    return Json{{"prompt_tokens", prompt_tokens},
                {"completion_tokens", completion},
                {"total_tokens", prompt_tokens + completion}};
  };
  // Its place in the queue is taken first, so that a full queue is a 503, not a broken stream.
  std::shared_ptr<QueueTicket> ticket = queue_ticket();
  // llama-server's cache_prompt: false computes the whole prompt, whatever the slot holds.
  std::shared_ptr<GenerationRequest> request = scheduler->generate(
      std::move(prompt), std::move(generation), {}, field(body, "cache_prompt", true));
  if (!stream) {
    const GenerateResult result = request->result();
    metrics.tokens(prompt_tokens, long(result.generated_ids.size()));
    Json choice = {{"index", 0}};
    if (chat) {
      choice["message"] = {{"role", "assistant"}, {"content", result.text}};
    } else {
      choice["text"] = result.text;
      choice["logprobs"] = nullptr;
    }
    choice["finish_reason"] = finish_reason(result.stop_reason);
    Json body = head;
    body["choices"] = Json::array({choice});
    body["usage"] = usage(result);
    send_json(response, body);
    return;
  }
  // Server-sent events: a chunk per piece of text as it is decided, the finish_reason in the
  // last, then "data: [DONE]". A client that goes away ends the generation at its next step; so
  // does a response dropped before its stream began (the provider's copy of `cancel` goes).
  const auto cancel = std::shared_ptr<void>(nullptr, [request](void*) { request->cancel(); });
  response.set_chunked_content_provider(
      "text/event-stream", [this, chat, head, usage, request, stream_usage, ticket, cancel,
                            prompt_tokens](std::size_t, httplib::DataSink& sink) {
        bool gone = false;
        // Every chunk is `head` and its choices: head's text is made once, not at every token.
        std::string chunk_head = "data: " + json_text(head);
        chunk_head.back() = ',';  // its closing brace: the choices follow
        const auto send = [&](const Json& choice) {
          const std::string event = chunk_head + "\"choices\":[" + json_text(choice) + "]}\n\n";
          if (!gone && !sink.write(event.data(), event.size())) gone = true;
        };
        if (chat) {
          send({{"index", 0},
                {"delta", {{"role", "assistant"}, {"content", ""}}},
                {"finish_reason", nullptr}});
        }
        std::string text;
        while (!gone && request->next_text(text)) {
          send(chat ? Json{{"index", 0}, {"delta", {{"content", text}}}, {"finish_reason", nullptr}}
                    : Json{{"index", 0},
                           {"text", text},
                           {"logprobs", nullptr},
                           {"finish_reason", nullptr}});
          text.clear();
        }
        if (gone) request->cancel();
        GenerateResult result;
        try {
          result = request->result();
        } catch (const std::exception& e) {
          // The status line has gone out: the error goes in the stream, as llama-server's does,
          // with the details of bad input only, as the routes' errors.
          const bool bad_input = dynamic_cast<const Error*>(&e) != nullptr;
          const std::string event =
              "data: " +
              json_text(
                  Json{{"error",
                        {{"message", bad_input ? e.what() : "internal error"}, {"code", 500}}}}) +
              "\n\n";
          sink.write(event.data(), event.size());
          sink.done();
          return true;
        }
        metrics.tokens(prompt_tokens, long(result.generated_ids.size()));
        Json last = {{"index", 0}, {"finish_reason", finish_reason(result.stop_reason)}};
        if (chat) {
          last["delta"] = Json::object();
        } else {
          last["text"] = "";
          last["logprobs"] = nullptr;
        }
        send(last);
        std::string tail;
        if (stream_usage) {
          Json final_usage = head;
          final_usage["choices"] = Json::array();
          final_usage["usage"] = usage(result);
          tail = "data: " + json_text(final_usage) + "\n\n";
        }
        tail += "data: [DONE]\n\n";
        if (!gone) sink.write(tail.data(), tail.size());
        sink.done();
        return true;
      });
}

void ModelServer::State::add_decoder_routes() {
  // OpenAI's completions: {"prompt": a string, ...} -> choices[0].text, as attn generate
  // generates after the prompt (its special tokens added as the tokenizer adds them).
  route("POST", "/v1/completions",
        [this](const httplib::Request& request, httplib::Response& response) {
          const Json body = body_object(request);
          if (!body.contains("prompt")) throw HttpError{400, "prompt: is required", "prompt"};
          const Json& prompt_field = body["prompt"];
          const Json& one =
              prompt_field.is_array() && prompt_field.size() == 1 ? prompt_field[0] : prompt_field;
          if (!one.is_string()) {
            throw HttpError{400, "prompt: must be a string (token ids and lists are not supported)",
                            "prompt"};
          }
          const std::string prompt = text_field(one, "prompt");
          const GenerateOptions options = requested_generation(body, model());
          std::vector<int> ids = model().tokenizer->encode(prompt).ids;
          if (ids.empty()) throw HttpError{400, "prompt: the text gives no tokens", "prompt"};
          if (int(ids.size()) >= generation_context(model().spec(), options)) {
            throw HttpError{400,
                            "prompt: " + std::to_string(ids.size()) +
                                " tokens, which leave no room in the context of " +
                                std::to_string(model().spec().max_positions),
                            "prompt"};
          }
          complete(response, false, body, std::move(ids), options);
        });
  if (!served.chat_template) return;
  // OpenAI's chat completions: {"messages", ...} -> choices[0].message, the reply attn chat
  // gives to the same conversation (its chat template, the end-of-turn tokens).
  route("POST", "/v1/chat/completions",
        [this](const httplib::Request& request, httplib::Response& response) {
          const Json body = body_object(request);
          if (!body.contains("messages")) {
            throw HttpError{400, "messages: is required", "messages"};
          }
          ChatOptions options;
          options.generation = with_end_of_turn(model(), requested_generation(body, model()));
          if (body.contains("tools") && !body["tools"].is_null()) options.tools = body["tools"];
          Conversation conversation(model(), *served.chat_template, options);
          try {
            conversation.set_messages(body["messages"], "messages");
          } catch (const Error& e) {
            throw HttpError{400, e.what(), "messages"};
          }
          // What attn chat's reply computes: the rendered conversation, then the reply after it.
          std::vector<int> ids = conversation.prompt_ids();
          const int context = generation_context(model().spec(), options.generation);
          if (int(ids.size()) >= context) {
            throw HttpError{400,
                            "messages: the conversation is " + std::to_string(ids.size()) +
                                " tokens, which leave no room in the context of " +
                                std::to_string(context),
                            "messages"};
          }
          complete(response, true, body, std::move(ids), options.generation);
        });
}

ModelServer::ModelServer(ServedModel served, ServeOptions options)
    : state_(std::make_unique<State>()) {
  state_->served = std::move(served);
  state_->options = std::move(options);
  State& state = *state_;
  const ServeOptions& settings = state.options;
  httplib::Server& http = state.http;
  http.set_payload_max_length(settings.max_body_bytes);
  // A response goes out in more than one write: without TCP_NODELAY, Nagle's algorithm holds the
  // last until the client's delayed ACK, about 27 ms a request on keep-alive connections.
  http.set_tcp_nodelay(true);
  // cpp-httplib's default sets SO_REUSEPORT, with which a second server on the same port binds
  // without an error and takes a share of its connections. SO_REUSEADDR only: a port in use is
  // refused, and one in TIME_WAIT after a restart is not. The socket is kept for run().
  http.set_socket_options([&state](socket_t sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    state.listening_socket = sock;
  });
  // Debian's cpp-httplib (0.11.4, a shared library) waits for a kept-alive connection's next
  // request by polling every 10 ms: 9-13 ms before each request is read, against 1.8 ms for a new
  // connection (hey, 8 clients, GET /health). So a connection serves one request.
  http.set_keep_alive_max_count(1);
  http.set_read_timeout(settings.timeout_seconds, 0);
  http.set_write_timeout(settings.timeout_seconds, 0);
  const int threads = settings.connection_threads;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(std::size_t(threads)); };

  // Before routing: the request's start (for the access line) and its key.
  static thread_local Clock::time_point request_start;
  http.set_pre_routing_handler(
      [&state](const httplib::Request& request, httplib::Response& response) {
        request_start = Clock::now();
        const std::optional<std::string>& key = state.options.api_key;
        if (!key || request.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
        const std::string given = request.get_header_value("Authorization");
        if (given.starts_with("Bearer ") && same_key(std::string_view(given).substr(7), *key)) {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        send_error(response, {401, given.empty() ? "no API key: send Authorization: Bearer KEY"
                                                 : "the API key is not this server's"});
        return httplib::Server::HandlerResponse::Handled;
      });
  // Errors httplib decides (an unknown route, a body too large), in the same shape.
  http.set_error_handler([&state](const httplib::Request& request, httplib::Response& response) {
    if (!response.body.empty()) return;
    if (response.status == 404) {
      std::string routes;
      for (const std::string& route : state.routes) routes += (routes.empty() ? "" : ", ") + route;
      const Model& model = state.model();
      send_error(response,
                 {404, request.method + " " + request.path + ": not a route of this server; " +
                           model.name() + " (" +
                           (model.architecture.empty() ? model.model_type : model.architecture) +
                           ") is served at " + routes});
    } else if (response.status == 413) {
      send_error(response, {413, "the body is larger than the server's limit of " +
                                     std::to_string(state.options.max_body_bytes) + " bytes"});
    } else {
      send_error(response, {response.status, "the request could not be served"});
    }
  });
  // After each request: its metrics, and its access line unless -q.
  http.set_logger([&state](const httplib::Request& request, const httplib::Response& response) {
    const double seconds = std::chrono::duration<double>(Clock::now() - request_start).count();
    const std::string route = request.method + " " + request.path;
    const bool known =
        std::find(state.routes.begin(), state.routes.end(), route) != state.routes.end();
    // Unknown paths are counted together: a scanner must not grow the metrics without bound.
    state.metrics.request(known ? request.path : "other", response.status, seconds);
    if (state.options.log_requests) {
      spdlog::info("{} {} {} {:.1f} ms", request.method, request.path, response.status,
                   seconds * 1000);
    }
  });
  state.embed_task = [&state](
                         std::span<const Encoding> inputs, int batch_tokens,
                         const std::function<void(std::size_t, std::span<const float>)>& on_row) {
    // Normalized per request: /embed's normalize may differ between requests of one batch.
    EmbeddingOptions options = *state.served.embedding;
    options.normalize = false;
    options.max_batch_tokens = batch_tokens;
    std::vector<EmbeddingInput> texts;
    for (const Encoding& input : inputs) texts.push_back({input.ids, 0});
    embed(state.model(), texts, options, on_row);
  };
  state.classify_task =
      [&state](std::span<const Encoding> inputs, int batch_tokens,
               const std::function<void(std::size_t, std::span<const float>)>& on_row) {
        classifier_logits(state.model(), inputs, batch_tokens, on_row);
      };
  state.scheduler = std::make_unique<Scheduler>(
      state.model(),
      SchedulerOptions{.parallel = settings.parallel, .batch_tokens = settings.batch_tokens},
      state.metrics);
  state.add_routes();
}

ModelServer::~ModelServer() = default;

void ModelServer::run() {
  State& state = *state_;
  const ServeOptions& options = state.options;
  int port = options.port;
  if (port == 0) {
    port = state.http.bind_to_any_port(options.host);
    if (port < 0) throw Error("--host " + options.host + ": cannot listen there");
  } else if (!state.http.bind_to_port(options.host, port)) {
    throw Error("--host " + options.host + " --port " + std::to_string(port) +
                ": cannot listen there (in use, or not an address of this machine)");
  }
  // cpp-httplib listens with a backlog of 5 connections: 8 clients connecting at once overflow
  // it, and a dropped connection is retried by its client a second later (8 clients of
  // tiny-sbert-brown's /embed: 250 requests/s, against 1,100 without a drop). Linux takes a new
  // backlog from a second listen().
  if (state.listening_socket >= 0) ::listen(state.listening_socket, kListenBacklog);
  // Said even with -q: with --port 0 it is the only way to learn the port.
  std::fprintf(stderr, "attn serve: listening on http://%s:%d (%s%s)\n", options.host.c_str(), port,
               state.model().name().c_str(), options.api_key ? ", API key required" : "");
  if (!is_loopback(options.host) && !options.api_key) {
    spdlog::warn("--host {}: no API key; anyone who reaches this address may use the model",
                 options.host);
  }
  state.http.listen_after_bind();
  state.end_grace();
}

void ModelServer::stop() {
  State& state = *state_;
  state.http.stop();
  const std::lock_guard lock(state.grace_mutex);
  if (state.grace.joinable() || state.served_out) return;
  state.grace = std::thread([&state] {
    std::unique_lock lock(state.grace_mutex);
    if (!state.grace_over.wait_for(lock, std::chrono::seconds(state.options.grace_seconds),
                                   [&] { return state.served_out; })) {
      spdlog::warn("stopping: generations still running after {} s end with what they have",
                   state.options.grace_seconds);
      state.scheduler->interrupt_all();
    }
  });
}

}  // namespace attn
