// generate --json --stream: one JSON line per token as it is chosen, then the summary that
// --json alone prints.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli_util.h"
#include "tests/test_paths.h"

namespace attn::test {
namespace {

using nlohmann::json;

// The lines of `out`, each parsed.
std::vector<json> json_lines(const std::string& out) {
  std::vector<json> lines;
  std::size_t begin = 0;
  for (std::size_t end; (end = out.find('\n', begin)) != std::string::npos; begin = end + 1) {
    lines.push_back(json::parse(out.substr(begin, end - begin)));
  }
  EXPECT_EQ(begin, out.size()) << "the last line has no newline";
  return lines;
}

CommandResult generate(std::vector<std::string> args) {
  args.insert(args.begin(),
              {"generate", "-m", shipped_model("tiny-gpt2-brown").string(), "-p", "The jury said"});
  return run_attn(args);
}

TEST(GenerateStream, OneEventPerTokenThenTheSummary) {
  const CommandResult streamed = generate({"-n", "12", "--temp", "0", "--json", "--stream"});
  ASSERT_EQ(streamed.exit_status, 0) << describe(streamed);
  const std::vector<json> lines = json_lines(streamed.out);
  ASSERT_EQ(lines.size(), 13u);
  const json& summary = lines.back();
  std::vector<int> ids;
  std::string text;
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    EXPECT_EQ(lines[i].size(), 2u) << lines[i];
    ids.push_back(lines[i].at("token_id").get<int>());
    text += lines[i].at("text").get<std::string>();
  }
  EXPECT_EQ(ids, summary.at("generated_ids").get<std::vector<int>>());
  EXPECT_EQ(text, summary.at("text").get<std::string>());
  // The summary is what --json alone prints, timings aside.
  const CommandResult plain = generate({"-n", "12", "--temp", "0", "--json"});
  ASSERT_EQ(plain.exit_status, 0) << describe(plain);
  json expected = json::parse(plain.out);
  json got = summary;
  for (json* out : {&expected, &got}) {
    out->erase("timings");
    out->erase("seed");
  }
  EXPECT_EQ(got, expected);
}

TEST(GenerateStream, AStopStringEndsTheEventsWithTheTextBeforeIt) {
  const CommandResult full = generate({"-n", "24", "--temp", "0", "--json"});
  ASSERT_EQ(full.exit_status, 0) << describe(full);
  const std::string full_text = json::parse(full.out).at("text").get<std::string>();
  ASSERT_GT(full_text.size(), 12u);
  const std::string stop = full_text.substr(8, 3);
  const CommandResult cut =
      generate({"-n", "24", "--temp", "0", "--json", "--stream", "--stop", stop});
  ASSERT_EQ(cut.exit_status, 0) << describe(cut);
  const std::vector<json> lines = json_lines(cut.out);
  ASSERT_GE(lines.size(), 2u);
  std::string text;
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) text += lines[i].at("text").get<std::string>();
  EXPECT_EQ(lines.back().at("stop_reason"), "stop");
  EXPECT_EQ(text, full_text.substr(0, full_text.find(stop)));
  EXPECT_EQ(text, lines.back().at("text").get<std::string>());
}

}  // namespace
}  // namespace attn::test
