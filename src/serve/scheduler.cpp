#include "src/serve/scheduler.h"

#include <algorithm>
#include <chrono>
#include <future>

namespace attn::serve {
namespace {

using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

bool GenerationRequest::next_text(std::string& text) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !text_.empty() || ended_; });
  if (text_.empty()) return false;
  text += text_;
  text_.clear();
  return true;
}

GenerateResult GenerationRequest::result() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return ended_; });
  if (error_) std::rethrow_exception(error_);
  return result_;
}

bool GenerationRequest::ended_within(std::chrono::milliseconds time) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, time, [&] { return ended_; });
}

void GenerationRequest::add_text(std::string_view text) {
  {
    const std::lock_guard lock(mutex_);
    text_ += text;
  }
  changed_.notify_all();
}

void GenerationRequest::end(GenerateResult result, std::exception_ptr error) {
  {
    const std::lock_guard lock(mutex_);
    result_ = std::move(result);
    error_ = error;
    ended_ = true;
  }
  changed_.notify_all();
}

// A generation slot: a sequence's KV cache, kept after its request for the next one that begins
// with the same tokens, and the request it is running (none when free).
struct Scheduler::Slot {
  CachedSequence kept;
  std::shared_ptr<GenerationRequest> request;
  std::unique_ptr<SequenceGenerator> sequence;
  GenerateResult timing;  // the request's prompt_ms, reused_tokens, decode_steps so far
  Clock::time_point decode_start;
  long last_used = 0;  // when its last request ended (Scheduler::ended_), 0: never used
};

// Inputs of one request for an encoder task, and the rows computed for them.
struct Scheduler::EncoderJob {
  const EncoderTask* task = nullptr;
  std::vector<Encoding> inputs;
  int tokens = 0;
  std::vector<std::vector<float>> rows;  // (inputs) once done
  std::promise<void> done;
};

struct Scheduler::OneOffJob {
  std::function<void()> run;
  std::promise<void> done;
};

Scheduler::Scheduler(const Model& model, SchedulerOptions options, Metrics& metrics)
    : model_(model), options_(options), metrics_(metrics), slots_(options.parallel) {
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  thread_.join();
}

std::shared_ptr<GenerationRequest> Scheduler::generate(std::vector<int> prompt,
                                                       GenerateOptions options,
                                                       GenerateCallbacks observe, bool reuse) {
  auto request = std::make_shared<GenerationRequest>();
  request->prompt_ = std::move(prompt);
  request->reuse_ = reuse;
  request->options_ = std::move(options);
  request->callbacks_ = std::move(observe);
  GenerationRequest* raw = request.get();
  request->callbacks_.on_text = [raw](std::string_view text) { raw->add_text(text); };
  request->callbacks_.stop = &request->cancelled_;
  post(waiting_, request);
  return request;
}

std::vector<std::vector<float>> Scheduler::run_batched(const EncoderTask& task,
                                                       std::vector<Encoding> inputs) {
  auto job = std::make_shared<EncoderJob>();
  job->task = &task;
  for (const Encoding& input : inputs) job->tokens += int(input.ids.size());
  job->inputs = std::move(inputs);
  std::future<void> done = job->done.get_future();
  post(encoder_jobs_, job);
  done.get();
  return std::move(job->rows);
}

void Scheduler::run(std::function<void()> run) {
  auto job = std::make_shared<OneOffJob>();
  job->run = std::move(run);
  std::future<void> done = job->done.get_future();
  post(one_off_jobs_, job);
  done.get();
}

void Scheduler::interrupt_all() {
  {
    const std::lock_guard lock(mutex_);
    interrupting_ = true;
    for (const auto& request : waiting_) request->cancel();
  }
  work_.notify_all();
}

bool Scheduler::has_work() const {
  return busy_slots_ > 0 || !waiting_.empty() || !encoder_jobs_.empty() || !one_off_jobs_.empty();
}

