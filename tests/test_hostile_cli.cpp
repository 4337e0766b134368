// Issue 7, the command line under hostile use: bad option values of every command, exit statuses
// that agree (1 = bad input data, 2 = bad usage), output files that are devices, FIFOs or
// symlinks, a full or closed standard output, Ctrl-C while an output file is written, prompts at
// the context boundary, and benchmark sizes that overflow 32 bits.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "tests/cli_util.h"
#include "tests/hostile_util.h"
#include "tests/test_paths.h"

namespace attn::test {
namespace {

using nlohmann::json;

const std::string kFullStdout = "attn: error: stdout: No space left on device\n";
// What a shell reports for a program that a closed pipe stopped: 128 + SIGPIPE.
constexpr int kClosedPipeStatus = 141;

// `words` GPT-2 tokens: "the" and then " the" (one token each).
std::string the_times(int words) {
  std::string text = "the";
  for (int i = 1; i < words; ++i) text += " the";
  return text;
}

// Runs attn through /bin/sh so that `script` can redirect or pipe it: in the script, "$0" is
// the attn binary and "$@" its arguments.
CommandResult run_shell(const std::string& script, const std::vector<std::string>& args) {
  std::vector<std::string> sh_args = {"-c", script, attn_binary().string()};
  sh_args.insert(sh_args.end(), args.begin(), args.end());
  return run_program("/bin/sh", sh_args);
}

// attn with standard output on /dev/full.
CommandResult run_to_full_disk(const std::vector<std::string>& args) {
  return run_shell("exec \"$0\" \"$@\" > /dev/full", args);
}

// attn writing into a pipe whose reader stops after 50 bytes. The result's exit status is
// attn's own (written to a file by the shell), its stderr attn's, and its stdout what the
// reader got.
CommandResult run_into_closed_pipe(const std::filesystem::path& status_file,
                                   const std::vector<std::string>& args) {
  CommandResult result = run_shell(
      "{ \"$0\" \"$@\"; echo $? > " + shell_quote(status_file.string()) + "; } | head -c 50", args);
  result.exit_status = std::stoi(read_file(status_file));
  return result;
}

// The hidden temporary files (".NAME.XXXXXX") left in a folder.
std::vector<std::string> temporaries(const std::filesystem::path& dir) {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(".") && name.size() > 7 && name[name.size() - 7] == '.') {
      found.push_back(name);
    }
  }
  return found;
}

void expect_success(const CommandResult& result) {
  ASSERT_FALSE(result.signaled) << describe(result);
  ASSERT_FALSE(result.timed_out) << describe(result);
  ASSERT_EQ(result.exit_status, 0) << describe(result);
}

class HostileCliTest : public HostileTest {
 protected:
  // Inputs for one test, kept out of the scratch folder when a run is meant to write files.
  std::filesystem::path write_input(const std::string& name, const std::string& contents) {
    const auto path = scratch_ / name;
    write_file(path, contents);
    return path;
  }

  // Output files of one test: runs that write there use run_attn, not run().
  TempDir outputs_;
  const std::string gpt2_ = shipped_model("tiny-gpt2-brown").string();
  const std::string bert_ = shipped_model("tiny-bert-brown").string();
};

// ---- Commands and --version ----

TEST_F(HostileCliTest, UnknownCommandListsTheCommands) {
  expect_clean_failure(
      run({"foo"}), kUsageError,
      {"unknown command 'foo'",
       "(commands: generate, chat, translate, classify, rerank, ner, fill-mask, embed, similarity, "
       "attention, heads, lens, ablate, tokenize, info, perplexity, bench, serve)"});
}

TEST_F(HostileCliTest, TranslateNeedsAModel) {
  expect_clean_failure(run({"translate", "The jury"}), kUsageError, {"--model is required"});
}

TEST_F(HostileCliTest, NoCommandListsTheCommands) {
  expect_clean_failure(run({}), kUsageError, {"no command given", "fill-mask"});
}

TEST_F(HostileCliTest, UnknownCommandWithControlCharactersStaysOneLine) {
  const CommandResult result = run({"gen\nerate\x1b[31m"});
  expect_clean_failure(result, kUsageError, {"unknown command 'gen\\x0Aerate\\x1B[31m'"});
  EXPECT_EQ(result.err.find('\x1b'), std::string::npos) << describe(result);
}

TEST_F(HostileCliTest, VersionPrintsTheVersion) {
  const CommandResult result = run({"--version"});
  expect_success(result);
  EXPECT_TRUE(std::regex_match(result.out, std::regex("attn [0-9]+\\.[0-9]+\\.[0-9]+\n")))
      << describe(result);
  EXPECT_EQ(result.err, "");
}

// ---- Bad option values: one line naming the option and the rule, exit status 2 ----

class BadOptionValueTest : public HostileCliTest,
                           public ::testing::WithParamInterface<OptionCase> {};

