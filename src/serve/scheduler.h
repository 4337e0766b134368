#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "src/model/model.h"
#include "src/serve/metrics.h"
#include "src/tasks/generate.h"

// attn serve's model thread. Every computation of the model runs on it, one at a time, while the
// connection threads wait for their results:
// - generations share passes: each of the --parallel slots holds one sequence and its KV cache,
//   and a decode step runs the last token of every busy slot as one row of one pass
//   (RowKind::kSeparate: each row is multiplied as it would be alone, so that what else is in the
//   pass changes nothing). A request joins and leaves between steps; its prompt runs as a pass of
//   its own, as attn generate runs it, from the longest start of it that its slot still holds.
// - encoder requests that wait together run as one packed batch of up to --batch-tokens tokens.
// - anything else (the attention of a text) runs alone, between steps.
namespace attn::serve {

struct SchedulerOptions {
  int parallel = 4;         // generation slots
  int batch_tokens = 1024;  // tokens per packed encoder batch
};

// One generation, as the connection thread that waits for it sees it.
class GenerationRequest {
 public:
  // Waits for text generated since the last call and appends it to `text`; false (and nothing
  // appended) once the generation has ended and all its text was taken.
  bool next_text(std::string& text);
  // Waits for the end and returns the result; rethrows the generation's error.
  GenerateResult result();
  // Waits at most `time` for the end; whether it has come.
  bool ended_within(std::chrono::milliseconds time);
  // The client has gone: the generation ends at its next step, and its slot is freed.
  void cancel() { cancelled_ = true; }

 private:
  friend class Scheduler;
  // Called on the model thread.
  void add_text(std::string_view text);
  void end(GenerateResult result, std::exception_ptr error);

  std::vector<int> prompt_;
  GenerateOptions options_;
  bool reuse_ = true;            // may start from what its slot holds
  GenerateCallbacks callbacks_;  // on_text: add_text; stop: cancelled_; the rest the caller's
  std::atomic<bool> cancelled_ = false;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::string text_;  // generated and not yet taken by next_text
  bool ended_ = false;
  GenerateResult result_;
  std::exception_ptr error_;
};

// Computes a row of floats for each input (in order, into on_row) in packed batches of up to
// max_batch_tokens: an encoder task (sentence embeddings, classifier logits).
using EncoderTask =
    std::function<void(std::span<const Encoding> inputs, int max_batch_tokens,
                       const std::function<void(std::size_t, std::span<const float>)>& on_row)>;

class Scheduler {
 public:
  Scheduler(const Model& model, SchedulerOptions options, Metrics& metrics);
  // Finishes everything it was given, then ends the model thread.
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Generates after `prompt` (at most options' context) in a slot, from the next step on; the
  // prompt's pass starts after the longest start of it the slot holds unless `reuse` is false.
  // `observe`'s on_logits and on_token, when given, are called on the model thread.
  std::shared_ptr<GenerationRequest> generate(std::vector<int> prompt, GenerateOptions options,
                                              GenerateCallbacks observe = {}, bool reuse = true);
  // task's rows for `inputs`, computed in one batch with the inputs of other requests to the
  // same task that are waiting then. Waits for them; the task's error passes through.
  std::vector<std::vector<float>> run_batched(const EncoderTask& task,
                                              std::vector<Encoding> inputs);
  // Runs `job` on the model thread, alone, between steps; waits for it; its error passes through.
  void run(std::function<void()> job);
  // Ends every generation, running or waiting, at its next step with the tokens it has (the
  // grace of a shutdown is over).
  void interrupt_all();

 private:
  struct Slot;
  struct EncoderJob;
  struct OneOffJob;

  // Queues `item` for the model thread, and wakes it.
  template <class Item>
  void post(std::deque<std::shared_ptr<Item>>& queue, std::shared_ptr<Item> item) {
    {
      const std::lock_guard lock(mutex_);
      queue.push_back(std::move(item));
    }
    work_.notify_all();
  }
  void loop();            // the model thread
  bool has_work() const;  // under mutex_
  void run_encoder_batch(std::vector<std::shared_ptr<EncoderJob>>& jobs);
  void start(Slot& slot);  // the prompt's pass; the request's first token
  void decode_step();      // a token for every busy slot
  void end_generation(Slot& slot, std::exception_ptr error = nullptr);

  const Model& model_;
  const SchedulerOptions options_;
  Metrics& metrics_;
  std::vector<Slot> slots_;          // (parallel) touched by the model thread only
  std::unique_ptr<RunState> state_;  // every pass's scratch, grown as passes need
  // A decode step's buffers, kept from step to step: a step allocates nothing.
  struct DecodeBuffers {
    std::vector<Slot*> slots;      // (rows) the busy slots, a row each
    Batch batch;                   // their last tokens
    std::vector<KVCache*> caches;  // (rows) each slot's
    std::vector<int> rows;         // 0, 1, ...: the rows whose logits are read
    std::vector<float> logits;     // (rows, vocab)
  } decode_;
  long generations_ended_ = 0;  // the clock of Slot::last_used

  mutable std::mutex mutex_;  // guards what follows
  std::condition_variable work_;
  std::deque<std::shared_ptr<GenerationRequest>> waiting_;
  std::deque<std::shared_ptr<EncoderJob>> encoder_jobs_;
  std::deque<std::shared_ptr<OneOffJob>> one_off_jobs_;
  int busy_slots_ = 0;
  bool interrupting_ = false;
  bool stopping_ = false;
  std::thread thread_;  // last: it starts once everything above is made
};

}  // namespace attn::serve
