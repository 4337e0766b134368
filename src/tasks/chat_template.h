#pragma once

// A model folder's chat template, rendered as transformers' apply_chat_template(tokenize=False)
// renders it: the same template, found the same way, given the same variables.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/jinja/template.h"

namespace attn {

// Where the template comes from, beyond the folder's own files.
struct ChatTemplateChoice {
  std::filesystem::path file;  // --chat-template-file: this file's text, whatever the folder has
  std::string name;            // --chat-template-name: one of the folder's named templates
};

// Refuses anything but a JSON list of messages, objects with a "role" string (the rest is the
// template's to judge, as in transformers), naming `source`.
void check_messages(const nlohmann::ordered_json& messages, const std::string& source);

class ChatTemplate {
 public:
  // The template of `model_dir`, the first of: choice.file; chat_template.jinja (with
  // choice.name: additional_chat_templates/NAME.jinja); the chat_template of
  // tokenizer_config.json, a string or a list of {"name", "template"} ("default" unless
  // choice.name, or "tool_use" when `for_tools` and it exists, as transformers picks). Also
  // reads the special tokens the template sees (bos_token, eos_token, ...). Errors name the file.
  static ChatTemplate load(const std::filesystem::path& model_dir,
                           const ChatTemplateChoice& choice = {}, bool for_tools = false);

  // The conversation as text. `messages`: a JSON list of {"role", "content", ...}; `tools`: null
  // or a list of JSON schemas; `extra_variables`: an object of more variables (--chat-var), which
  // win over the special tokens. A template error is "<origin>: line L, column C: what"; the
  // template's own raise_exception(msg) is "<origin>: msg".
  std::string render(
      const nlohmann::ordered_json& messages, bool add_generation_prompt,
      const nlohmann::ordered_json& tools = nullptr,
      const nlohmann::ordered_json& extra_variables = nlohmann::ordered_json::object()) const;

  // Where the template was read ("DIR/tokenizer_config.json: chat_template", ...), for messages.
  const std::string& origin() const { return origin_; }
  // The special tokens passed to the template, in transformers' order: bos_token, eos_token,
  // unk_token, sep_token, pad_token, cls_token, mask_token (those set), then
  // additional_special_tokens when the folder lists some.
  const nlohmann::ordered_json& special_tokens() const { return special_tokens_; }

 private:
  ChatTemplate(jinja::Template compiled, std::string origin, nlohmann::ordered_json special_tokens);

  jinja::Template template_;
  std::string origin_;
  nlohmann::ordered_json special_tokens_;
};

}  // namespace attn
