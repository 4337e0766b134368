// Chat templates against transformers' apply_chat_template (../shared/golden/chat-templates/):
// the real templates of Llama-3, Llama-3 Instruct, Qwen3, Gemma-3 and DeepSeek-V3, read from
// their tokenizer_config.json as a model folder ships it, render every conversation byte for
// byte, their text tokenizes to the same ids, and the conversations transformers refuses are
// refused (the template's own raise_exception with its exact message).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "src/base/error.h"
#include "src/tasks/chat_template.h"
#include "src/tokenizer/tokenizer.h"
#include "tests/cli_util.h"
#include "tests/golden.h"
#include "tests/real_tokenizers.h"
#include "tests/test_paths.h"

namespace attn::test {
namespace {

using nlohmann::ordered_json;

class ChatTemplateGolden : public testing::TestWithParam<const char*> {};

TEST_P(ChatTemplateGolden, RendersEveryConversationAsTransformersAndTokenizesToItsIds) {
  ATTN_REQUIRE_SHARED();
  const std::string name = GetParam();
  const std::filesystem::path dir = real_tokenizer_dir(name);
  ASSERT_FALSE(dir.empty()) << name << ": could not unpack the tokenizer";
  const ChatTemplate chat_template = ChatTemplate::load(dir);
  const auto tokenizer = load_tokenizer(dir);
  const GoldenSet golden("chat-templates");

  // The template and the special tokens it is given are those transformers used.
  const ordered_json reference = golden.ordered_json("templates.json")["templates"][name];
  EXPECT_EQ(chat_template.special_tokens().dump(), reference["special_tokens_map"].dump());

  // ordered_jsonl: the templates render dicts, the tools through tojson say, with their keys in
  // Python's order.
  int rendered = 0, refused = 0;
  for (const ordered_json& line : golden.ordered_jsonl(name + ".jsonl")) {
    const std::string what = name + " " + line["conversation_id"].get<std::string>() +
                             " add_generation_prompt=" + line["add_generation_prompt"].dump() +
                             " " + line["extra_vars"].dump();
    if (line.contains("rendered")) {
      std::string got;
      try {
        got = chat_template.render(line["messages"], line["add_generation_prompt"].get<bool>(),
                                   line["tools"], line["extra_vars"]);
      } catch (const Error& error) {
        ADD_FAILURE() << what << ": " << error.what();
        continue;
      }
      EXPECT_EQ(got, line["rendered"].get<std::string>()) << what;
      EXPECT_EQ(tokenizer->encode_plain(got), line["ids"].get<std::vector<int>>()) << what;
      ++rendered;
    } else {
      const std::string error_type = line["error_type"].get<std::string>();
      try {
        chat_template.render(line["messages"], line["add_generation_prompt"].get<bool>(),
                             line["tools"], line["extra_vars"]);
        ADD_FAILURE() << what << ": rendered, but transformers fails with " << error_type;
      } catch (const Error& error) {
        // The template's own raise_exception: its message, after the template's origin.
        if (error_type == "TemplateError") {
          EXPECT_EQ(std::string(error.what()),
                    chat_template.origin() + ": " + line["error"].get<std::string>())
              << what;
        }
      }
      ++refused;
    }
  }
  EXPECT_GT(rendered, 0);
  std::cout << name << ": " << rendered << " conversations rendered, " << refused
            << " refused as transformers does\n";
}

INSTANTIATE_TEST_SUITE_P(RealTemplates, ChatTemplateGolden,
                         testing::Values("llama3", "llama3.1", "qwen3", "gemma3", "deepseek-v3"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           std::erase(name, '.');
                           std::erase(name, '-');
                           return name;
                         });

// Which template a folder's files give, as transformers picks it.
TEST(ChatTemplateChoice, FollowsTheFolderFilesAndTheOptions) {
  TempDir dir;
  write_file(dir / "tokenizer_config.json", R"({
    "eos_token": "</s>",
    "chat_template": [{"name": "default", "template": "D{{ eos_token }}"},
                      {"name": "tool_use", "template": "T"}]})");
  const auto render = [](const ChatTemplate& chat_template) {
    return chat_template.render(ordered_json::array(), false);
  };
  EXPECT_EQ(render(ChatTemplate::load(dir.path())), "D</s>");
  EXPECT_EQ(ChatTemplate::load(dir.path()).special_tokens().dump(), R"({"eos_token":"</s>"})");
  EXPECT_EQ(render(ChatTemplate::load(dir.path(), {}, /*for_tools=*/true)), "T");
  EXPECT_EQ(render(ChatTemplate::load(dir.path(), {.file = {}, .name = "tool_use"})), "T");
  try {
    ChatTemplate::load(dir.path(), {.file = {}, .name = "other"});
    ADD_FAILURE() << "an unknown template name was accepted";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("has no such template (it has 'default', 'tool_use')"),
              std::string::npos)
        << error.what();
  }

  // chat_template.jinja wins over tokenizer_config.json; additional_chat_templates/NAME.jinja
  // is the named template NAME; a file given wins over everything.
  write_file(dir / "chat_template.jinja", "J");
  std::filesystem::create_directory(dir / "additional_chat_templates");
  write_file(dir / "additional_chat_templates" / "extra.jinja", "E");
  write_file(dir / "given.jinja", "G");
  EXPECT_EQ(render(ChatTemplate::load(dir.path())), "J");
  EXPECT_EQ(render(ChatTemplate::load(dir.path(), {.file = {}, .name = "extra"})), "E");
  EXPECT_EQ(render(ChatTemplate::load(dir.path(), {.file = dir / "given.jinja", .name = ""})), "G");
}

TEST(ChatTemplateChoice, AFolderWithoutATemplateOrADefaultIsAnError) {
  TempDir dir;
  write_file(dir / "tokenizer_config.json", R"({"eos_token": "</s>"})");
  EXPECT_THROW(
      {
        try {
          ChatTemplate::load(dir.path());
        } catch (const Error& error) {
          EXPECT_NE(std::string(error.what()).find("no chat template"), std::string::npos);
          throw;
        }
      },
      Error);
  write_file(dir / "tokenizer_config.json",
             R"({"chat_template": [{"name": "rag", "template": "R"}]})");
  EXPECT_THROW(
      {
        try {
          ChatTemplate::load(dir.path());
        } catch (const Error& error) {
          EXPECT_NE(std::string(error.what()).find("but no 'default'"), std::string::npos);
          throw;
        }
      },
      Error);
}

}  // namespace
}  // namespace attn::test
