#pragma once

// A conversation with an instruct model: its messages rendered by the folder's chat template
// (src/tasks/chat_template.h), each reply generated after them, and the KV cache kept from
// one turn to the next, so that a turn computes only what the template added since the last.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/model/model.h"
#include "src/tasks/chat_template.h"
#include "src/tasks/generate.h"

namespace attn {

struct ChatOptions {
  GenerateOptions generation;
  nlohmann::ordered_json tools = nullptr;                               // JSON schemas, or null
  nlohmann::ordered_json variables = nlohmann::ordered_json::object();  // --chat-var
  // When the conversation and a reply (of generation.max_new_tokens, at most a quarter of the
  // context) no longer fit the context, drop its oldest turns (after the system message)
  // instead of refusing the turn.
  bool truncate = false;
  // Keep the KV cache from turn to turn (false computes every prompt whole, for comparison).
  bool reuse_cache = true;
};

struct ChatReply {
  std::string text;  // the assistant's message, as appended to the conversation
  GenerateResult generation;
  int dropped_messages = 0;  // the oldest messages --truncate dropped for this turn
};

// `options` with the tokenizer's eos_token among the ids that end generation: many chat
// templates end a turn with it (<|im_end|>, <|eot_id|>) while generation_config.json omits it.
GenerateOptions with_end_of_turn(const Model& model, GenerateOptions options);

class Conversation {
 public:
  Conversation(const Model& model, ChatTemplate chat_template, ChatOptions options);

  // The messages so far: a JSON list of {"role", "content", ...}.
  const nlohmann::ordered_json& messages() const { return messages_; }
  // Replaces the conversation (a list of messages, as transformers takes them). Throws Error
  // naming `source` for anything else.
  void set_messages(nlohmann::ordered_json messages, const std::string& source);
  void add_message(const std::string& role, const std::string& content);
  void remove_last_message();
  // Sets the system message (the first message), or removes it when `content` is empty.
  void set_system(const std::string& content);
  // Forgets every message but the system message, and the cache.
  void reset();

  // The prompt of the next reply: the messages rendered with add_generation_prompt, as ids
  // (tokenized as transformers tokenizes a rendered chat: add_special_tokens=False).
  std::vector<int> prompt_ids() const;
  std::string prompt_text() const;

  // Generates the assistant's next message and appends it. A conversation longer than the
  // context is an Error saying so, or with options.truncate loses its oldest turns first. A
  // reply stopped by callbacks.stop is kept as far as it went.
  ChatReply reply(const GenerateCallbacks& callbacks = {});

  const ChatTemplate& chat_template() const { return template_; }
  const ChatOptions& options() const { return options_; }

 private:
  // Drops the oldest turn after the system message: its first message and the messages up to
  // the next user message. Returns how many were dropped (0: only the last turn is left).
  int drop_oldest_turn();

  const Model& model_;
  ChatTemplate template_;
  ChatOptions options_;
  GenerationSession session_;
  nlohmann::ordered_json messages_ = nlohmann::ordered_json::array();
};

}  // namespace attn
