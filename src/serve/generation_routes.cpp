// attn serve's generation routes: OpenAI's /v1/completions and /v1/chat/completions, whole or
// streamed, generated in the scheduler's slots as attn generate and attn chat generate.
#include <spdlog/fmt/fmt.h>

#include <chrono>
#include <ctime>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/base/error.h"
#include "src/serve/client_connection.h"
#include "src/serve/server_state.h"
#include "src/tasks/chat.h"
#include "src/tasks/generation_settings.h"

namespace attn {
namespace {

using namespace serve;

// How often a whole completion's handler looks whether its client has gone: about a decode step
// of a small model.
constexpr std::chrono::milliseconds kClientCheck{20};

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

}  // namespace

void ModelServer::State::complete(const httplib::Request& http_request, httplib::Response& response,
                                  bool chat, const Json& body, std::vector<int> prompt,
                                  GenerateOptions generation) {
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
    // A client that goes away while it waits ends the generation at the next step.
    const ClientConnection client(http_request);
    while (!request->ended_within(kClientCheck)) {
      if (client.closed()) request->cancel();
    }
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
          complete(request, response, false, body, std::move(ids), options);
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
          complete(request, response, true, body, std::move(ids), options.generation);
        });
}

}  // namespace attn
