#include "src/tasks/chat.h"

#include <algorithm>

#include "src/base/error.h"

namespace attn {
namespace {

using nlohmann::ordered_json;

bool has_role(const ordered_json& message, const std::string& role) {
  return message.is_object() && message.value("role", std::string()) == role;
}

}  // namespace

GenerateOptions with_end_of_turn(const Model& model, GenerateOptions options) {
  if (auto eos = model.tokenizer->eos_id()) options.extra_eos_ids.push_back(*eos);
  return options;
}

Conversation::Conversation(const Model& model, ChatTemplate chat_template, ChatOptions options)
    : model_(model),
      template_(std::move(chat_template)),
      options_(std::move(options)),
      session_(model_, with_end_of_turn(model_, options_.generation)) {}

void Conversation::set_messages(ordered_json messages, const std::string& source) {
  check_messages(messages, source);
  messages_ = std::move(messages);
}

void Conversation::add_message(const std::string& role, const std::string& content) {
  messages_.push_back({{"role", role}, {"content", content}});
}

void Conversation::remove_last_message() {
  if (!messages_.empty()) messages_.erase(messages_.size() - 1);
}

void Conversation::set_system(const std::string& content) {
  const bool has_system = !messages_.empty() && has_role(messages_[0], "system");
  if (content.empty()) {
    if (has_system) messages_.erase(0);
  } else if (has_system) {
    messages_[0]["content"] = content;
  } else {
    const ordered_json system = {{"role", "system"}, {"content", content}};
    messages_.insert(messages_.begin(), system);
  }
}

void Conversation::reset() {
  ordered_json kept = ordered_json::array();
  if (!messages_.empty() && has_role(messages_[0], "system")) kept.push_back(messages_[0]);
  messages_ = std::move(kept);
  session_.reset();
}

std::string Conversation::prompt_text() const {
  return template_.render(messages_, true, options_.tools, options_.variables);
}

std::vector<int> Conversation::prompt_ids() const {
  return model_.tokenizer->encode_plain(prompt_text());
}

int Conversation::drop_oldest_turn() {
  const std::size_t first = !messages_.empty() && has_role(messages_[0], "system") ? 1 : 0;
  std::size_t last_user = messages_.size();
  while (last_user > first && !has_role(messages_[last_user - 1], "user")) --last_user;
  if (last_user == 0 || last_user - 1 <= first) return 0;  // only the last turn is left
  std::size_t end = first + 1;
  while (end < last_user - 1 && !has_role(messages_[end], "user")) ++end;
  messages_.erase(messages_.begin() + first, messages_.begin() + end);
  return int(end - first);
}

ChatReply Conversation::reply(const GenerateCallbacks& callbacks) {
  ChatReply reply;
  const int context = generation_context(model_.spec(), session_.options());
  std::vector<int> ids = prompt_ids();
  if (options_.truncate) {
    // Room for a reply of max_new_tokens, or of a quarter of the context when that is less,
    // unless only the last turn is left.
    const int room = std::min(session_.options().max_new_tokens, context / 4);
    while (int(ids.size()) + room > context) {
      const int dropped = drop_oldest_turn();
      if (dropped == 0) break;
      reply.dropped_messages += dropped;
      ids = prompt_ids();
    }
  }
  if (int(ids.size()) >= context) {
    throw Error("the conversation is " + std::to_string(ids.size()) +
                " tokens, and the context holds " + std::to_string(context) +
                (options_.truncate ? ": its last message alone is too long"
                                   : ": /reset starts again, --truncate drops the oldest turns"));
  }
  if (!options_.reuse_cache) session_.reset();
  reply.generation = session_.generate(ids, callbacks);
  reply.text = reply.generation.text;
  add_message("assistant", reply.text);
  return reply;
}

}  // namespace attn
