// attn serve: the model as an HTTP service (src/serve/model_server.h) until SIGTERM or Ctrl-C,
// which stop it accepting and let the requests in flight finish.
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <thread>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/serve/model_server.h"

namespace attn {
namespace {

// API keys longer than this are a file given by mistake, not a key.
constexpr std::size_t kMaxKeyBytes = 4096;

struct ServeCommand final : Command {
  ServeCommand()
      : Command("serve",
                "serve the model over HTTP: OpenAI's and text-embeddings-inference's routes") {}
  void add_options(CLI::App& app) override;
  int run(const CLI::App& app) override;

  ServeOptions options;
  ChatFormatOptions chat_format;  // --chat-template-file, --chat-template-name
  std::optional<std::string> api_key;
  std::optional<std::filesystem::path> api_key_file;
  bool without_key = false;  // --public-without-key
};

void ServeCommand::add_options(CLI::App& app) {
  add_common_options(app, common, "tiny-bert-brown");
  app.add_option("--host", options.host,
                 "the address to listen on (default: 127.0.0.1, this machine only; another needs "
                 "an API key)");
  app.add_option("--port", options.port, "the port (default: 8080; 0: any free one, logged)")
      ->check(whole_number<int>())
      ->check(number_check("from 0 to 65535", [](double v) { return v >= 0 && v <= 65535; }));
  CLI::Option* key = app.add_option("--api-key", api_key,
                                    "the key every request but /health sends as "
                                    "'Authorization: Bearer KEY' (default: $ATTN_API_KEY)");
  app.add_option("--api-key-file", api_key_file, "the key, the file's first line")
      ->type_name("FILE")
      ->excludes(key);
  app.add_flag("--public-without-key", without_key,
               "listen on an address other than this machine's without a key: anyone who "
               "reaches it may use the model");
  app.add_option("--max-body", options.max_body_bytes,
                 "the largest request body in bytes; a larger one is 413 (default: 1 MiB)")
      ->check(whole_number<std::int64_t>())
      ->check(positive());
  app.add_option("--timeout", options.timeout_seconds,
                 "seconds to read a request or write a response before letting go (default: "
                 "30)")
      ->check(whole_number<int>())
      ->check(positive());
  app.add_option("--chat-template-file", chat_format.choice.file,
                 "a Jinja2 chat template for /v1/chat/completions instead of the folder's")
      ->type_name("FILE");
  app.add_option("--chat-template-name", chat_format.choice.name,
                 "which of the folder's named chat templates (default: 'default')");
  app.add_option("--queue", options.queue,
                 "requests that may wait for the model, those it runs included; more get 503 "
                 "with Retry-After (default: 16)")
      ->check(whole_number<int>())
      ->check(positive())
      ->check(at_most(4096));
  app.add_option("--parallel", options.parallel,
                 "generation slots: the requests whose tokens are decoded together, a row each "
                 "of one pass (default: 4)")
      ->check(whole_number<int>())
      ->check(positive())
      ->check(at_most(64));
  add_batch_tokens_option(app, options.batch_tokens);
  app.add_option("--grace", options.grace_seconds,
                 "on SIGTERM or SIGINT, seconds that running generations may go on before they "
                 "end with what they have (default: 20)")
      ->check(whole_number<int>())
      ->check(number_check("0 or more", [](double v) { return v >= 0; }));
  app.add_option("--connections", options.connection_threads,
                 "connections served at once, a thread each (default: 8)")
      ->check(whole_number<int>())
      ->check(positive())
      ->check(at_most(1024));
  add_examples(app, {"attn serve -m sentence-transformers/all-MiniLM-L6-v2 --port 8080",
                     "curl -s localhost:8080/v1/embeddings -d '{\"input\": \"The jury met.\"}'",
                     "ATTN_API_KEY=secret attn serve -m DIR --host 0.0.0.0"});
}

// The model and what its routes need: an encoder is also an embedder, as attn embed loads it.
ServedModel load_served_model(const CommonOptions& common, const ChatTemplateChoice& chat) {
  ServedModel served;
  served.sentence_transformers = read_sentence_transformers_config(common.model_dir);
  served.model =
      load_model(served.sentence_transformers ? served.sentence_transformers->transformer_dir
                                              : common.model_dir,
                 common.dtype);
  if (served.model->kind() == ModelKind::kEncoder) {
    served.embedding = embedding_options(*served.model, served.sentence_transformers);
    // What sentence-transformers does with a plain Hugging Face model.
    if (!served.sentence_transformers) served.embedding->pooling = Pooling::kMean;
  }
  const bool chat_asked = !chat.file.empty() || !chat.name.empty();
  if (chat_asked && served.model->kind() != ModelKind::kDecoder) {
    throw UsageError(
        std::string(chat.file.empty() ? "--chat-template-name" : "--chat-template-file") +
        ": only for a decoder, whose /v1/chat/completions it renders; " + served.model->name() +
        " is not one");
  }
  if (served.model->kind() == ModelKind::kDecoder) {
    try {
      served.chat_template = ChatTemplate::load(served.model->dir, chat);
      spdlog::debug("chat template: {}", served.chat_template->origin());
    } catch (const Error& e) {
      if (chat_asked) throw;
      spdlog::info("{}; /v1/chat/completions is not served (--chat-template-file gives one)",
                   e.what());
    }
  }
  return served;
}

int ServeCommand::run(const CLI::App&) {
  if (api_key_file) {
    const std::string contents = read_input_text(*api_key_file, "--api-key-file", kMaxKeyBytes);
    api_key = contents.substr(0, contents.find_first_of("\r\n"));
  } else if (!api_key) {
    if (const char* key = std::getenv("ATTN_API_KEY")) api_key = key;
  }
  if (api_key && api_key->empty()) throw UsageError("--api-key: the key is empty");
  options.api_key = api_key;
  if (!is_loopback(options.host) && !api_key && !without_key) {
    throw UsageError("--host " + options.host +
                     ": another machine could reach it; give --api-key (or --api-key-file, "
                     "ATTN_API_KEY), or --public-without-key to serve without one");
  }
  options.log_requests = !common.quiet;
  ServedModel served = load_served_model(common, chat_format.choice);

  // SIGTERM and SIGINT are taken by one thread, which stops the server: blocked here before the
  // server's threads start (its model thread with it), so that they inherit the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ModelServer server(std::move(served), options);
  std::atomic<bool> signalled = false;
  std::thread waiter([&] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    signalled = true;
    server.stop();
  });
  // The waiter ends: it has stopped the server, or (when listening failed) it is sent the signal
  // it waits for.
  const auto end_waiter = [&] {
    if (!signalled) pthread_kill(waiter.native_handle(), SIGTERM);
    waiter.join();
  };
  try {
    server.run();
  } catch (...) {
    end_waiter();
    throw;
  }
  end_waiter();
  spdlog::info("stopped");
  return 0;
}

}  // namespace

std::unique_ptr<Command> make_serve_command() { return std::make_unique<ServeCommand>(); }

}  // namespace attn