TEST_P(BadOptionValueTest, UsageErrorNamingTheOptionAndTheRule) {
  expect_clean_failure(run(GetParam().args), kUsageError, {GetParam().expected});
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadOptionValueTest,
    ::testing::Values(
        OptionCase{"GenerateExponentTokens",
                   {"generate", "-p", "hi", "-n", "1e3"},
                   "--max-new-tokens: must be a whole number, got 1e3"},
        OptionCase{"GenerateFractionalTokens",
                   {"generate", "-p", "hi", "-n", "2.5"},
                   "--max-new-tokens: must be a whole number, got 2.5"},
        OptionCase{"GenerateTokensPast32Bits",
                   {"generate", "-p", "hi", "-n", "99999999999"},
                   "--max-new-tokens: must be a whole number from -2147483648 to 2147483647, "
                   "got 99999999999"},
        OptionCase{"GenerateExponentTopK",
                   {"generate", "-p", "hi", "--top-k", "1e2"},
                   "--top-k: must be a whole number, got 1e2"},
        OptionCase{"GenerateSeedBelowMinusOne",
                   {"generate", "-p", "hi", "--seed", "-2"},
                   "--seed: must be -1 (random) or from 0 to 9007199254740991, got -2"},
        OptionCase{"GenerateSeedPast53Bits",
                   {"generate", "-p", "hi", "--seed", "9007199254740992"},
                   "--seed: must be -1 (random) or from 0 to 9007199254740991, got "
                   "9007199254740992"},
        OptionCase{"GenerateWordSeed",
                   {"generate", "-p", "hi", "--seed", "lucky"},
                   "--seed: must be a whole number, got lucky"},
        OptionCase{"GenerateInfiniteRepeatPenalty",
                   {"generate", "-p", "hi", "--repeat-penalty", "inf"},
                   "--repeat-penalty: must be finite, got inf"},
        OptionCase{"FillMaskFractionalTopK",
                   {"fill-mask", "a [MASK].", "-k", "1.5"},
                   "--top-k: must be a whole number, got 1.5"},
        OptionCase{"FillMaskZeroBatchTokens",
                   {"fill-mask", "--file", "-", "--batch-tokens", "0"},
                   "--batch-tokens: must be > 0, got 0"},
        OptionCase{"FillMaskHugeBatchTokens",
                   {"fill-mask", "--file", "-", "--batch-tokens", "1000000"},
                   "--batch-tokens: must be <= 16384, got 1000000"},
        OptionCase{"EmbedZeroBatchTokens",
                   {"embed", "--pooling", "mean", "--batch-tokens", "0", "a"},
                   "--batch-tokens: must be > 0, got 0"},
        OptionCase{"BenchExponentPromptTokens",
                   {"bench", "-p", "1e3"},
                   "--prompt-tokens: must be a whole number, got 1e3"},
        OptionCase{
            "BenchZeroRepetitions", {"bench", "-r", "0"}, "--repetitions: must be > 0, got 0"},
        OptionCase{"BenchMillionRepetitions",
                   {"bench", "-r", "1000000"},
                   "--repetitions: must be <= 1000, got 1000000"},
        OptionCase{"BenchFractionalBatch",
                   {"bench", "--batch", "0.5"},
                   "--batch: must be a whole number, got 0.5"},
        OptionCase{"AttentionExponentPrecision",
                   {"attention", "hi", "--precision", "1e1"},
                   "--precision: must be a whole number, got 1e1"},
        OptionCase{"AttentionPrecisionTen",
                   {"attention", "hi", "--precision", "10"},
                   "--precision: must be from 1 to 9, got 10"}),
    [](const auto& info) { return std::string(info.param.test_name); });

// --seed -1 asks for a random seed, as no --seed does: reported, below 2^53, and repeatable.
TEST_F(HostileCliTest, SeedMinusOneIsARandomSeed) {
  const std::vector<std::string> args = {"generate", "-p",           "The jury", "-n",
                                         "8",        "--ignore-eos", "--json",   "-q"};
  std::vector<std::string> random = args;
  random.insert(random.end(), {"--seed", "-1"});
  const CommandResult first = run(random);
  expect_success(first);
  const CommandResult second = run(random);
  expect_success(second);
  const json out = json::parse(first.out);
  const uint64_t seed = out["seed"].get<uint64_t>();
  EXPECT_LT(seed, uint64_t(1) << 53);
  EXPECT_NE(json::parse(second.out)["seed"].get<uint64_t>(), seed) << "a fresh seed each run";
  std::vector<std::string> again = args;
  again.insert(again.end(), {"--seed", std::to_string(seed)});
  const CommandResult repeated = run(again);
  expect_success(repeated);
  EXPECT_EQ(json::parse(repeated.out)["generated_ids"], out["generated_ids"]);
  EXPECT_EQ(json::parse(repeated.out)["seed"], out["seed"]);
}

TEST_F(HostileCliTest, HugeButFiniteTemperatureIsAccepted) {
  const CommandResult result = run(
      {"generate", "-p", "The jury", "-n", "3", "--temp", "1e300", "--ignore-eos", "--json", "-q"});
  expect_success(result);
  EXPECT_EQ(json::parse(result.out)["generated_ids"].size(), 3u);
}

