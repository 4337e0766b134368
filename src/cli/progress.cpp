#include "src/cli/progress.h"

#include <spdlog/fmt/fmt.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace attn {

Progress::Progress(std::string task, std::string unit, bool quiet)
    : task_(std::move(task)), unit_(std::move(unit)), shown_(!quiet && ::isatty(STDERR_FILENO)) {}

Progress::~Progress() {
  if (line_open_) std::fputc('\n', stderr);
}

void Progress::update(std::int64_t done, std::int64_t total, std::int64_t tokens) {
  if (!shown_) return;
  const Clock::time_point now = Clock::now();
  const bool finished = done >= total;
  if (!finished && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double seconds = std::max(std::chrono::duration<double>(now - start_).count(), 1e-9);
  std::string line = fmt::format("\r{}: {}/{} {}, {:.0f} tokens/s", task_, done, total, unit_,
                                 double(tokens) / seconds);
  if (!finished && done > 0) {
    line += fmt::format(", {:.0f} s left", seconds * double(total - done) / double(done));
  }
  // Spaces wipe what a longer earlier line left on the terminal.
  line += finished ? "          \n" : "          ";
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
  line_open_ = !finished;
}

}  // namespace attn
