// attn chat, generate --chat and tokenize --chat from the command line: the conversation formats
// as the chat template says, the KV cache carries across turns without changing a reply, the
// session commands work, a full context is said and (with --truncate) handled, and bad
// templates, variables and conversations are one-line errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "tests/cli_util.h"
#include "tests/golden.h"
#include "tests/real_tokenizers.h"
#include "tests/test_paths.h"

namespace attn::test {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

std::string gpt2() { return shipped_model("tiny-gpt2-brown").string(); }
std::string chatml() { return (source_dir() / "tests" / "data" / "chatml.jinja").string(); }

// `text` written to a file of `dir`; returns its path.
std::string file_with(const TempDir& dir, const std::string& name, const std::string& text) {
  write_file(dir / name, text);
  return (dir / name).string();
}

void expect_one_line_error(const CommandResult& result, int status, const std::string& needle) {
  EXPECT_EQ(result.exit_status, status) << describe(result);
  EXPECT_EQ(split_lines_of(result.err).size(), 1u) << describe(result);
  EXPECT_NE(result.err.find(needle), std::string::npos) << describe(result);
}

// The numbers of "prompt N tokens (M from the cache)" in the log of each turn.
std::vector<std::pair<int, int>> turn_prompts(const std::string& log) {
  std::vector<std::pair<int, int>> turns;
  const std::regex turn(R"(prompt (\d+) tokens? \((\d+) from the cache\))");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), turn); it != std::sregex_iterator();
       ++it) {
    turns.emplace_back(std::stoi((*it)[1]), std::stoi((*it)[2]));
  }
  return turns;
}

TEST(ChatTokenize, RendersTheConversationAndTokenizesItWithoutSpecialTokens) {
  TempDir dir;
  const std::string conversation = file_with(dir, "c.json",
                                             R"([{"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "The jury said"}])");
  const CommandResult result =
      run_attn({"tokenize", "-m", gpt2(), "--chat", conversation, "--chat-template-file", chatml(),
                "--add-generation-prompt", "--json"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const json out = json::parse(result.out);
  const std::string want =
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nThe jury said<|im_end|>\n"
      "<|im_start|>assistant\n";
  EXPECT_EQ(out["text"], want);
  const CommandResult plain = run_attn({"tokenize", "-m", gpt2(), "--no-special", "--json", want});
  ASSERT_EQ(plain.exit_status, 0) << describe(plain);
  EXPECT_EQ(out["ids"], json::parse(plain.out)["ids"]);

  // Without --json, the rendered text as it is.
  const CommandResult text =
      run_attn({"tokenize", "-m", gpt2(), "--chat", conversation, "--chat-template-file", chatml(),
                "--add-generation-prompt"});
  EXPECT_EQ(text.out, want) << describe(text);
}

// The real templates' conversations through the command line, against transformers' renderings
// and Hugging Face tokenizers' ids (../shared/golden/chat-templates).
TEST(ChatTokenize, MatchesTransformersOnTheRealTemplatesFromTheShell) {
  ATTN_REQUIRE_SHARED();
  TempDir dir;
  const GoldenSet golden("chat-templates");
  for (const std::string name : {"qwen3", "gemma3", "llama3.1"}) {
    // ordered_jsonl: the messages are written for attn with their keys in Python's order, in
    // which a template renders a dict.
    int checked = 0;
    for (const ordered_json& line : golden.ordered_jsonl(name + ".jsonl")) {
      if (checked == 6) break;
      if (!line.contains("rendered") || !line["tools"].is_null()) continue;
      const std::string conversation = file_with(dir, "c.json", line["messages"].dump());
      std::vector<std::string> args = {"tokenize", "-m",         real_tokenizer_dir(name).string(),
                                       "--chat",   conversation, "--json"};
      if (line["add_generation_prompt"].get<bool>()) args.push_back("--add-generation-prompt");
      for (const auto& [key, value] : line["extra_vars"].items()) {
        args.push_back("--chat-var");
        args.push_back(key + "=" + value.dump());
      }
      const CommandResult result = run_attn(args);
      ASSERT_EQ(result.exit_status, 0) << name << ": " << describe(result);
      const json out = json::parse(result.out);
      const std::string what = name + " " + line["conversation_id"].get<std::string>();
      EXPECT_EQ(out["text"].get<std::string>(), line["rendered"].get<std::string>()) << what;
      EXPECT_EQ(out["ids"].get<std::vector<int>>(), line["ids"].get<std::vector<int>>()) << what;
      ++checked;
    }
    EXPECT_EQ(checked, 6) << name;
  }
}

TEST(ChatTokenize, ATemplatesOwnErrorIsItsMessageOnOneLine) {
  ATTN_REQUIRE_SHARED();
  TempDir dir;
  const std::string conversation = file_with(
      dir, "c.json", R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])");
  const CommandResult result =
      run_attn({"tokenize", "-m", real_tokenizer_dir("gemma3").string(), "--chat", conversation});
  expect_one_line_error(result, 1,
                        "tokenizer_config.json: chat_template: Conversation roles must alternate "
                        "user/assistant/user/assistant/...");
}

