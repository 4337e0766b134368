// Issue 25, item 5: Ctrl-C during generation (and issue 26's attn chat, where it ends a reply).
// attn runs as a child process with pipes on its standard output and error; once it is generating,
// it gets SIGINT, and must print what it has (text ending with a newline and the timings, or the
// --json object with stop_reason "interrupted", or the best beams so far) and exit with 130. A
// second SIGINT ends it at once.
//
// Each run is long (the tiny GPT-2 without its cache, hundreds of beam steps) so that it is
// still generating when the signal comes, and the test waits for a sign that generation has
// started: output on the pipe, or SIGINT among the signals attn catches (/proc/PID/status,
// SigCgt). No time is measured; every wait gives up after a minute, and a run still going then
// is killed, so that a hang fails the test instead of stopping the suite.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/cli_util.h"
#include "tests/test_paths.h"

namespace attn::test {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// 128 + SIGINT, what a shell reports for a program that Ctrl-C stopped.
constexpr int kInterruptedStatus = 130;
// How long any wait lasts before the test gives up: the machine may be slow and shared.
constexpr std::chrono::seconds kPatience(60);

const std::string kPrompt = "The jury said";

// attn running with standard input from /dev/null and its standard output and error on pipes.
class RunningAttn {
 public:
  explicit RunningAttn(const std::vector<std::string>& args,
                       const std::filesystem::path& stdin_path = "/dev/null") {
    std::vector<std::string> strings = {attn_binary().string()};
    strings.insert(strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& arg : strings) argv.push_back(arg.data());
    argv.push_back(nullptr);
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
      throw std::runtime_error("pipe2 failed");
    }
    start_ = Clock::now();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      // The child: only async-signal-safe calls until exec. SIGINT as a terminal gives it, even
      // if the test runs where SIGINT is ignored (a background job of a shell).
      const int in = ::open(stdin_path.c_str(), O_RDONLY);
      if (in < 0) ::_exit(127);
      ::dup2(in, 0);
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      ::signal(SIGINT, SIG_DFL);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    fds_[0] = out[0];
    fds_[1] = err[0];
  }

  ~RunningAttn() {
    for (int fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  RunningAttn(const RunningAttn&) = delete;
  RunningAttn& operator=(const RunningAttn&) = delete;

  const std::string& out() const { return text_[0]; }

  // Whether attn has installed a handler for SIGINT (bit SIGINT - 1 of SigCgt in
  // /proc/PID/status): it does so just before it starts generating. Between fork and exec the
  // child is still this test process, with its handlers (an in-process test may have installed
  // one), so the bit counts only once the child runs attn.
  bool catches_sigint() const {
    std::error_code error;
    const auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid_) + "/exe", error);
    if (error || exe.filename() != "attn") return false;
    const std::string status = read_file("/proc/" + std::to_string(pid_) + "/status");
    const std::size_t at = status.find("SigCgt:");
    if (at == std::string::npos) return false;
    const unsigned long long caught = std::stoull(status.substr(at + 7), nullptr, 16);
    return (caught >> (SIGINT - 1)) & 1;
  }

  // Reads what attn writes until `ready` holds (true), or attn closes its output or a minute
  // passes (false).
  bool wait_for(const std::function<bool()>& ready) {
    const Clock::time_point deadline = Clock::now() + kPatience;
    while (!ready()) {
      if (both_closed() || Clock::now() > deadline) return false;
      pump(10);
    }
    return true;
  }

  void signal(int signal_number) const { ::kill(pid_, signal_number); }

  // Reads until attn closes its output, then reaps it; killed when that takes more than
  // `patience`.
  CommandResult finish(std::chrono::seconds patience = kPatience) {
    const Clock::time_point deadline = Clock::now() + patience;
    CommandResult result;
    while (!both_closed()) {
      if (Clock::now() > deadline) {
        result.timed_out = true;
        ::kill(pid_, SIGKILL);
        break;
      }
      pump(10);
    }
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    result.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    result.signaled = WIFSIGNALED(status) && !result.timed_out;
    if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
    if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
    result.out = text_[0];
    result.err = text_[1];
    return result;
  }

 private:
  bool both_closed() const { return fds_[0] < 0 && fds_[1] < 0; }

  // Waits up to `milliseconds` for output, and reads what there is.
  void pump(int milliseconds) {
    pollfd polled[2];
    for (int i = 0; i < 2; ++i) polled[i] = {.fd = fds_[i], .events = POLLIN, .revents = 0};
    if (::poll(polled, 2, milliseconds) <= 0) return;
    for (int i = 0; i < 2; ++i) {
      if (polled[i].revents == 0) continue;
      char buffer[65536];
      const ssize_t n = ::read(fds_[i], buffer, sizeof buffer);
      if (n > 0) {
        text_[i].append(buffer, std::size_t(n));
      } else {
        ::close(fds_[i]);
        fds_[i] = -1;  // poll skips a negative descriptor
      }
    }
  }