// ---- Bad input data is exit status 1 wherever it came from ----

struct InputCase {
  const char* test_name;
  std::vector<std::string> args;
  std::string stdin_text;  // written to a file for standard input; "" = /dev/null
  std::string expected;
};

std::ostream& operator<<(std::ostream& out, const InputCase& c) { return out << c.test_name; }

class BadInputDataTest : public HostileCliTest, public ::testing::WithParamInterface<InputCase> {};

// "FILE" in the arguments and the expected message is replaced by a file holding `stdin_text`,
// for the --file cases.
TEST_P(BadInputDataTest, ExitStatusOneNamingWhereTheTextCameFrom) {
  const InputCase& c = GetParam();
  const auto input = write_input("input.txt", c.stdin_text);
  std::vector<std::string> args = c.args;
  for (std::string& arg : args) {
    if (arg == "FILE") arg = input.string();
  }
  std::string expected = c.expected;
  if (const std::size_t at = expected.find("FILE"); at != std::string::npos) {
    expected.replace(at, 4, input.string());
  }
  const CommandResult result = run(args, c.stdin_text.empty() ? "/dev/null" : input);
  expect_clean_failure(result, kBadInput, {expected});
  EXPECT_EQ(result.err.find("text: text:"), std::string::npos) << describe(result);
}

const std::string kBadUtf8 = "ab\xc0\xafz [MASK]";

INSTANTIATE_TEST_SUITE_P(
    InvalidUtf8, BadInputDataTest,
    ::testing::Values(
        InputCase{"GeneratePrompt", {"generate", "-p", kBadUtf8}, "", "--prompt: invalid UTF-8"},
        InputCase{"GenerateFile",
                  {"generate", "--file", "FILE"},
                  kBadUtf8,
                  "--file FILE: line 1: invalid UTF-8 at byte 2"},
        InputCase{"GeneratePromptFile",
                  {"generate", "--prompt-file", "FILE"},
                  kBadUtf8,
                  "--prompt-file FILE: invalid UTF-8 at byte 2"},
        InputCase{"GenerateStandardInput",
                  {"generate"},
                  kBadUtf8,
                  "standard input: line 1: invalid UTF-8 at byte 2"},
        InputCase{"FillMaskText", {"fill-mask", kBadUtf8}, "", "argument: invalid UTF-8 at byte 2"},
        InputCase{"FillMaskPair",
                  {"fill-mask", "a [MASK].", "--pair", kBadUtf8},
                  "",
                  "--pair: invalid UTF-8 at byte 2"},
        InputCase{"FillMaskFileLine",
                  {"fill-mask", "--file", "FILE"},
                  kBadUtf8 + "\n",
                  "--file FILE: line 1: invalid UTF-8 at byte 2"},
        InputCase{"EmbedText",
                  {"embed", "--pooling", "mean", kBadUtf8},
                  "",
                  "argument: invalid UTF-8 at byte 2"},
        InputCase{"EmbedFileLine",
                  {"embed", "--pooling", "mean", "--file", "FILE"},
                  kBadUtf8 + "\n",
                  "--file FILE: line 1: invalid UTF-8 at byte 2"},
        InputCase{"SimilarityText",
                  {"similarity", "--pooling", "mean", "a", kBadUtf8},
                  "",
                  "argument 2: invalid UTF-8 at byte 2"},
        InputCase{
            "AttentionText", {"attention", kBadUtf8}, "", "argument: invalid UTF-8 at byte 2"},
        InputCase{"AttentionPair",
                  {"attention", "-m", shipped_model("tiny-bert-brown"), "hi", "--pair", kBadUtf8},
                  "",
                  "--pair: invalid UTF-8 at byte 2"},
        InputCase{"TokenizeText", {"tokenize", kBadUtf8}, "", "argument: invalid UTF-8 at byte 2"},
        InputCase{"TokenizePair",
                  {"tokenize", "-m", shipped_model("tiny-bert-brown"), "hi", "--pair", kBadUtf8},
                  "",
                  "--pair: invalid UTF-8 at byte 2"}),
    [](const auto& info) { return std::string(info.param.test_name); });

INSTANTIATE_TEST_SUITE_P(
    LongerThanTheContext, BadInputDataTest,
    ::testing::Values(
        InputCase{"GeneratePrompt",
                  {"generate", "-p", the_times(600)},
                  "",
                  "--prompt: the prompt is 600 tokens, longer than the context of 512 (use "
                  "--truncate"},
        InputCase{"GenerateFile",
                  {"generate", "--file", "FILE"},
                  the_times(600),
                  "--file FILE: line 1: the prompt is 600 tokens, longer than the context of 512"},
        InputCase{"GeneratePromptFile",
                  {"generate", "--prompt-file", "FILE"},
                  the_times(600),
                  "--prompt-file FILE: the prompt is 600 tokens, longer than the context of 512"},
        InputCase{"AttentionText",
                  {"attention", the_times(600)},
                  "",
                  "argument: 600 tokens, more than the model's context of 512"},
        InputCase{"FillMaskText",
                  {"fill-mask", "[MASK] " + the_times(600)},
                  "",
                  "max_position_embeddings"}),
    [](const auto& info) { return std::string(info.param.test_name); });