void Scheduler::loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    work_.wait(lock, [&] { return stopping_ || has_work(); });
    if (!has_work()) return;  // stopping, with nothing left to do
    // What this round runs: one one-off job, one encoder batch, the waiting generations that
    // find a free slot, and a decode step of every busy slot.
    std::shared_ptr<OneOffJob> one_off;
    if (!one_off_jobs_.empty()) {
      one_off = std::move(one_off_jobs_.front());
      one_off_jobs_.pop_front();
    }
    // Jobs of the first waiting task, in order, while they fit (the first always does).
    std::vector<std::shared_ptr<EncoderJob>> encoder_batch;
    int batch_tokens = 0;
    while (!encoder_jobs_.empty() &&
           (encoder_batch.empty() ||
            (encoder_jobs_.front()->task == encoder_batch[0]->task &&
             batch_tokens + encoder_jobs_.front()->tokens <= options_.batch_tokens))) {
      batch_tokens += encoder_jobs_.front()->tokens;
      encoder_batch.push_back(std::move(encoder_jobs_.front()));
      encoder_jobs_.pop_front();
    }
    // Each waiting request takes the free slot that holds the longest start of its prompt; of
    // those that hold as much, the one unused the longest, so that a slot whose cache a
    // conversation may come back to is taken last.
    std::vector<Slot*> starting;
    while (!waiting_.empty() && busy_slots_ < int(slots_.size())) {
      std::shared_ptr<GenerationRequest> request = std::move(waiting_.front());
      waiting_.pop_front();
      Slot* best = nullptr;
      int best_shared = -1;
      for (Slot& slot : slots_) {
        if (slot.request) continue;
        const int shared = slot.kept.shared_start(request->prompt_);
        if (shared > best_shared || (shared == best_shared && slot.last_used < best->last_used)) {
          best = &slot;
          best_shared = shared;
        }
      }
      best->request = std::move(request);
      starting.push_back(best);
      ++busy_slots_;
    }
    const bool interrupting = interrupting_;
    lock.unlock();

    if (one_off) {
      ++metrics_.running;
      try {
        one_off->run();
        one_off->done.set_value();
      } catch (...) {
        one_off->done.set_exception(std::current_exception());
      }
      --metrics_.running;
    }
    if (!encoder_batch.empty()) run_encoder_batch(encoder_batch);
    metrics_.running += int(starting.size());
    for (Slot* slot : starting) start(*slot);
    if (interrupting) {
      for (Slot& slot : slots_) {
        if (slot.request) slot.request->cancel();
      }
    }
    decode_step();
    lock.lock();
  }
}

void Scheduler::run_encoder_batch(std::vector<std::shared_ptr<EncoderJob>>& jobs) {
  std::vector<Encoding> inputs;                     // every job's, in order
  std::vector<std::pair<EncoderJob*, int>> owners;  // (inputs) the job and its index there
  for (const auto& job : jobs) {
    job->rows.resize(job->inputs.size());
    for (std::size_t i = 0; i < job->inputs.size(); ++i) {
      inputs.push_back(std::move(job->inputs[i]));
      owners.emplace_back(job.get(), int(i));
    }
  }
  metrics_.running += int(jobs.size());
  try {
    (*jobs[0]->task)(inputs, options_.batch_tokens, [&](std::size_t i, std::span<const float> row) {
      owners[i].first->rows[owners[i].second].assign(row.begin(), row.end());
    });
    for (const auto& job : jobs) job->done.set_value();
  } catch (...) {
    for (const auto& job : jobs) job->done.set_exception(std::current_exception());
  }
  metrics_.running -= int(jobs.size());
}

