// The options that turn a conversation into a prompt, shared by attn chat, generate --chat and
// tokenize --chat: the template, --chat-var, --tools, and conversation files.
#include <nlohmann/json.hpp>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/cli/commands.h"
#include "src/io/json_util.h"

namespace attn {
namespace {

using nlohmann::ordered_json;

// Conversations and tool lists are text a person writes; 64 MB is far beyond any of them.
constexpr std::size_t kMaxConversationBytes = 64u << 20;

// How errors name a file given to option `what`: "--chat c.json", "--chat (standard input)".
std::string input_name(const std::filesystem::path& path, const std::string& what) {
  if (path != "-") return what + " " + path.string();
  return what == "standard input" ? what : what + " (standard input)";
}

// JSON text of a file given on the command line ("-": standard input), parsed keeping the order
// of object keys (a template's tojson prints them in that order).
ordered_json read_json_input(const std::filesystem::path& path, const std::string& what) {
  const std::string text = read_input_text(path, what, kMaxConversationBytes);
  check_json(text, input_name(path, what));  // one-line errors for bad syntax and deep nesting
  return ordered_json::parse(text);
}

}  // namespace

ChatTemplate load_chat_template(const std::filesystem::path& model_dir,
                                const ChatFormatOptions& format) {
  return ChatTemplate::load(model_dir, format.choice, format.tools.has_value());
}

ordered_json chat_variables(const ChatFormatOptions& format) {
  ordered_json variables = ordered_json::object();
  for (const std::string& item : format.variables) {
    const std::size_t equals = item.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw UsageError("--chat-var '" + brief_text(item) +
                       "': expected KEY=JSON (e.g. enable_thinking=false)");
    }
    const std::string key = item.substr(0, equals);
    const std::string value = item.substr(equals + 1);
    if (!ordered_json::accept(value)) {
      throw UsageError("--chat-var '" + brief_text(item) + "': the value is not JSON (a string " +
                       "needs quotes: " + key + "='\"text\"')");
    }
    variables[key] = ordered_json::parse(value);
  }
  return variables;
}

ordered_json chat_tools(const ChatFormatOptions& format) {
  if (!format.tools) return nullptr;
  ordered_json tools = read_json_input(*format.tools, "--tools");
  if (!tools.is_array()) {
    throw Error(input_name(*format.tools, "--tools") + ": expected a JSON list of tool schemas");
  }
  return tools;
}

ordered_json read_conversation(const std::filesystem::path& path, const std::string& what) {
  const std::string text = read_input_text(path, what, kMaxConversationBytes);
  try {
    check_json(text, input_name(path, what));
  } catch (const Error& error) {
    // Plain text piped in (echo 'Hello' | attn chat) is the likely cause: say what is expected.
    throw Error(std::string(error.what()) +
                "; chat reads a conversation, a JSON list of messages ([{\"role\": \"user\", "
                "\"content\": \"...\"}]); -i reads one plain line per turn");
  }
  ordered_json messages = ordered_json::parse(text);
  check_messages(messages, input_name(path, what));
  return messages;
}

}  // namespace attn