INSTANTIATE_TEST_SUITE_P(
    Empty, BadInputDataTest,
    ::testing::Values(
        // GPT-2 gives "" no tokens; BERT gives it [CLS] [SEP], but no mask to fill. (A bad text
        // among good ones: TextCommandTest.BadLineAmongGoodOnes.)
        InputCase{
            "GeneratePrompt", {"generate", "-p", ""}, "", "--prompt: the text gives no tokens\n"},
        InputCase{"AttentionText", {"attention", ""}, "", "argument: the text gives no tokens\n"},
        InputCase{
            "FillMaskText", {"fill-mask", ""}, "", "argument: no [MASK] token in the input\n"}),
    [](const auto& info) { return std::string(info.param.test_name); });

TEST_F(HostileCliTest, GenerateFileIsAFolder) {
  expect_clean_failure(run({"generate", "--file", scratch_.path().string()}), kBadInput,
                       {"--file " + scratch_.path().string() + ": is a folder"});
}

TEST_F(HostileCliTest, FillMaskFileIsAFolder) {
  expect_clean_failure(run({"fill-mask", "--file", scratch_.path().string()}), kBadInput,
                       {"--file " + scratch_.path().string() + ": is a folder"});
}

TEST_F(HostileCliTest, FillMaskFileIsADevice) {
  expect_clean_failure(run({"fill-mask", "--file", "/dev/zero"}), kBadInput,
                       {"--file /dev/zero: not a regular file or pipe"});
}

TEST_F(HostileCliTest, FillMaskFileOfBlankLinesOnly) {
  const auto input = write_input("blank.txt", "\n  \n\t\n");
  expect_clean_failure(run({"fill-mask", "--file", input.string()}), kBadInput,
                       {"--file " + input.string() + ": no text (only blank lines)\n"});
}

TEST_F(HostileCliTest, FillMaskFileSkipsBlankLinesAndKeepsLineNumbers) {
  const auto input = write_input("inputs.txt", "\nIt was a [MASK] day.\n \r\n\nHe [MASK] home.\n");
  const CommandResult result = run({"fill-mask", "--json", "--file", input.string()});
  expect_success(result);
  EXPECT_EQ(result.err, "");
  std::istringstream lines(result.out);
  std::vector<int> line_numbers;
  for (std::string line; std::getline(lines, line);) {
    line_numbers.push_back(json::parse(line)["line"]);
  }
  EXPECT_EQ(line_numbers, std::vector<int>({2, 5}));
  // The text output skips them too: each text, then its table, a blank line between texts.
  const CommandResult text = run({"fill-mask", "--file", input.string()});
  expect_success(text);
  EXPECT_EQ(text.err, "");
  EXPECT_TRUE(text.out.starts_with("It was a [MASK] day.\n[MASK] at token 4:\n")) << text.out;
  EXPECT_NE(text.out.find("\n\nHe [MASK] home.\n[MASK] at token 2:\n"), std::string::npos)
      << text.out;
}

// ---- A full standard output: exit status 1, one line, for every command ----

struct CommandCase {
  const char* test_name;
  std::vector<std::string> args;
};

std::ostream& operator<<(std::ostream& out, const CommandCase& c) { return out << c.test_name; }

class FullStdoutTest : public HostileCliTest, public ::testing::WithParamInterface<CommandCase> {};

TEST_P(FullStdoutTest, IsAnErrorNamingStdout) {
  std::vector<std::string> args = GetParam().args;
  for (std::string& arg : args) {
    if (arg == "FILE") arg = write_input("inputs.txt", "It was a [MASK] day.\n").string();
  }
  const CommandResult result = run_to_full_disk(args);
  expect_clean_failure(result, kBadInput, {"stdout: No space left on device"});
  EXPECT_EQ(result.err, kFullStdout);
}

INSTANTIATE_TEST_SUITE_P(
    Commands, FullStdoutTest,
    ::testing::Values(
        CommandCase{"GenerateStreaming", {"generate", "-p", "The jury", "-n", "5", "-q"}},
        CommandCase{"GenerateJson", {"generate", "-p", "The jury", "-n", "5", "--json", "-q"}},
        CommandCase{"FillMaskText", {"fill-mask", "It was a [MASK] day."}},
        CommandCase{"FillMaskJson", {"fill-mask", "It was a [MASK] day.", "--json"}},
        CommandCase{"FillMaskFile", {"fill-mask", "--file", "FILE"}},
        CommandCase{"Embed", {"embed", "--pooling", "mean", "It was a day."}},
        CommandCase{"EmbedJson", {"embed", "--pooling", "mean", "It was a day.", "--json"}},
        CommandCase{"EmbedFile", {"embed", "--pooling", "mean", "--file", "FILE"}},
        CommandCase{"Similarity", {"similarity", "--pooling", "mean", "A day.", "A night."}},
        CommandCase{"Tokenize", {"tokenize", "Hello world"}},
        CommandCase{"TokenizeJson", {"tokenize", "Hello world", "--json"}},
        CommandCase{"Info", {"info"}}, CommandCase{"InfoJson", {"info", "--json"}},
        CommandCase{"Attention", {"attention", "The cat sat"}},
        CommandCase{"AttentionHtml", {"attention", "The cat sat", "--format", "html"}},
        CommandCase{"Bench", {"bench", "-p", "8", "-n", "2", "-r", "1", "-q"}},
        CommandCase{"Help", {"--help"}}),
    [](const auto& info) { return std::string(info.param.test_name); });

