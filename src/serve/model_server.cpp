#include "src/serve/model_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "src/base/error.h"
#include "src/base/unicode.h"
#include "src/serve/server_state.h"
#include "src/tasks/attention_capture.h"
#include "src/tasks/model_info.h"
#include "src/tasks/translate.h"

namespace attn {
namespace {

using namespace serve;
using Clock = std::chrono::steady_clock;

// Connections waiting to be accepted: as many as --connections may take at most, and more.
constexpr int kListenBacklog = 1024;

// The largest attention document /attention writes: past this a request is better served by
// attn attention on the server's own machine.
constexpr double kMaxAttentionBytes = 64 << 20;

}  // namespace

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

void ModelServer::State::route(
    const char* method, const char* path,
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

ModelServer::ModelServer(ServedModel served, ServeOptions options)
    : state_(std::make_unique<State>()) {
  state_->served = std::move(served);
  state_->options = std::move(options);
  State& state = *state_;
  const ServeOptions& settings = state.options;
  httplib::Server& http = state.http;
  http.set_payload_max_length(settings.max_body_bytes);
  // A response goes out in more than one write: without TCP_NODELAY, Nagle's algorithm may hold
  // the last until the client's delayed ACK, tens of milliseconds.
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
  // request by polling every 10 ms: one client's GET /health took 13 ms on a kept-alive
  // connection, 0.3 ms on a new one each time (hey -c 1). So a connection serves one request.
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
