// The conversation and tool files of attn chat, generate --chat and tokenize --chat, on arbitrary
// bytes: the input is a conversation file, optionally followed (after fuzz_util.h's separator)
// by a --tools file. Each is read as the command line reads it (read_conversation, chat_tools:
// size, UTF-8 and nesting checks, then the message checks), and an accepted conversation is
// rendered by two real chat templates, ChatML and Qwen3's (which uses tools, tool calls and
// reasoning content), from the Jinja harness's corpus. Any attn::Error is a correct answer; a
// crash, a sanitizer report, a hang or any other exception is a finding. A template renders the
// same conversation to the same text every time.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/error.h"
#include "src/cli/commands.h"
#include "src/tasks/chat_template.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using nlohmann::ordered_json;

const attn::fuzz::ScratchDir& scratch() {
  static const attn::fuzz::ScratchDir dir;
  return dir;
}

// A model folder per template: its chat_template.jinja and special tokens, loaded once.
const std::vector<attn::ChatTemplate>& templates() {
  static const std::vector<attn::ChatTemplate> loaded = [] {
    std::vector<attn::ChatTemplate> result;
    for (const char* name : {"chatml", "qwen3"}) {
      const std::filesystem::path folder = scratch().path() / name;
      std::filesystem::create_directories(folder);
      scratch().link(std::string(name) + "/chat_template.jinja",
                     std::filesystem::path(FUZZ_TEMPLATES_DIR) / (std::string(name) + ".jinja"));
      scratch().write(std::string(name) + "/tokenizer_config.json",
                      R"({"bos_token": "<s>", "eos_token": "<|im_end|>"})");
      result.push_back(attn::ChatTemplate::load(folder));
    }
    return result;
  }();
  return loaded;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::vector<std::string_view> files =
      attn::fuzz::split_files({reinterpret_cast<const char*>(data), size});
  const attn::fuzz::ScratchDir& dir = scratch();
  const std::vector<attn::ChatTemplate>& chat_templates = templates();
  dir.write("conversation.json", files[0]);
  attn::fuzz::write_optional(dir, "tools.json", files, 1);
  ordered_json messages, tools;
  try {
    messages = attn::read_conversation(dir.path() / "conversation.json", "--chat");
    attn::ChatFormatOptions format;
    if (files.size() > 1) format.tools = dir.path() / "tools.json";
    tools = attn::chat_tools(format);
  } catch (const attn::Error&) {
    return 0;
  }
  FUZZ_CHECK(messages.is_array(), "accepted a conversation that is not a list");
  for (const attn::ChatTemplate& chat_template : chat_templates) {
    for (bool add_generation_prompt : {false, true}) {
      try {
        const std::string text = chat_template.render(messages, add_generation_prompt, tools);
        FUZZ_CHECK(text == chat_template.render(messages, add_generation_prompt, tools),
                   "the same conversation rendered to two texts");
      } catch (const attn::Error&) {
      }
    }
  }
  return 0;
}