TEST(ChatTokenize, BadTemplatesVariablesAndConversationsAreOneLineErrors) {
  TempDir dir;
  const std::string conversation =
      file_with(dir, "c.json", R"([{"role": "user", "content": "Hi"}])");
  const std::string syntax = file_with(dir, "syntax.jinja", "line one\n{% for x in %}{% endfor %}");
  const std::string endless =
      file_with(dir, "endless.jinja", "{% for i in range(1000000000) %}x{% endfor %}");
  const std::string recursive =
      file_with(dir, "recursive.jinja", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  const std::string huge =
      file_with(dir, "huge.jinja",
                "{% set s = 'x' * 1000000 %}{% for i in range(1000) %}{{ s }}{% endfor %}");
  const std::string undefined = file_with(dir, "undefined.jinja", "{{ nothing.at.all }}");
  const auto tokenize = [&](const std::string& chat_template) {
    return run_attn(
        {"tokenize", "-m", gpt2(), "--chat", conversation, "--chat-template-file", chat_template});
  };
  expect_one_line_error(tokenize(syntax), 1, "syntax.jinja: line 2, column");
  // A hang would end at run_attn's time limit and fail here; no time is asserted.
  for (const std::string& hostile : {endless, recursive, huge, undefined}) {
    expect_one_line_error(tokenize(hostile), 1, hostile + ": line 1, column");
  }
  // The shipped GPT-2 has no chat template of its own.
  expect_one_line_error(run_attn({"tokenize", "-m", gpt2(), "--chat", conversation}), 1,
                        "no chat template");
  expect_one_line_error(run_attn({"tokenize", "-m", gpt2(), "--chat", conversation,
                                  "--chat-template-file", chatml(), "--chat-var", "thinking"}),
                        2, "--chat-var 'thinking': expected KEY=JSON");
  expect_one_line_error(run_attn({"tokenize", "-m", gpt2(), "--chat", conversation,
                                  "--chat-template-file", chatml(), "--chat-var", "x=yes"}),
                        2, "the value is not JSON");
  const std::string not_a_list = file_with(dir, "bad.json", R"({"role": "user"})");
  expect_one_line_error(
      run_attn({"tokenize", "-m", gpt2(), "--chat", not_a_list, "--chat-template-file", chatml()}),
      1, "expected a JSON list of messages");
  const std::string no_role = file_with(dir, "norole.json", R"([{"content": "Hi"}])");
  expect_one_line_error(
      run_attn({"tokenize", "-m", gpt2(), "--chat", no_role, "--chat-template-file", chatml()}), 1,
      "message 1 must be an object with a \"role\" string");
  expect_one_line_error(run_attn({"tokenize", "-m", gpt2(), "--add-generation-prompt", "Hi"}), 2,
                        "--chat");
}

// Greedy replies of the shipped GPT-2 in ChatML: a tiny model trained on the Brown corpus,
// which does not follow instructions, but whose reply is decided by the prompt alone.
std::vector<std::string> chat_args(std::vector<std::string> more) {
  std::vector<std::string> args = {"chat", "-m", gpt2(), "--chat-template-file", chatml(), "--temp",
                                   "0",    "-n", "6"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(ChatCli, AConversationOnStandardInputGetsTheNextMessage) {
  TempDir dir;
  const std::string conversation =
      file_with(dir, "c.json", R"([{"role": "user", "content": "The jury said"}])");
  const CommandResult chat = run_attn(chat_args({"--json"}), conversation);
  ASSERT_EQ(chat.exit_status, 0) << describe(chat);
  const json reply = json::parse(chat.out);
  EXPECT_EQ(reply["message"]["role"], "assistant");
  EXPECT_EQ(reply["generated_ids"].size(), 6u);
  for (const char* key : {"prompt_ms", "decode_ms", "load_ms"}) {
    EXPECT_TRUE(reply["timings"].contains(key)) << key;
  }

  // generate --chat wraps a prompt as the same one user message.
  const CommandResult generate =
      run_attn({"generate", "-m", gpt2(), "--chat", "--chat-template-file", chatml(), "--temp", "0",
                "-n", "6", "--json", "-p", "The jury said"});
  ASSERT_EQ(generate.exit_status, 0) << describe(generate);
  EXPECT_EQ(json::parse(generate.out)["text"], reply["message"]["content"]);
  EXPECT_EQ(json::parse(generate.out)["generated_ids"], reply["generated_ids"]);

  // Text output: the message alone.
  const CommandResult text = run_attn(chat_args({}), conversation);
  ASSERT_EQ(text.exit_status, 0) << describe(text);
  EXPECT_EQ(text.out, reply["message"]["content"].get<std::string>() + "\n");
}

// Plain text on standard input is not a conversation: the error says what is read and that -i
// reads plain lines.
TEST(ChatCli, PlainTextOnStandardInputSaysWhatChatReads) {
  TempDir dir;
  const CommandResult chat =
      run_attn(chat_args({}), file_with(dir, "plain.txt", "Tell me about the jury.\n"));
  expect_one_line_error(chat, 1, "standard input: not valid JSON");
  EXPECT_NE(chat.err.find("a JSON list of messages"), std::string::npos) << chat.err;
  EXPECT_NE(chat.err.find("-i reads one plain line per turn"), std::string::npos) << chat.err;
}

TEST(ChatCli, TurnsReuseTheCacheAndReplyAsIfComputedWhole) {
  TempDir dir;
  const std::string turns = file_with(dir, "turns.txt",
                                      "The jury said\n"
                                      "It was a long day in the city\n"
                                      "What did the committee find?\n");
  const CommandResult reused = run_attn(chat_args({"-i", "-v"}), turns);
  ASSERT_EQ(reused.exit_status, 0) << describe(reused);
  const CommandResult whole = run_attn(chat_args({"-i", "-v", "--no-cache-reuse"}), turns);
  ASSERT_EQ(whole.exit_status, 0) << describe(whole);
  EXPECT_EQ(reused.out, whole.out) << "replies differ with and without the cache carried over";

  const auto with_reuse = turn_prompts(reused.err);
  const auto without = turn_prompts(whole.err);
  ASSERT_EQ(with_reuse.size(), 3u) << describe(reused);
  ASSERT_EQ(without.size(), 3u) << describe(whole);
  EXPECT_EQ(with_reuse[0].second, 0);
  for (int turn = 1; turn < 3; ++turn) {
    EXPECT_EQ(with_reuse[turn].first, without[turn].first) << "turn " << turn + 1;
    EXPECT_EQ(without[turn].second, 0) << "turn " << turn + 1;
    // Everything up to the reply's last token (never run) is reused, at least the last prompt.
    EXPECT_GE(with_reuse[turn].second, with_reuse[turn - 1].first) << "turn " << turn + 1;
    EXPECT_LT(with_reuse[turn].second, with_reuse[turn].first) << "turn " << turn + 1;
  }
}

TEST(ChatCli, SessionCommandsResetSetTheSystemMessageAndSave) {
  TempDir dir;
  const std::string saved = (dir / "saved.json").string();
  const std::string turns = file_with(dir, "turns.txt",
                                      "/system Be brief.\n"
                                      "The jury said\n"
                                      "/reset\n"
                                      "It was a long day\n"
                                      "/save " +
                                          saved +
                                          "\n"
                                          "/nonsense\n");
  const CommandResult result = run_attn(chat_args({"-i"}), turns);
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  EXPECT_NE(result.err.find("unknown command /nonsense"), std::string::npos) << describe(result);
  const json messages = json::parse(read_file(saved));
  ASSERT_EQ(messages.size(), 3u) << messages.dump();
  EXPECT_EQ(messages[0], (json{{"role", "system"}, {"content", "Be brief."}}));
  EXPECT_EQ(messages[1], (json{{"role", "user"}, {"content", "It was a long day"}}));
  EXPECT_EQ(messages[2]["role"], "assistant");
  EXPECT_TRUE(result.out.ends_with(messages[2]["content"].get<std::string>() + "\n"))
      << describe(result);
}

// /exit and /quit end the chat, as Ctrl-D does: the lines after them are never read.
TEST(ChatCli, ExitAndQuitEndTheChat) {
  TempDir dir;
  for (const std::string command : {"/exit", "/quit"}) {
    const std::string saved = (dir / "saved.json").string();
    const std::string turns =
        file_with(dir, "turns.txt", "The jury said\n" + command + "\n/save " + saved + "\n");
    const CommandResult result = run_attn(chat_args({"-i"}), turns);
    ASSERT_EQ(result.exit_status, 0) << describe(result);
    EXPECT_FALSE(std::filesystem::exists(saved)) << command << " did not end the chat";
    EXPECT_EQ(result.err.find("unknown command"), std::string::npos) << describe(result);
  }
}

TEST(ChatCli, AFullContextIsSaidAndTruncateDropsTheOldestTurns) {
  TempDir dir;
  const std::string turns = file_with(dir, "turns.txt",
                                      "The jury said it was a long day in the city of Atlanta\n"
                                      "The committee found that the election was conducted\n"
                                      "It was a long day\n");
  // Each turn adds about 30 tokens: the third does not fit 64.
  const CommandResult refused = run_attn(chat_args({"-i", "-v", "-c", "64"}), turns);
  ASSERT_EQ(refused.exit_status, 0) << describe(refused);
  EXPECT_NE(refused.err.find("and the context holds 64: /reset starts again, --truncate drops "
                             "the oldest turns"),
            std::string::npos)
      << describe(refused);

  const CommandResult truncated =
      run_attn(chat_args({"-i", "-v", "-c", "64", "--truncate"}), turns);
  ASSERT_EQ(truncated.exit_status, 0) << describe(truncated);
  EXPECT_NE(truncated.err.find("--truncate: dropped the oldest 2 messages"), std::string::npos)
      << describe(truncated);
}

TEST(ChatCli, OptionsThatDoNothingAreRefused) {
  expect_one_line_error(run_attn({"generate", "-m", gpt2(), "--system", "x", "-p", "Hi"}), 2,
                        "--chat");
  expect_one_line_error(run_attn({"chat", "-m", gpt2(), "-i", "--json"}), 2, "--json");
  // As in generate, an option that would do nothing is refused.
  expect_one_line_error(run_attn(chat_args({"--top-k", "5"})), 2,
                        "--top-k: --temp 0 is greedy decoding");
  expect_one_line_error(run_attn({"chat", "-m", gpt2(), "--chat-template-file", chatml()}), 1,
                        "standard input");
}

}  // namespace
}  // namespace attn::test