// ---- A closed pipe: quiet, status 141, never a signal ----

TEST_F(HostileCliTest, GenerateIntoAClosedPipeEndsQuietly) {
  const CommandResult result = run_into_closed_pipe(
      outputs_ / "status", {"generate", "-p", "The jury", "-n", "300", "--ignore-eos", "-q"});
  EXPECT_EQ(result.exit_status, kClosedPipeStatus) << describe(result);
  EXPECT_EQ(result.err, "");
  EXPECT_EQ(result.out.size(), 50u);
}

TEST_F(HostileCliTest, AttentionIntoAClosedPipeEndsQuietly) {
  const CommandResult result = run_into_closed_pipe(
      outputs_ / "status", {"attention", the_times(500), "--format", "bertviz", "-q"});
  EXPECT_EQ(result.exit_status, kClosedPipeStatus) << describe(result);
  EXPECT_EQ(result.err, "");
}

TEST_F(HostileCliTest, FillMaskFileIntoAClosedPipeEndsQuietly) {
  std::string lines;
  for (int i = 0; i < 300; ++i) lines += "It was a [MASK] day, said the [MASK].\n";
  const auto input = write_input("inputs.txt", lines);
  const CommandResult result =
      run_into_closed_pipe(outputs_ / "status", {"fill-mask", "--file", input.string()});
  EXPECT_EQ(result.exit_status, kClosedPipeStatus) << describe(result);
  EXPECT_EQ(result.err, "");
}

TEST_F(HostileCliTest, EmbedFileIntoAClosedPipeEndsQuietly) {
  std::string lines;
  for (int i = 0; i < 300; ++i) lines += "It was a fine day, said the man.\n";
  const auto input = write_input("inputs.txt", lines);
  const CommandResult result = run_into_closed_pipe(
      outputs_ / "status", {"embed", "--pooling", "mean", "--file", input.string()});
  EXPECT_EQ(result.exit_status, kClosedPipeStatus) << describe(result);
  EXPECT_EQ(result.err, "");
}

TEST_F(HostileCliTest, GenerateIntoAClosedPipeLeavesNoAttentionFile) {
  const auto steps = outputs_ / "steps.jsonl";
  const CommandResult result = run_into_closed_pipe(
      outputs_ / "status", {"generate", "-p", "The jury", "-n", "300", "--ignore-eos", "-q",
                            "--attention-out", steps.string()});
  EXPECT_EQ(result.exit_status, kClosedPipeStatus) << describe(result);
  EXPECT_FALSE(std::filesystem::exists(steps));
  EXPECT_EQ(temporaries(outputs_.path()), std::vector<std::string>());
}

// ---- Output files that are not regular files ----

TEST_F(HostileCliTest, AttentionToDevNullLeavesDevNullADevice) {
  struct stat before {};
  ASSERT_EQ(::stat("/dev/null", &before), 0);
  expect_success(run_attn({"attention", "The cat sat", "-o", "/dev/null"}));
  struct stat after {};
  ASSERT_EQ(::stat("/dev/null", &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode));
  EXPECT_EQ(after.st_rdev, before.st_rdev);
  EXPECT_EQ(after.st_ino, before.st_ino);
  for (const std::string& name : temporaries("/dev")) EXPECT_FALSE(name.starts_with(".null."));
}

TEST_F(HostileCliTest, GenerateAttentionOutToDevNullLeavesDevNullADevice) {
  struct stat before {};
  ASSERT_EQ(::stat("/dev/null", &before), 0);
  expect_success(
      run_attn({"generate", "-p", "The jury", "-n", "3", "-q", "--attention-out", "/dev/null"}));
  struct stat after {};
  ASSERT_EQ(::stat("/dev/null", &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode));
  EXPECT_EQ(after.st_ino, before.st_ino);
}

TEST_F(HostileCliTest, AttentionToDevFullIsAnErrorNamingTheFile) {
  expect_clean_failure(run({"attention", "The cat sat", "-o", "/dev/full"}), kBadInput,
                       {"-o /dev/full: cannot write: No space left on device"});
}

TEST_F(HostileCliTest, AttentionToAFifoWithAReader) {
  const auto fifo = outputs_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto received = outputs_ / "received.json";
  const CommandResult result =
      run_shell("cat " + shell_quote(fifo.string()) + " > " + shell_quote(received.string()) +
                    " & \"$0\" \"$@\"; status=$?; wait; exit $status",
                {"attention", "The cat sat", "-o", fifo.string()});
  expect_success(result);
  const CommandResult direct = run_attn({"attention", "The cat sat"});
  expect_success(direct);
  EXPECT_EQ(read_file(received), direct.out);
  struct stat info {};
  ASSERT_EQ(::stat(fifo.c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode));
  EXPECT_EQ(temporaries(outputs_.path()), std::vector<std::string>());
}

