// Perplexity against Hugging Face's sliding-window recipe (../shared/golden/*/perplexity.jsonl):
// the same windows and scored tokens, mean NLL and perplexity within tolerance::kMeanNllRelative
// relative, per-token NLL within tolerance::kTokenNll (see tests/tolerances.h).

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>

#include "src/base/error.h"
#include "src/tasks/perplexity.h"
#include "tests/cli_util.h"
#include "tests/golden.h"
#include "tests/model_util.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

// `max_batch_rows` 1 runs each window on its own; the default packs the short ones.
void expect_perplexity_matches(const std::filesystem::path& model_dir, const GoldenSet& golden,
                               int max_batch_rows = PerplexityOptions{}.max_batch_rows) {
  const auto model = load_model(model_dir);
  double worst_relative = 0, worst_token = 0;
  for (const nlohmann::json& line : golden.jsonl("perplexity.jsonl")) {
    const auto ids = line["ids"].get<std::vector<int>>();
    ASSERT_EQ(model->tokenizer->encode(line["text"].get<std::string>()).ids, ids);
    const PerplexityOptions options{
        .window = line["window"], .stride = line["stride"], .max_batch_rows = max_batch_rows};
    const PerplexityResult result = perplexity(*model, ids, options);
    const std::string where = "doc " + line["doc"].dump() + " window " + line["window"].dump() +
                              " stride " + line["stride"].dump();

    ASSERT_EQ(result.windows.size(), line["windows"].size()) << where;
    for (std::size_t w = 0; w < result.windows.size(); ++w) {
      const auto& want = line["windows"][w];
      EXPECT_EQ(result.windows[w].begin, want[0].get<int>()) << where << " window " << w;
      EXPECT_EQ(result.windows[w].end, want[1].get<int>()) << where << " window " << w;
      EXPECT_EQ(result.windows[w].n_scored, want[2].get<int>()) << where << " window " << w;
    }
    EXPECT_EQ(result.n_scored, line["n_scored_tokens"].get<int>()) << where;
    for (const char* key : {"mean_nll", "ppl"}) {
      const double want = line[key].get<double>();
      const double got = std::string(key) == "ppl" ? result.perplexity() : result.mean_nll();
      const double relative = std::abs(got - want) / std::abs(want);
      worst_relative = std::max(worst_relative, relative);
      EXPECT_LE(relative, tolerance::kMeanNllRelative)
          << where << " " << key << ": " << got << ", golden " << want;
    }
    if (line.contains("token_nll")) {
      const auto& want = line["token_nll"];
      ASSERT_EQ(want.size(), result.token_nll.size()) << where;
      for (std::size_t p = 0; p < want.size(); ++p) {
        if (want[p].is_null()) {
          EXPECT_TRUE(std::isnan(result.token_nll[p])) << where << " position " << p;
          continue;
        }
        const double diff = std::abs(result.token_nll[p] - want[p].get<double>());
        worst_token = std::max(worst_token, diff);
        EXPECT_LE(diff, tolerance::kTokenNll) << where << " position " << p;
      }
    }
  }
  std::cout << model_dir.filename() << ": worst relative difference in mean NLL / perplexity "
            << worst_relative << ", worst per-token NLL difference " << worst_token << "\n";
}

TEST(PerplexityGolden, TinyGpt2) {
  ATTN_REQUIRE_SHARED();
  expect_perplexity_matches(shipped_model("tiny-gpt2-brown"), GoldenSet("tiny-gpt2-brown"));
}

TEST(PerplexityGolden, TinyGpt2OneWindowPerPass) {
  ATTN_REQUIRE_SHARED();
  expect_perplexity_matches(shipped_model("tiny-gpt2-brown"), GoldenSet("tiny-gpt2-brown"), 1);
}

TEST(PerplexityGolden, TinyLlama) {
  ATTN_REQUIRE_SHARED();
  expect_perplexity_matches(shared_dir() / "models/tiny-llama-brown",
                            GoldenSet("tiny-llama-brown"));
}

// Packed windows give each family the figures of one window per pass: positions (learned,
// rotary, partial rotary, ALiBi) restart in every window and attention stays within it.
TEST(PerplexityPacking, SameAsOneWindowPerPassForEveryDecoderFamily) {
  ATTN_REQUIRE_SHARED();
  for (const char* name : {"tiny-llama3-random", "tiny-neox-random", "tiny-phi-random",
                           "tiny-qwen2-random", "tiny-bloom-random"}) {
    const auto model = load_model(shared_dir() / "models" / name);
    std::vector<int> ids;
    for (int i = 0; i < 300; ++i) ids.push_back((i * 7919 + 13) % model->spec().vocab_size);
    const PerplexityOptions packed{.window = 48, .stride = 20, .max_batch_rows = 1024};
    PerplexityOptions one_by_one = packed;
    one_by_one.max_batch_rows = 1;
    const PerplexityResult a = perplexity(*model, ids, packed);
    const PerplexityResult b = perplexity(*model, ids, one_by_one);
    ASSERT_EQ(a.n_scored, b.n_scored) << name;
    for (std::size_t p = 1; p < ids.size(); ++p) {
      EXPECT_NEAR(a.token_nll[p], b.token_nll[p], tolerance::kOtherShapes)
          << name << " position " << p;
    }
  }
}

