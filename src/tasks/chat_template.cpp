#include "src/tasks/chat_template.h"

#include <optional>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/io/json_util.h"
#include "src/tokenizer/special_tokens.h"
#include "src/tokenizer/tokenizer.h"
#include "src/tokenizer/tokenizer_files.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

// Templates are small (the largest real ones are about 10 kB); a megabyte is plenty.
constexpr std::size_t kMaxTemplateBytes = 1u << 20;

struct TemplateSource {
  std::string text;
  std::string origin;
};

// "a", "b" and "c" for the list of names in a message.
std::string quoted_list(const std::vector<std::string>& names) {
  std::string list;
  for (const auto& name : names) list += (list.empty() ? "'" : ", '") + brief_text(name) + "'";
  return list;
}

// tokenizer_config.json's chat_template: one template, or named ones of which `choice.name` (or
// "tool_use" for tools, or "default") is taken. Nullopt when the file has no chat_template.
std::optional<TemplateSource> template_of_tokenizer_config(const json& config,
                                                           const std::string& file,
                                                           const ChatTemplateChoice& choice,
                                                           bool for_tools) {
  if (!config.contains("chat_template") || config["chat_template"].is_null()) return std::nullopt;
  const json& value = config["chat_template"];
  if (value.is_string()) {
    if (!choice.name.empty()) {
      throw UsageError("--chat-template-name '" + brief_text(choice.name) + "': " + file +
                       " has one chat template, without a name");
    }
    return TemplateSource{value.get<std::string>(), file + ": chat_template"};
  }
  if (!value.is_array()) {
    throw Error(file + ": chat_template must be a string or a list of {\"name\", \"template\"}");
  }
  std::vector<std::string> names;
  std::vector<std::string> texts;
  for (const json& entry : value) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
        !entry.contains("template") || !entry["template"].is_string()) {
      throw Error(file + ": chat_template: each entry must be {\"name\": string, \"template\": " +
                  "string}, got " + brief_json(entry));
    }
    names.push_back(entry["name"].get<std::string>());
    texts.push_back(entry["template"].get<std::string>());
  }
  auto find = [&](const std::string& name) -> std::optional<TemplateSource> {
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name)
        return TemplateSource{texts[i], file + ": chat_template '" + name + "'"};
    }
    return std::nullopt;
  };
  if (!choice.name.empty()) {
    if (auto found = find(choice.name)) return found;
    throw UsageError("--chat-template-name '" + brief_text(choice.name) + "': " + file +
                     " has no such template (it has " + quoted_list(names) + ")");
  }
  if (for_tools) {
    if (auto found = find("tool_use")) return found;
  }
  if (auto found = find("default")) return found;
  throw Error(file + ": chat_template names " + quoted_list(names) +
              " but no 'default'; choose one with --chat-template-name");
}

TemplateSource find_template(const TokenizerFiles& files, const ChatTemplateChoice& choice,
                             bool for_tools) {
  const fs::path& model_dir = files.dir;
  if (!choice.file.empty()) {
    return {read_input_text(choice.file, "--chat-template-file", kMaxTemplateBytes),
            choice.file.string()};
  }
  // Newer transformers saves the default template as chat_template.jinja and named ones as
  // additional_chat_templates/NAME.jinja.
  const fs::path jinja_file =
      choice.name.empty() ? model_dir / "chat_template.jinja"
                          : model_dir / "additional_chat_templates" / (choice.name + ".jinja");
  const bool plain_name = choice.name.find('/') == std::string::npos && choice.name != "..";
  if (plain_name && entry_exists(jinja_file)) {
    return {read_model_file(jinja_file, kMaxTemplateBytes), jinja_file.string()};
  }
  if (auto found =
          template_of_tokenizer_config(files.config, files.config_file, choice, for_tools)) {
    return *found;
  }
  throw Error(model_dir.string() +
              ": no chat template (neither chat_template.jinja nor a chat_template in "
              "tokenizer_config.json); give one with --chat-template-file");
}

// transformers' special_tokens_map: each named token that is set, as its text, then
// additional_special_tokens.
ordered_json template_special_tokens(const TokenizerFiles& files) {
  const std::string class_name = files.class_name.value_or("");
  const SpecialTokenConfig tokens =
      read_special_token_config(files, class_named_token_defaults(class_name), class_name);
  ordered_json variables = ordered_json::object();
  for (std::size_t i = 0; i < kNamedTokenCount; ++i) {
    if (tokens.named[i]) variables[kNamedTokenKeys[i]] = tokens.named[i]->content;
  }
  if (!tokens.additional_special_tokens.empty()) {
    variables["additional_special_tokens"] = tokens.additional_special_tokens;
  }
  return variables;
}

}  // namespace

void check_messages(const ordered_json& messages, const std::string& source) {
  if (!messages.is_array()) {
    throw Error(source + ": expected a JSON list of messages ({\"role\": ..., \"content\": ...})");
  }
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const ordered_json& message = messages[i];
    if (!message.is_object() || !message.contains("role") || !message["role"].is_string()) {
      throw Error(source + ": message " + std::to_string(i + 1) +
                  " must be an object with a \"role\" string, got " + brief_text(message.dump()));
    }
  }
}

ChatTemplate::ChatTemplate(jinja::Template compiled, std::string origin,
                           ordered_json special_tokens)
    : template_(std::move(compiled)),
      origin_(std::move(origin)),
      special_tokens_(std::move(special_tokens)) {}

ChatTemplate ChatTemplate::load(const fs::path& model_dir, const ChatTemplateChoice& choice,
                                bool for_tools) {
  const TokenizerFiles files = read_tokenizer_files(model_dir);
  TemplateSource source = find_template(files, choice, for_tools);
  try {
    return ChatTemplate(jinja::Template(source.text), source.origin,
                        template_special_tokens(files));
  } catch (const jinja::TemplateError& error) {
    throw Error(source.origin + ": " + error.what());
  }
}

std::string ChatTemplate::render(const ordered_json& messages, bool add_generation_prompt,
                                 const ordered_json& tools,
                                 const ordered_json& extra_variables) const {
  // The variables in the order transformers passes them; later ones win.
  ordered_json variables = ordered_json::object();
  variables["messages"] = messages;
  variables["tools"] = tools;
  variables["documents"] = nullptr;
  variables["add_generation_prompt"] = add_generation_prompt;
  for (const auto& [key, value] : special_tokens_.items()) variables[key] = value;
  for (const auto& [key, value] : extra_variables.items()) variables[key] = value;
  try {
    return template_.render(variables);
  } catch (const jinja::TemplateError& error) {
    if (error.raised_by_template()) throw Error(origin_ + ": " + error.message());
    throw Error(origin_ + ": " + error.what());
  }
}

}  // namespace attn
