// Hostile tokenizer.json files: each one is refused with one line naming the file and the part
// of it that is wrong (exit 1), never a crash, a hang or a silent wrong answer.

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli_util.h"
#include "tests/hostile_util.h"

namespace attn::test {
namespace {

using nlohmann::json;

// A small but complete byte-level BPE tokenizer.json: "ab" merges to one token.
json minimal_tokenizer() {
  json vocab = json::object();
  vocab["a"] = 0;
  vocab["b"] = 1;
  vocab["ab"] = 2;
  vocab["<s>"] = 3;
  return {
      {"version", "1.0"},
      {"added_tokens", {{{"id", 3}, {"content", "<s>"}, {"special", true}, {"normalized", false}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", nullptr},
      {"post_processor", nullptr},
      {"decoder", nullptr},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b"}}}}};
}

class TokenizerJsonHostileTest : public HostileTest {
 protected:
  // attn tokenize on a folder holding only `tokenizer` as its tokenizer.json.
  CommandResult tokenize(const json& tokenizer, const std::string& text = "ab") {
    write_file(scratch_ / "tokenizer.json", tokenizer.dump());
    return run({"tokenize", "-m", scratch_.path().string(), text});
  }
  std::string file() const { return (scratch_ / "tokenizer.json").string(); }
};

TEST_F(TokenizerJsonHostileTest, TheMinimalFileWorks) {
  const CommandResult result = tokenize(minimal_tokenizer(), "ab<s>a");
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  EXPECT_EQ(result.out, "2\tab\n3\t<s>\n0\ta\n");
}

TEST_F(TokenizerJsonHostileTest, ARegexThatDoesNotCompile) {
  json tokenizer = minimal_tokenizer();
  tokenizer["pre_tokenizer"] = {{"type", "Split"},
                                {"pattern", {{"Regex", "(unclosed"}}},
                                {"behavior", "Isolated"},
                                {"invert", false}};
  expect_clean_failure(tokenize(tokenizer), 1,
                       {file(), "pre_tokenizer.pattern", "does not compile"});
}

TEST_F(TokenizerJsonHostileTest, CatastrophicBacktrackingGivesUpInsteadOfHanging) {
  json tokenizer = minimal_tokenizer();
  tokenizer["pre_tokenizer"] = {{"type", "Split"},
                                {"pattern", {{"Regex", "(a+)+$"}}},
                                {"behavior", "Isolated"},
                                {"invert", false}};
  expect_clean_failure(tokenize(tokenizer, std::string(20000, 'a') + "b"), 1,
                       {file(), "regex search gave up"});
}

// Sequences nested 10,000 deep: the JSON reader refuses the depth before anything recurses.
TEST_F(TokenizerJsonHostileTest, SequencesNestedTenThousandDeep) {
  std::string nested;
  for (int i = 0; i < 10000; ++i) nested += R"({"type":"Sequence","normalizers":[)";
  nested += "null";
  for (int i = 0; i < 10000; ++i) nested += "]}";
  json tokenizer = minimal_tokenizer();
  tokenizer["normalizer"] = nullptr;
  std::string text = tokenizer.dump();
  text.replace(text.find(R"("normalizer":null)"), 17, R"("normalizer":)" + nested);
  write_file(scratch_ / "tokenizer.json", text);
  expect_clean_failure(run({"tokenize", "-m", scratch_.path().string(), "ab"}), 1,
                       {file(), "deep"});
}

// Nesting the JSON reader allows, but deeper than any real pipeline: each component kind refuses
// it by name.
TEST_F(TokenizerJsonHostileTest, SequencesNestedPastTheComponentLimit) {
  const struct {
    const char* part;
    const char* list;
  } kinds[] = {{"normalizer", "normalizers"},
               {"pre_tokenizer", "pretokenizers"},
               {"post_processor", "processors"},
               {"decoder", "decoders"}};
  for (const auto& kind : kinds) {
    json nested = {{"type", "Sequence"}, {kind.list, json::array()}};
    for (int i = 0; i < 200; ++i) nested = {{"type", "Sequence"}, {kind.list, {nested}}};
    json tokenizer = minimal_tokenizer();
    tokenizer[kind.part] = nested;
    SCOPED_TRACE(kind.part);
    expect_clean_failure(tokenize(tokenizer), 1, {file(), kind.part});
  }
}

TEST_F(TokenizerJsonHostileTest, AFileOf200Megabytes) {
  write_file(scratch_ / "tokenizer.json", "{");
  std::filesystem::resize_file(scratch_ / "tokenizer.json", 200u << 20);  // sparse: no disk used
  expect_clean_failure(run({"tokenize", "-m", scratch_.path().string(), "ab"}), 1,
                       {file(), "limit"});
}

TEST_F(TokenizerJsonHostileTest, AMergeNamingATokenOutsideTheVocabulary) {
  json tokenizer = minimal_tokenizer();
  tokenizer["model"]["merges"] = {"a b", "b zz"};
  expect_clean_failure(tokenize(tokenizer), 1, {file(), "model.merges[1]", "zz"});
}

TEST_F(TokenizerJsonHostileTest, ATemplateNamingAMissingSpecialToken) {
  json tokenizer = minimal_tokenizer();
  tokenizer["post_processor"] = {{"type", "TemplateProcessing"},
                                 {"single",
                                  {{{"SpecialToken", {{"id", "<bos>"}, {"type_id", 0}}}},
                                   {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                                 {"pair",
                                  {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                   {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
                                 {"special_tokens", json::object()}};
  expect_clean_failure(tokenize(tokenizer), 1, {file(), "post_processor", "<bos>"});
}

TEST_F(TokenizerJsonHostileTest, ComponentsAttnDoesNotImplementAreRefusedByName) {
  const struct {
    const char* part;
    json component;
  } cases[] = {{"normalizer", {{"type", "Nothing"}}},
               {"pre_tokenizer", {{"type", "UnicodeScripts"}}},
               {"post_processor", {{"type", "Nothing"}}},
               {"decoder", {{"type", "Nothing"}}},
               {"model", {{"type", "Nothing"}, {"vocab", json::object()}}}};
  for (const auto& [part, component] : cases) {
    json tokenizer = minimal_tokenizer();
    tokenizer[part] = component;
    SCOPED_TRACE(part);
    expect_clean_failure(tokenize(tokenizer), 1, {file(), part, "not implemented by attn"});
  }
}

TEST_F(TokenizerJsonHostileTest, BpeDropoutIsRefusedRatherThanIgnored) {
  json tokenizer = minimal_tokenizer();
  tokenizer["model"]["dropout"] = 0.1;
  expect_clean_failure(tokenize(tokenizer), 1, {file(), "model.dropout", "not implemented"});
}

TEST_F(TokenizerJsonHostileTest, AnAddedTokenIdPastTheLimit) {
  json tokenizer = minimal_tokenizer();
  tokenizer["added_tokens"][0]["id"] = 4294967295u;
  expect_clean_failure(tokenize(tokenizer), 1, {file(), "added_tokens[0].id"});
}

TEST_F(TokenizerJsonHostileTest, AModelWithoutVocabulary) {
  json tokenizer = minimal_tokenizer();
  tokenizer["model"].erase("vocab");
  expect_clean_failure(tokenize(tokenizer), 1, {file(), "model"});
}

TEST_F(TokenizerJsonHostileTest, NotJson) {
  write_file(scratch_ / "tokenizer.json", "{\"model\": ");
  expect_clean_failure(run({"tokenize", "-m", scratch_.path().string(), "ab"}), 1, {file()});
}

// tokenizer_config.json's added_tokens_decoder beside the file: transformers' fast tokenizer adds
// the entries whose ids the file's added_tokens lack, each at the next id (the vocabulary has 4).
TEST_F(TokenizerJsonHostileTest, AddedTokensOfTheConfigAreAdded) {
  const json entry = {{"lstrip", false}, {"rstrip", false}, {"single_word", false}};
  json decoder = json::object();
  decoder["3"] = entry;  // the file's own <s>: not added twice
  decoder["3"]["content"] = "<s>";
  decoder["3"]["special"] = true;
  decoder["10"] = entry;  // sorted as numbers: after 9
  decoder["10"]["content"] = "xy";
  decoder["10"]["special"] = false;
  decoder["9"] = entry;
  decoder["9"]["content"] = "<sep>";
  decoder["9"]["special"] = true;
  write_file(scratch_ / "tokenizer_config.json", json{{"added_tokens_decoder", decoder}}.dump());
  const CommandResult result = tokenize(minimal_tokenizer(), "ab<sep>axy<s>");
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  EXPECT_EQ(result.out, "2\tab\n4\t<sep>\n0\ta\n5\txy\n3\t<s>\n");
  // <sep> is special (skipped), xy is not.
  const CommandResult decoded = run({"tokenize", "-m", scratch_.path().string(), "--decode",
                                     "--skip-special", "--json", "0 4 5"});
  ASSERT_EQ(decoded.exit_status, 0) << describe(decoded);
  EXPECT_EQ(json::parse(decoded.out)["text"], "a xy");
}

// A garbled added_tokens_decoder entry, which transformers refuses, is one line naming the
// config, the key and what is wrong.
TEST_F(TokenizerJsonHostileTest, AGarbledAddedTokensDecoderEntry) {
  const std::string config = (scratch_ / "tokenizer_config.json").string();
  const std::pair<const char*, const char*> cases[] = {
      {R"({"-1": {"content": "<x>"}})", "out of range"},
      {R"({"x": {"content": "<x>"}})", "not a token id"},
      {R"({"7": {"special": true}})", "content"},
      {R"({"7": {"content": "<x>", "special": "yes"}})", "'special' must be true or false"}};
  for (const auto& [decoder, complaint] : cases) {
    write_file(scratch_ / "tokenizer_config.json",
               std::string(R"({"added_tokens_decoder": )") + decoder + "}");
    expect_clean_failure(tokenize(minimal_tokenizer()), 1,
                         {config, "added_tokens_decoder", complaint});
  }
}

}  // namespace
}  // namespace attn::test