  pid_t pid_ = -1;
  int fds_[2] = {-1, -1};  // standard output, standard error
  std::string text_[2];
  Clock::time_point start_;
};

struct Interrupted {
  bool ready = false;  // `ready` held and the signals were sent; else attn was killed
  CommandResult result;
};

// Runs attn ARGS, sends `signals` SIGINTs (one right after the other) once `ready` holds, and
// waits for attn to end.
Interrupted interrupt(const std::vector<std::string>& args,
                      const std::function<bool(const RunningAttn&)>& ready, int signals = 1,
                      const std::filesystem::path& stdin_path = "/dev/null") {
  RunningAttn attn(args, stdin_path);
  if (!attn.wait_for([&] { return ready(attn); })) {
    return {.ready = false, .result = attn.finish(std::chrono::seconds(0))};
  }
  for (int i = 0; i < signals; ++i) attn.signal(SIGINT);
  return {.ready = true, .result = attn.finish()};
}

// attn generate with the tiny GPT-2, running to the end of its 512-position context unless
// stopped; ARGS after the prompt.
std::vector<std::string> generate_args(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"generate", "-m", shipped_model("tiny-gpt2-brown").string(), "-p",
                                  kPrompt};
  all.insert(all.end(), {"-n", "509", "--ignore-eos", "--seed", "1"});
  all.insert(all.end(), args.begin(), args.end());
  return all;
}

// The same with --beams N, which is deterministic and so takes no --seed.
std::vector<std::string> beam_search_args(int beams, const std::vector<std::string>& args) {
  std::vector<std::string> all = {"generate", "-m", shipped_model("tiny-gpt2-brown").string(), "-p",
                                  kPrompt};
  all.insert(all.end(), {"-n", "509", "--ignore-eos", "--beams", std::to_string(beams)});
  all.insert(all.end(), args.begin(), args.end());
  return all;
}

// At least `n` lines of output have arrived.
std::function<bool(const RunningAttn&)> lines_out(std::size_t n) {
  return [n](const RunningAttn& attn) { return split_lines_of(attn.out()).size() >= n; };
}

// Some generated text has arrived after the prompt.
bool text_out(const RunningAttn& attn) { return attn.out().size() > kPrompt.size() + 8; }

bool generating(const RunningAttn& attn) { return attn.catches_sigint(); }

#define ASSERT_INTERRUPTED(run)                                                        \
  do {                                                                                 \
    ASSERT_TRUE((run).ready) << "attn ended or stalled before it generated: "          \
                             << describe((run).result);                                \
    ASSERT_FALSE((run).result.timed_out) << describe((run).result);                    \
    ASSERT_EQ((run).result.exit_status, kInterruptedStatus) << describe((run).result); \
  } while (0)

TEST(InterruptCli, TextEndsWithANewlineAndTheTimings) {
  const Interrupted run = interrupt(generate_args({"--no-cache"}), text_out);
  ASSERT_INTERRUPTED(run);
  EXPECT_TRUE(run.result.out.starts_with(kPrompt)) << describe(run.result);
  EXPECT_TRUE(run.result.out.ends_with("\n")) << describe(run.result);
  // The usual summary line: "load ... ms | prompt ... | decode ... | N new tokens, stop: ...".
  const std::vector<std::string> err = split_lines_of(run.result.err);
  ASSERT_EQ(err.size(), 1u) << describe(run.result);
  EXPECT_TRUE(err[0].starts_with("load ")) << err[0];
  EXPECT_TRUE(err[0].ends_with("stop: interrupted")) << err[0];
}

TEST(InterruptCli, JsonHasStopReasonInterrupted) {
  const Interrupted run = interrupt(generate_args({"--no-cache", "--json"}), generating);
  ASSERT_INTERRUPTED(run);
  const json out = json::parse(run.result.out);
  EXPECT_EQ(out.at("stop_reason"), "interrupted");
  // The signal may come before the first token: then there are none.
  EXPECT_LT(out.at("generated_ids").size(), 509u);
  EXPECT_TRUE(out.at("timings").contains("decode_ms"));
  EXPECT_NE(run.result.err.find("stop: interrupted"), std::string::npos) << run.result.err;
}

