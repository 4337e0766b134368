#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace attn {

// How far a long job is, on one line of standard error redrawn in place:
// "perplexity: 12/40 windows, 2210 tokens/s, 9 s left". Shown only when standard error is a
// terminal and -q was not given, so that logs and pipes never see it. Redrawn at most ten times a
// second; the line ends when the job is done, or when the job ends early (an error is then
// printed on a line of its own).
class Progress {
 public:
  // `task` starts the line ("perplexity"); `unit` names what is counted ("windows", "lines").
  Progress(std::string task, std::string unit, bool quiet);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // `done` of `total` units finished, having read `tokens` tokens so far.
  void update(std::int64_t done, std::int64_t total, std::int64_t tokens);

 private:
  using Clock = std::chrono::steady_clock;

  std::string task_;
  std::string unit_;
  bool shown_;
  bool line_open_ = false;  // drawn, and not yet ended with a newline
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_draw_{};
};

}  // namespace attn
