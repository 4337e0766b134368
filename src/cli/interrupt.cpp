#include "src/cli/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include "src/io/output_file.h"

namespace attn {
namespace {

// A lock-free atomic, not a mutex or a plain bool: the handler may run on any thread (a
// process-directed signal goes to whichever thread does not block it, often a worker of the
// thread pool), and lock-free atomics are safe to use in a signal handler.
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_interrupt(int) {
  if (!g_interrupted.exchange(true)) return;
  // The second Ctrl-C: only async-signal-safe calls from here on. An --attention-out file being
  // written would otherwise be left behind as its hidden temporary file.
  remove_temporary_output();
  ::_exit(kInterruptedStatus);
}

}  // namespace

void catch_interrupts() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  struct sigaction previous {};
  ::sigaction(SIGINT, nullptr, &previous);
  if (previous.sa_handler == SIG_IGN) return;
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  // Interrupted writes to standard output resume instead of failing with EINTR.
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, nullptr);
}

const std::atomic<bool>& interrupt_requested() { return g_interrupted; }

void clear_interrupt() { g_interrupted.store(false); }

}  // namespace attn
