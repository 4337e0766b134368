#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "src/model/model.h"
#include "src/model/sentence_transformers.h"
#include "src/tasks/chat_template.h"
#include "src/tasks/embed.h"

// attn serve: one model behind HTTP routes that OpenAI's and text-embeddings-inference's clients
// speak (README, "Serve"). cpp-httplib runs the connections, a thread each; the model runs on a
// thread of its own, which batches the requests (src/serve/scheduler.h).
namespace attn {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (the one bound is logged)
  // Every route but /health then needs "Authorization: Bearer KEY".
  std::optional<std::string> api_key;
  std::size_t max_body_bytes = std::size_t(1) << 20;  // a larger request is 413
  int timeout_seconds = 30;  // to read a request or write a response: a slow client lets go
  int connection_threads = 8;
  // Requests that may wait for the model, those it runs included; one more is 503 with
  // Retry-After.
  int queue = 16;
  int parallel = 4;         // generation slots whose decode steps share a pass
  int batch_tokens = 1024;  // tokens per packed batch of encoder requests
  // After stop(), generations still running past this many seconds end with what they have.
  int grace_seconds = 20;
  bool log_requests = true;  // an access line per request on stderr
};

// The model and what its routes need besides it, loaded once.
struct ServedModel {
  std::unique_ptr<Model> model;
  std::optional<SentenceTransformersConfig> sentence_transformers;
  // Encoders: how /v1/embeddings embeds (as attn embed does with this folder).
  std::optional<EmbeddingOptions> embedding;
  // Decoders with a chat template (the folder's, or --chat-template-file): /v1/chat/completions.
  std::optional<ChatTemplate> chat_template;
};

// Whether `host` is this machine only: localhost, ::1, 127.x.x.x.
bool is_loopback(const std::string& host);

class ModelServer {
 public:
  ModelServer(ServedModel served, ServeOptions options);
  ~ModelServer();
  ModelServer(const ModelServer&) = delete;
  ModelServer& operator=(const ModelServer&) = delete;

  // Binds (Error if it cannot), logs where, and serves until stop(); returns once the requests in
  // flight are answered.
  void run();
  // Stops accepting connections; run() returns once the requests in flight are answered, their
  // generations cut short after options.grace_seconds. Safe from any thread.
  void stop();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace attn
