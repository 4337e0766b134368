#pragma once

// What attn serve's routes share (src/serve/model_server.cpp, encoder_routes.cpp,
// generation_routes.cpp): the model, the options, the HTTP server, the metrics and the scheduler.

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <ctime>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "src/serve/http_json.h"
#include "src/serve/metrics.h"
#include "src/serve/model_server.h"
#include "src/serve/scheduler.h"

namespace attn {

struct ModelServer::State {
  using Json = serve::Json;
  using EncoderTask = serve::EncoderTask;
  using GenerationRequest = serve::GenerationRequest;
  using Metrics = serve::Metrics;
  using QueueTicket = serve::QueueTicket;
  using Scheduler = serve::Scheduler;

  ServedModel served;
  ServeOptions options;
  httplib::Server http;
  Metrics metrics;
  // Every computation of the model; made by the constructor, ended before the rest.
  std::unique_ptr<Scheduler> scheduler;
  // The encoder tasks the scheduler batches across requests (set with their routes).
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
             std::function<void(const httplib::Request&, httplib::Response&)> handler);

  // The routes every model has (model_server.cpp), then those of its kind.
  void add_routes();
  void add_embedding_routes();   // encoder_routes.cpp
  void add_classifier_routes();  // encoder_routes.cpp
  void add_decoder_routes();     // generation_routes.cpp
  // Answers `http_request`, a completion: generates after `prompt` in a generation slot, whole
  // or as server-sent events; `chat` picks OpenAI's chat or text shape.
  void complete(const httplib::Request& http_request, httplib::Response& response, bool chat,
                const Json& body, std::vector<int> prompt, GenerateOptions generation);
  std::atomic<int> next_id = 0;  // completions are numbered across connection threads
  int listening_socket = -1;     // the socket bound, once it is

  // The logits of each input (a text, or a text and its pair), packed into batches.
  std::vector<std::vector<float>> logits(
      const std::vector<std::pair<std::string, std::optional<std::string>>>& inputs, bool truncate,
      const char* field_name);
};

}  // namespace attn