TEST_F(HostileCliTest, AttentionToDevStdoutIsStandardOutput) {
  const CommandResult through_path = run_attn({"attention", "The cat sat", "-o", "/dev/stdout"});
  expect_success(through_path);
  const CommandResult direct = run_attn({"attention", "The cat sat"});
  EXPECT_EQ(through_path.out, direct.out);
  EXPECT_FALSE(through_path.out.empty());
}

// -o is on every command now: a path that is standard output writes there, as no -o does.
TEST_F(HostileCliTest, EveryCommandsOutputToDevStdoutIsStandardOutput) {
  const std::vector<std::vector<std::string>> commands = {
      {"generate", "-p", "The jury", "-n", "4", "--temp", "0", "--ignore-eos", "-q"},
      {"tokenize", "The jury said"},
      {"fill-mask", "-m", bert_, "The [MASK] said."},
      {"fill-mask", "-m", bert_, "The [MASK] said.", "It [MASK]."},
      {"embed", "-m", bert_, "--pooling", "mean", "The jury said"},
      {"perplexity", "-p", "The jury said it did find that", "-q"},
      {"info"},
  };
  for (const auto& args : commands) {
    const CommandResult direct = run_attn(args);
    expect_success(direct);
    EXPECT_FALSE(direct.out.empty()) << describe(direct);
    for (const char* path : {"/dev/stdout", "/dev/fd/1", "-"}) {
      std::vector<std::string> with_path = args;
      with_path.insert(with_path.end(), {"-o", path});
      const CommandResult through_path = run_attn(with_path);
      expect_success(through_path);
      // perplexity's speed changes from run to run.
      const std::regex speed("[0-9]+ tokens/s");
      EXPECT_EQ(std::regex_replace(through_path.out, speed, "N tokens/s"),
                std::regex_replace(direct.out, speed, "N tokens/s"))
          << args[0] << " -o " << path;
    }
  }
}

TEST_F(HostileCliTest, AttentionToADescriptorAppendsWhereTheShellLeftOff) {
  const auto log = outputs_ / "log.txt";
  write_file(log, "earlier lines\n");
  expect_success(run_shell("exec \"$0\" \"$@\" 3>> " + shell_quote(log.string()),
                           {"attention", "The cat sat", "-o", "/dev/fd/3"}));
  const CommandResult direct = run_attn({"attention", "The cat sat"});
  EXPECT_EQ(read_file(log), "earlier lines\n" + direct.out);
}

TEST_F(HostileCliTest, AttentionToAPipeDescriptor) {
  const auto received = outputs_ / "received.json";
  expect_success(
      run_shell("\"$0\" \"$@\" 3>&1 > /dev/null | cat > " + shell_quote(received.string()),
                {"attention", "The cat sat", "-o", "/dev/fd/3"}));
  const CommandResult direct = run_attn({"attention", "The cat sat"});
  EXPECT_EQ(read_file(received), direct.out);
}

TEST_F(HostileCliTest, AttentionToASymlinkReplacesTheFileItPointsTo) {
  const auto real = outputs_ / "real.json";
  const auto link = outputs_ / "link.json";
  write_file(real, "old contents");
  std::filesystem::permissions(real, std::filesystem::perms(0640));
  std::filesystem::create_symlink("real.json", link);
  expect_success(run_attn({"attention", "The cat sat", "-o", link.string()}));
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(std::filesystem::read_symlink(link), "real.json");
  EXPECT_EQ(json::parse(read_file(real))["tokens"], json({"The", "\u0120cat", "\u0120sat"}));
  EXPECT_EQ(std::filesystem::status(real).permissions(), std::filesystem::perms(0640));
  EXPECT_EQ(temporaries(outputs_.path()), std::vector<std::string>());
}

TEST_F(HostileCliTest, AttentionToADanglingSymlinkCreatesItsTarget) {
  const auto link = outputs_ / "link.json";
  std::filesystem::create_symlink("new.json", link);
  expect_success(run_attn({"attention", "The cat sat", "-o", link.string()}));
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_TRUE(std::filesystem::is_regular_file(outputs_ / "new.json"));
}

TEST_F(HostileCliTest, AttentionToASymlinkLoop) {
  // In outputs_: the scratch folder's snapshot cannot walk a loop.
  const auto link = outputs_ / "loop.json";
  std::filesystem::create_symlink("loop.json", link);
  expect_clean_failure(run_attn({"attention", "The cat sat", "-o", link.string()}), kBadInput,
                       {"-o " + link.string(), "symbolic links"});
  EXPECT_EQ(temporaries(outputs_.path()), std::vector<std::string>());
}