// What attn writes to standard error when that is a terminal (a pseudo-terminal here), standard
// output going to /dev/null.
std::string stderr_on_a_terminal(const std::vector<std::string>& args) {
  int terminal = -1, attn_side = -1;
  if (::openpty(&terminal, &attn_side, nullptr, nullptr, nullptr) != 0) {
    ADD_FAILURE() << "openpty failed";
    return {};
  }
  const std::string binary = attn_binary().string();
  std::vector<char*> argv = {const_cast<char*>(binary.c_str())};
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(attn_side, STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(attn_side);
  std::string out;
  char buffer[4096];
  // Reading the terminal side ends with EIO once attn has exited and closed its side.
  for (ssize_t n; (n = ::read(terminal, buffer, sizeof buffer)) > 0;) out.append(buffer, n);
  ::close(terminal);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  return out;
}

// A progress line on a terminal, ended by a newline; none with -q, and none in a pipe.
TEST(PerplexityCli, ProgressOnlyOnATerminal) {
  const std::vector<std::string> args = {"perplexity",
                                         "-p",
                                         "The jury said that the city council had done a good "
                                         "job in the election, and more.",
                                         "--window",
                                         "8",
                                         "-t",
                                         "1"};
  const std::string shown = stderr_on_a_terminal(args);
  EXPECT_NE(shown.find("perplexity: "), std::string::npos) << shown;
  EXPECT_NE(shown.find(" windows, "), std::string::npos) << shown;
  EXPECT_NE(shown.find("tokens/s"), std::string::npos) << shown;
  EXPECT_TRUE(shown.ends_with("\n")) << shown;
  std::vector<std::string> quiet = args;
  quiet.push_back("-q");
  EXPECT_EQ(stderr_on_a_terminal(quiet), "");
  const CommandResult piped = run_attn(args);
  ASSERT_EQ(piped.exit_status, 0) << describe(piped);
  EXPECT_EQ(piped.err, "");
}

// The command line gives the same figures, and --per-token the golden's per-token NLLs.
TEST(PerplexityCli, JsonAndPerTokenMatchTheGolden) {
  ATTN_REQUIRE_SHARED();
  const auto lines = GoldenSet("tiny-gpt2-brown").jsonl("perplexity.jsonl");
  const nlohmann::json& golden = lines.at(1);  // doc 0, window 128, stride 64
  TempDir scratch;
  write_file(scratch / "doc.txt", golden["text"].get<std::string>());
  const CommandResult result =
      run_attn({"perplexity", "--file", (scratch / "doc.txt").string(), "--window", "128",
                "--stride", "64", "--json", "--per-token", (scratch / "tokens.jsonl").string()});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const auto out = nlohmann::json::parse(result.out);
  EXPECT_EQ(out["n_scored_tokens"], golden["n_scored_tokens"]);
  EXPECT_EQ(out["windows"].size(), golden["windows"].size());
  EXPECT_NEAR(out["ppl"].get<double>(), golden["ppl"].get<double>(),
              tolerance::kMeanNllRelative * golden["ppl"].get<double>());
  const auto tokens = read_jsonl(scratch / "tokens.jsonl");
  ASSERT_EQ(tokens.size(), golden["ids"].size());
  for (std::size_t p = 0; p < tokens.size(); ++p) {
    EXPECT_EQ(tokens[p]["id"], golden["ids"][p]);
    if (golden["token_nll"][p].is_null()) {
      EXPECT_TRUE(tokens[p]["nll"].is_null()) << p;
    } else {
      EXPECT_NEAR(tokens[p]["nll"].get<double>(), golden["token_nll"][p].get<double>(),
                  tolerance::kTokenNll)
          << p;
    }
  }
}

// The recipe's windows on small cases worked out by hand.
TEST(PerplexityWindows, OverlappingWindowsScoreEveryTokenButTheFirstOnce) {
  const auto windows = perplexity_windows(10, {.window = 4, .stride = 2});
  // [0,4) scores 1..3; [2,6) scores 4,5; [4,8) 6,7; [6,10) 8,9.
  ASSERT_EQ(windows.size(), 4u);
  EXPECT_EQ(windows[0].n_scored, 3);
  for (int w = 1; w < 4; ++w) {
    EXPECT_EQ(windows[w].begin, 2 * w);
    EXPECT_EQ(windows[w].end, 2 * w + 4);
    EXPECT_EQ(windows[w].n_scored, 2);
  }
}

TEST(PerplexityWindows, DisjointWindowsLeaveEachFirstTokenUnscored) {
  const auto windows = perplexity_windows(10, {.window = 4, .stride = 4});
  // [0,4) scores 1..3; [4,8) 5..7; [8,10) 9.
  ASSERT_EQ(windows.size(), 3u);
  EXPECT_EQ(windows[0].n_scored, 3);
  EXPECT_EQ(windows[1].n_scored, 3);
  EXPECT_EQ(windows[2].begin, 8);
  EXPECT_EQ(windows[2].end, 10);
  EXPECT_EQ(windows[2].n_scored, 1);
}

TEST(PerplexityWindows, StrideOutsideTheWindowIsAUsageError) {
  EXPECT_THROW(perplexity_windows(10, {.window = 4, .stride = 5}), UsageError);
  EXPECT_THROW(perplexity_windows(10, {.window = 4, .stride = 0}), UsageError);
}

}  // namespace
}  // namespace attn::test