TEST(InterruptCli, StreamedJsonEndsWithTheSummaryOfTheTokensSoFar) {
  const Interrupted run =
      interrupt(generate_args({"--no-cache", "--json", "--stream"}), lines_out(3));
  ASSERT_INTERRUPTED(run);
  ASSERT_TRUE(run.result.out.ends_with("\n")) << describe(run.result);
  const std::vector<std::string> lines = split_lines_of(run.result.out);
  std::vector<int> streamed;
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    streamed.push_back(json::parse(lines[i]).at("token_id").get<int>());
  }
  const json summary = json::parse(lines.back());
  EXPECT_EQ(summary.at("stop_reason"), "interrupted");
  EXPECT_GE(streamed.size(), 3u);
  EXPECT_EQ(summary.at("generated_ids").get<std::vector<int>>(), streamed);
}

// The beams so far: the running ones unfinished, as many tokens long as the steps taken.
TEST(InterruptCli, BeamSearchGivesTheBestBeamsSoFar) {
  const Interrupted run =
      interrupt(beam_search_args(2, {"--num-return", "2", "--json"}), generating);
  ASSERT_INTERRUPTED(run);
  const json out = json::parse(run.result.out);
  EXPECT_EQ(out.at("stop_reason"), "interrupted");
  const int steps = out.at("steps");
  EXPECT_GE(steps, 1);
  EXPECT_LT(steps, 509);
  ASSERT_EQ(out.at("sequences").size(), 2u);
  for (const json& sequence : out.at("sequences")) {
    EXPECT_EQ(sequence.at("finished"), false);  // --ignore-eos: no sequence ends
    EXPECT_EQ(sequence.at("generated_ids").size(), std::size_t(steps));
  }
  EXPECT_NE(run.result.err.find("interrupted after"), std::string::npos) << run.result.err;
}

TEST(InterruptCli, BeamSearchTextIsPrinted) {
  const Interrupted run = interrupt(beam_search_args(2, {}), generating);
  ASSERT_INTERRUPTED(run);
  EXPECT_TRUE(run.result.out.starts_with("[-")) << describe(run.result);
  EXPECT_NE(run.result.out.find("] " + kPrompt), std::string::npos) << describe(run.result);
  EXPECT_TRUE(run.result.out.ends_with("\n")) << describe(run.result);
}

// The second Ctrl-C does not wait for anything: were it ignored while the first still took
// effect, this would pass too, but a handler that hung or died of the signal would not.
TEST(InterruptCli, TwoInterruptsExitAt130) {
  const Interrupted run = interrupt(generate_args({"--no-cache"}), text_out, 2);
  ASSERT_INTERRUPTED(run);
  EXPECT_TRUE(run.result.out.starts_with(kPrompt)) << describe(run.result);
}

// Names in `dir`: the attention file, never its hidden temporary.
std::set<std::string> names_in(const std::filesystem::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

TEST(InterruptCli, AttentionOutHoldsTheTokensSoFar) {
  TempDir dir;
  const std::filesystem::path steps = dir / "steps.jsonl";
  const Interrupted run = interrupt(
      generate_args({"--no-cache", "--json", "--stream", "--attention-out", steps.string()}),
      lines_out(3));
  ASSERT_INTERRUPTED(run);
  const json summary = json::parse(split_lines_of(run.result.out).back());
  const auto ids = summary.at("generated_ids").get<std::vector<int>>();
  const std::vector<std::string> rows = split_lines_of(read_file(steps));
  ASSERT_EQ(rows.size(), ids.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(json::parse(rows[i]).at("token_id"), ids[i]) << "step " << i;
  }
  EXPECT_EQ(names_in(dir.path()), std::set<std::string>{"steps.jsonl"});
}

// The second Ctrl-C may come while the attention file is written: it is then not left half
// written, nor is its temporary.
TEST(InterruptCli, TwoInterruptsLeaveNoAttentionTemporary) {
  TempDir dir;
  const std::filesystem::path steps = dir / "steps.jsonl";
  const Interrupted run =
      interrupt(generate_args({"--no-cache", "--attention-out", steps.string()}), text_out, 2);
  ASSERT_INTERRUPTED(run);
  const std::set<std::string> names = names_in(dir.path());
  EXPECT_TRUE(names.empty() || names == std::set<std::string>{"steps.jsonl"}) << json(names).dump();
  if (!names.empty()) {
    const std::string rows = read_file(steps);
    EXPECT_TRUE(rows.ends_with("\n"));
    for (const std::string& row : split_lines_of(rows)) EXPECT_TRUE(json::accept(row)) << row;
  }
}

// ---- attn translate (the tiny random Marian of ../shared) ----

std::string marian() { return (shared_dir() / "models" / "tiny-marian-random").string(); }

// Every source line gives 511 tokens (the random model never says end-of-sequence to it).
TEST(InterruptCli, TranslateLinesStopAfterTheCurrentOne) {
  ATTN_REQUIRE_SHARED();
  TempDir dir;
  const std::filesystem::path sources = dir / "sources.txt";
  std::string text;
  for (int i = 0; i < 40; ++i) text += "Hello world, this is a test.\n";
  write_file(sources, text);
  const Interrupted run =
      interrupt({"translate", "-m", marian(), "--json", "--file", sources.string(), "-n", "511"},
                lines_out(1));
  ASSERT_INTERRUPTED(run);
  const std::vector<std::string> lines = split_lines_of(run.result.out);
  ASSERT_TRUE(run.result.out.ends_with("\n")) << describe(run.result);
  ASSERT_GE(lines.size(), 1u);
  ASSERT_LT(lines.size(), 40u);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const json line = json::parse(lines[i]);
    EXPECT_EQ(line.at("line"), i + 1);
    // Only the last line can have been ended early.
    if (i + 1 < lines.size()) {
      EXPECT_EQ(line.at("stop_reason"), "length");
    }
  }
  EXPECT_NE(run.result.err.find("interrupted after " + std::to_string(lines.size()) + " of 40"),
            std::string::npos)
      << run.result.err;
}