TEST_F(HostileCliTest, AttentionOutputNameOver255Bytes) {
  const std::string name = (scratch_ / std::string(300, 'x')).string();
  expect_clean_failure(run({"attention", "The cat sat", "-o", name}), kBadInput,
                       {"-o ", "the name is too long", "255 bytes"});
}

TEST_F(HostileCliTest, AttentionOutputNameOf250BytesIsWritten) {
  // Valid, though ".NAME.XXXXXX" would not be: the temporary's name is cut short.
  const auto path = outputs_ / std::string(250, 'y');
  expect_success(run_attn({"attention", "The cat sat", "-o", path.string()}));
  EXPECT_TRUE(std::filesystem::is_regular_file(path));
  EXPECT_EQ(temporaries(outputs_.path()), std::vector<std::string>());
}

TEST_F(HostileCliTest, GenerateAttentionOutInAMissingFolder) {
  const std::string path = (scratch_ / "no-such-folder" / "steps.jsonl").string();
  expect_clean_failure(run({"generate", "-p", "hi", "-n", "2", "--attention-out", path}), kBadInput,
                       {"--attention-out " + path, "No such file or directory"});
}

TEST_F(HostileCliTest, OutputPathWithANewlineStaysOneLine) {
  const std::string path = (scratch_ / "no\nfolder" / "out.json").string();
  expect_clean_failure(run({"attention", "hi", "-o", path}), kBadInput, {"no\\x0Afolder"});
}

// ---- Signals while an output file is written ----

// Starts attn with its output on /dev/null and the default signal dispositions.
pid_t start_attn(const std::vector<std::string>& args) {
  std::vector<std::string> strings = {attn_binary().string()};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : strings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
    for (int signal_number : {SIGINT, SIGTERM, SIGPIPE}) ::signal(signal_number, SIG_DFL);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// Waits until a temporary file in `dir` holds at least `min_bytes`; false if attn ended first.
bool wait_for_temporary(pid_t pid, const std::filesystem::path& dir, std::uintmax_t min_bytes) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    for (const std::string& name : temporaries(dir)) {
      std::error_code ignored;
      const std::uintmax_t size = std::filesystem::file_size(dir / name, ignored);
      if (!ignored && size >= min_bytes) return true;
    }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return false;
}

// Signals attn while it writes `output`; it must die of the signal, leave no temporary file,
// and leave the old contents of `output` in place.
void expect_signal_leaves_no_temporary(const std::filesystem::path& dir,
                                       const std::filesystem::path& output,
                                       const std::vector<std::string>& args, int signal_number,
                                       std::uintmax_t min_bytes) {
  // A run can finish before it is caught writing, on a busy machine: try a few times.
  for (int attempt = 0; attempt < 5; ++attempt) {
    write_file(output, "old contents");
    const pid_t pid = start_attn(args);
    ASSERT_GT(pid, 0);
    if (!wait_for_temporary(pid, dir, min_bytes)) continue;
    ASSERT_EQ(::kill(pid, signal_number), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == signal_number)
        << "wait status " << status;
    EXPECT_EQ(temporaries(dir), std::vector<std::string>());
    EXPECT_EQ(read_file(output), "old contents");
    return;
  }
  FAIL() << "attn finished every time before it could be signalled while writing";
}

TEST_F(HostileCliTest, CtrlCDuringABigBertvizDumpLeavesNoTemporary) {
  const auto output = outputs_ / "big.json";
  std::string text;  // 500 varied tokens: about 30 MB of weights at 9 digits
  for (int i = 0; i < 100; ++i) text += " the jury said it was";
  expect_signal_leaves_no_temporary(
      outputs_.path(), output,
      {"attention", text, "--format", "bertviz", "--precision", "9", "-o", output.string()}, SIGINT,
      1 << 20);
}

TEST_F(HostileCliTest, SigtermDuringGenerationLeavesNoAttentionTemporary) {
  const auto output = outputs_ / "steps.jsonl";
  expect_signal_leaves_no_temporary(outputs_.path(), output,
                                    {"generate", "-p", "The jury", "-n", "400", "--ignore-eos",
                                     "--no-cache", "--attention-out", output.string()},
                                    SIGTERM, 0);
}

// ---- The context boundary (the tiny GPT-2's n_positions is 512) ----

// The --json output of a successful run, or an empty object (not const: reading a missing key
// of a mutable json gives null, where a const one would assert).
json generate_json(const CommandResult& result) {
  EXPECT_EQ(result.exit_status, 0) << describe(result);
  return result.exit_status == 0 ? json::parse(result.out) : json::object();
}

TEST_F(HostileCliTest, PromptOfExactlyTheContextGivesOneToken) {
  const auto prompt = write_input("prompt.txt", the_times(512));
  json out = generate_json(
      run({"generate", "--file", prompt.string(), "--json", "--temp", "0", "--ignore-eos"}));
  EXPECT_EQ(out["prompt_ids"].size(), 512u);
  EXPECT_EQ(out["generated_ids"].size(), 1u);
  EXPECT_EQ(out["stop_reason"], "context");
}