void Scheduler::start(Slot& slot) {
  GenerationRequest& request = *slot.request;
  slot.timing = {};
  slot.decode_start = Clock::now();
  if (request.cancelled_) {  // gone, or interrupted, while it waited: nothing to compute
    end_generation(slot);
    return;
  }
  try {
    const ArchSpec& spec = model_.spec();
    const std::vector<int>& prompt = request.prompt_;
    const int context = generation_context(spec, request.options_);
    if (!request.reuse_) slot.kept.tokens.clear();
    slot.kept.keep_start_of(prompt);
    // A cache of the context the request may fill (reserve keeps it at least as large as it was).
    const int capacity =
        std::min<long>(context, long(prompt.size()) + request.options_.max_new_tokens);
    slot.kept.reserve(spec, capacity, int(prompt.size()) - int(slot.kept.tokens.size()));
    const int reused = int(slot.kept.tokens.size());  // growing the cache may have forgotten it
    const int rows = int(prompt.size()) - reused;
    const int keys = slot.kept.cache->capacity;
    if (!state_ || rows > state_->max_rows || keys > state_->max_context) {
      state_ = std::make_unique<RunState>(
          spec, std::max({rows, int(slots_.size()), state_ ? state_->max_rows : 0}),
          std::max(keys, state_ ? state_->max_context : 0));
    }
    slot.sequence = std::make_unique<SequenceGenerator>(model_, prompt, request.options_,
                                                        request.callbacks_, context);
    slot.timing.reused_tokens = reused;
    // The prompt's pass, alone, as attn generate runs it.
    const auto start = Clock::now();
    Batch batch;
    batch.add_sequence(std::span(prompt).subspan(reused), {}, reused);
    batch.cache_offset = reused;
    model_.transformer->forward(batch, *slot.kept.cache, *state_);
    slot.kept.tokens = prompt;
    std::vector<float> logits(spec.vocab_size);
    const int last = batch.rows() - 1;
    model_.transformer->compute_logits(*state_, std::span(&last, 1), logits.data());
    slot.timing.prompt_ms = milliseconds_since(start);
    slot.decode_start = Clock::now();
    if (!slot.sequence->step(logits)) end_generation(slot);
  } catch (...) {
    slot.kept.tokens.clear();
    end_generation(slot, std::current_exception());
  }
}

void Scheduler::decode_step() {
  DecodeBuffers& step = decode_;
  step.slots.clear();
  step.batch.clear();
  step.caches.clear();
  step.rows.clear();
  for (Slot& slot : slots_) {
    if (!slot.request) continue;
    const std::vector<int>& ids = slot.sequence->ids();
    step.batch.add_sequence(std::span(&ids.back(), 1), {}, int(ids.size()) - 1);
    step.caches.push_back(slot.kept.cache.get());
    step.rows.push_back(int(step.slots.size()));
    step.slots.push_back(&slot);
  }
  if (step.slots.empty()) return;
  const int vocab = model_.spec().vocab_size;
  step.logits.resize(step.slots.size() * std::size_t(vocab));
  try {
    model_.transformer->forward(step.batch, step.caches, *state_);
    model_.transformer->compute_logits(*state_, step.rows, step.logits.data(), RowKind::kSeparate);
  } catch (...) {
    for (Slot* slot : step.slots) {
      slot->kept.tokens.clear();
      end_generation(*slot, std::current_exception());
    }
    return;
  }
  metrics_.decode_pass(int(step.slots.size()));
  for (std::size_t r = 0; r < step.slots.size(); ++r) {
    Slot& slot = *step.slots[r];
    slot.kept.tokens.push_back(slot.sequence->ids().back());
    ++slot.timing.decode_steps;
    try {
      if (!slot.sequence->step(std::span(step.logits).subspan(r * vocab, vocab))) {
        end_generation(slot);
      }
    } catch (...) {
      end_generation(slot, std::current_exception());
    }
  }
}

void Scheduler::end_generation(Slot& slot, std::exception_ptr error) {
  GenerateResult result;
  if (!slot.sequence) {  // it never started
    result.prompt_tokens = int(slot.request->prompt_.size());
    result.stop_reason = "interrupted";
  } else if (!error) {
    try {
      result = slot.sequence->finish();
    } catch (...) {
      error = std::current_exception();
    }
  }
  result.prompt_ms = slot.timing.prompt_ms;
  result.reused_tokens = slot.timing.reused_tokens;
  result.decode_steps = slot.timing.decode_steps;
  result.decode_ms = milliseconds_since(slot.decode_start);
  slot.request->end(std::move(result), error);
  slot.request.reset();
  slot.sequence.reset();
  slot.last_used = ++generations_ended_;
  --metrics_.running;
  const std::lock_guard lock(mutex_);
  --busy_slots_;
}

}  // namespace attn::serve
