#pragma once

// Ctrl-C during generation (attn generate, attn translate, attn chat). The first SIGINT only sets a
// flag, which generation polls before each new token: it then stops with stop_reason "interrupted",
// the text so far is printed as usual (ending with a newline, or as the --json object) with the
// timings, and attn exits with kInterruptedStatus. A second SIGINT ends attn at once with the
// same status, for a step that takes too long to wait for.

#include <atomic>
#include <csignal>

namespace attn {

// 128 + SIGINT: what a shell reports for a program that Ctrl-C stopped.
constexpr int kInterruptedStatus = 128 + SIGINT;

// Installs the SIGINT handler (once). Not when SIGINT is ignored (a background job of a shell
// without job control, nohup): such a job is not meant to be stopped by Ctrl-C at all.
//
// Called just before generation starts, once the model is loaded and the input read, and only
// by the commands that generate: until then Ctrl-C keeps its default action (attn ends at once,
// having nothing to print yet), so that a load or a prompt typed at a terminal is never kept
// waiting by a handler that only sets a flag (read() resumes after the handler, SA_RESTART).
void catch_interrupts();

// Set by the first SIGINT after catch_interrupts(): for GenerateCallbacks::stop and
// BeamSearchOptions::stop.
const std::atomic<bool>& interrupt_requested();

// The interrupt has been dealt with and attn goes on (attn chat: a reply was stopped, the
// conversation continues): the next Ctrl-C is a first one again.
void clear_interrupt();

}  // namespace attn