// One source streams its translation: the text so far ends with a newline. The decoding takes
// about a second, which a busy machine may finish before the signal comes: tried a few times.
TEST(InterruptCli, TranslateTextEndsWithANewline) {
  ATTN_REQUIRE_SHARED();
  std::string source;
  for (int i = 0; i < 40; ++i) source += "Hello world, this is a test. ";
  for (int attempt = 0; attempt < 5; ++attempt) {
    const Interrupted run = interrupt({"translate", "-m", marian(), source, "-n", "511"},
                                      [](const RunningAttn& attn) { return !attn.out().empty(); });
    ASSERT_TRUE(run.ready) << describe(run.result);
    if (run.result.exit_status == 0) continue;  // done before the signal came
    ASSERT_INTERRUPTED(run);
    EXPECT_TRUE(run.result.out.ends_with("\n")) << describe(run.result);
    EXPECT_TRUE(run.result.err.ends_with("stop: interrupted\n")) << describe(run.result);
    return;
  }
  FAIL() << "attn translated to the end every time before the signal came";
}

TEST(InterruptCli, TranslateBeamsGiveTheBestSoFar) {
  ATTN_REQUIRE_SHARED();
  const Interrupted run = interrupt({"translate", "-m", marian(), "Hello world, this is a test.",
                                     "-n", "511", "--beams", "8", "--json"},
                                    generating);
  ASSERT_INTERRUPTED(run);
  const json out = json::parse(run.result.out);
  EXPECT_EQ(out.at("stop_reason"), "interrupted");
  EXPECT_LT(out.at("steps").get<int>(), 511);
  ASSERT_EQ(out.at("sequences").size(), 1u);
  EXPECT_FALSE(out.at("sequences")[0].at("generated_ids").empty());
}

// attn chat: Ctrl-C ends the reply being generated and keeps it; the next message gets its
// reply, which continues the conversation, and attn ends normally at the end of its input.
TEST(InterruptCli, ChatStopsTheReplyAndGoesOnWithTheNextMessage) {
  TempDir dir;
  write_file(dir / "turns.txt", kPrompt + "\nWhat did the committee find?\n");
  const std::vector<std::string> args = {
      "chat",
      "-m",
      shipped_model("tiny-gpt2-brown").string(),
      "--chat-template-file",
      (source_dir() / "tests" / "data" / "chatml.jinja").string(),
      "-i",
      "-v",
      "--temp",
      "0",
      "-n",
      "470"};
  const Interrupted run = interrupt(args, lines_out(2), 1, dir / "turns.txt");
  ASSERT_TRUE(run.ready) << describe(run.result);
  ASSERT_FALSE(run.result.timed_out) << describe(run.result);
  EXPECT_EQ(run.result.exit_status, 0) << describe(run.result);
  const std::string& log = run.result.err;
  const std::size_t stopped = log.find("stop: interrupted\n(stopped)");
  ASSERT_NE(stopped, std::string::npos) << describe(run.result);
  // The second turn ran after it, continuing the cache of the first.
  const std::size_t second = log.find("prompt ", stopped);
  ASSERT_NE(second, std::string::npos) << describe(run.result);
  EXPECT_EQ(log.find("(0 from the cache)", second), std::string::npos) << describe(run.result);
}

}  // namespace
}  // namespace attn::test