TEST_F(HostileCliTest, PromptOfExactlyTheContextWithoutCache) {
  const auto prompt = write_input("prompt.txt", the_times(512));
  const std::vector<std::string> args = {"generate", "--file", prompt.string(), "--json",
                                         "--temp",   "0",      "--ignore-eos"};
  json cached = generate_json(run(args));
  std::vector<std::string> uncached_args = args;
  uncached_args.push_back("--no-cache");
  json uncached = generate_json(run(uncached_args));
  EXPECT_EQ(uncached["stop_reason"], "context");
  EXPECT_EQ(uncached["generated_ids"], cached["generated_ids"]);
}

TEST_F(HostileCliTest, StreamingAtTheContextStopsCleanly) {
  const auto prompt = write_input("prompt.txt", the_times(512));
  const CommandResult result =
      run({"generate", "--file", prompt.string(), "--temp", "0", "--ignore-eos"});
  expect_success(result);
  EXPECT_TRUE(result.out.starts_with(the_times(512))) << describe(result);
  EXPECT_NE(result.err.find("stop: context"), std::string::npos) << describe(result);
}

TEST_F(HostileCliTest, GenerationReachingTheContextStopsThere) {
  const auto prompt = write_input("prompt.txt", the_times(500));
  std::vector<std::string> args = {"generate", "--file", prompt.string(), "-n", "100", "--json",
                                   "--temp",   "0",      "--ignore-eos"};
  json cached = generate_json(run(args));
  // Positions 0..511 can be run, and the pass over all 512 predicts one more token.
  EXPECT_EQ(cached["generated_ids"].size(), 13u);
  EXPECT_EQ(cached["stop_reason"], "context");
  args.push_back("--no-cache");
  json uncached = generate_json(run(args));
  EXPECT_EQ(uncached["generated_ids"], cached["generated_ids"]);
  EXPECT_EQ(uncached["stop_reason"], "context");
}

TEST_F(HostileCliTest, AttentionOutAtTheContextHasOneLinePerToken) {
  const auto prompt = write_input("prompt.txt", the_times(510));
  const auto steps = outputs_ / "steps.jsonl";
  json out =
      generate_json(run_attn({"generate", "--file", prompt.string(), "--json", "--temp", "0",
                              "--ignore-eos", "--layers", "0", "--attention-out", steps.string()}));
  EXPECT_EQ(out["stop_reason"], "context");
  const std::string lines = read_file(steps);
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), long(out["generated_ids"].size()));
}

TEST_F(HostileCliTest, TruncateWithMoreNewTokensThanTheContextKeepsHalf) {
  const auto prompt = write_input("prompt.txt", the_times(600));
  const CommandResult result = run({"generate", "--file", prompt.string(), "--truncate", "-n",
                                    "600", "--json", "--temp", "0", "--ignore-eos"});
  json out = generate_json(result);
  EXPECT_EQ(out["prompt_ids"].size(), 256u);
  EXPECT_EQ(out["stop_reason"], "context");
  EXPECT_EQ(out["generated_ids"].size(), 512u - 256u + 1u);
  EXPECT_NE(result.err.find("truncated to the last 256"), std::string::npos) << describe(result);
  EXPECT_NE(result.err.find("-n 600 does not fit"), std::string::npos) << describe(result);
}

// ---- Benchmark sizes ----

TEST_F(HostileCliTest, BenchSizesPast32BitsAreRefusedBeforeAllocating) {
  expect_clean_failure(run({"bench", "-p", "2147483000", "-n", "2000"}), kUsageError,
                       {"-p + -n is 2147485000 tokens", "context of 512"});
}

TEST_F(HostileCliTest, BenchOneTokenPastTheContext) {
  expect_clean_failure(run({"bench", "-p", "512", "-n", "1"}), kUsageError,
                       {"-p + -n is 513 tokens", "context of 512"});
}

TEST_F(HostileCliTest, BenchEncoderBatchPast32Bits) {
  expect_clean_failure(run({"bench", "-m", bert_, "-p", "512", "--batch", "2147483647"}),
                       kUsageError,
                       {"--batch x -p is 1099511627264 tokens", "limit of 16384 tokens"});
}

TEST_F(HostileCliTest, BenchEncoderPromptPastTheContext) {
  expect_clean_failure(run({"bench", "-m", bert_, "-p", "600"}), kUsageError,
                       {"-p is 600 tokens", "max_position_embeddings of 512"});
}

// ---- Nothing escapes main ----

TEST_F(HostileCliTest, InfoOnAFolderNameThatIsNotUtf8) {
  const auto model = scratch_ / "model-\xff";
  std::filesystem::copy(shipped_model("tiny-gpt2-brown"), model);
  const CommandResult result = run({"info", "--json", "-m", model.string()});
  expect_success(result);
  EXPECT_EQ(json::parse(result.out)["model"], "model-\ufffd");
}

TEST_F(HostileCliTest, ModelPathLongerThanTheSystemAllows) {
  const std::string path = (scratch_ / std::string(5000, 'm')).string();
  expect_clean_failure(run({"info", "-m", path}), kBadInput, {"mmmm"});
}

}  // namespace
}  // namespace attn::test
