#include "src/kernels/thread_pool.h"

#include <immintrin.h>
#include <sched.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>

#include "src/base/error.h"

// The hand-offs between threads below rely on sequentially consistent atomics (the default
// memory order): a thread that announces it is going to sleep and then checks for work, and a
// thread that posts work and then checks for sleepers, cannot both miss each other.

namespace attn {

namespace {

constexpr std::chrono::microseconds kSpinTime{50};

uint32_t generation_of(uint64_t job) { return uint32_t(job >> 32); }
uint32_t unclaimed_tasks_of(uint64_t job) { return uint32_t(job); }

// Calls done() until it holds or `limit` has passed; returns whether it holds.
template <class Done>
bool spin_until(Done done, std::chrono::microseconds limit) {
  if (limit.count() == 0) return done();
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (int i = 1;; ++i) {
    if (done()) return true;
    // Reading the clock costs as much as a few pauses: look at it now and then.
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= deadline) return false;
    _mm_pause();
  }
}

}  // namespace

ThreadPool::ThreadPool(int n_threads)
    : spin_time_(n_threads <= available_cores() ? kSpinTime : std::chrono::microseconds(0)) {
  try {
    for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
  } catch (const std::system_error& e) {
    stop_workers();
    throw Error("--threads: cannot start " + std::to_string(n_threads) + " threads (" + e.what() +
                ")");
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  job_posted_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::run_job(int n_tasks, JobTask task) {
  if (running_.exchange(true)) {
    throw std::logic_error("ThreadPool::run: a second caller while a job runs (one at a time)");
  }
  struct Done {
    std::atomic<bool>& running;
    ~Done() { running.store(false); }
  } done{running_};
  if (workers_.empty() || n_tasks <= 1 || solo_jobs_left_ > 0) {
    if (n_tasks > 1 && solo_jobs_left_ > 0) --solo_jobs_left_;
    for (int i = 0; i < n_tasks; ++i) task(i);
    return;
  }
  task_ = task;
  n_tasks_ = n_tasks;
  finished_tasks_.store(0);
  const uint32_t generation = generation_of(job_.load()) + 1;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  job_.store(uint64_t(generation) << 32 | uint32_t(n_tasks));
  const int own_tasks = work_on(generation);
  const auto own_end = Clock::now();
  wait_until_finished(n_tasks);
  const auto end = Clock::now();
  judge_sharing(std::chrono::duration<double>(own_end - start).count(), own_tasks,
                std::chrono::duration<double>(end - start).count(), n_tasks);
}

void ThreadPool::judge_sharing(double own_seconds, int own_tasks, double total_seconds,
                               int n_tasks) {
  // The workers took every task, or none: nothing to compare with. (A worker that comes too
  // late to take a task costs nothing: the caller has not waited for it.)
  if (own_tasks == 0 || own_tasks == n_tasks) return;
  const double alone_seconds = own_seconds * n_tasks / own_tasks;
  if (total_seconds > alone_seconds) {
    solo_jobs_left_ = solo_jobs_after_loss_;
    solo_jobs_after_loss_ = std::min(2 * solo_jobs_after_loss_, kMaxSoloJobs);
  } else {
    solo_jobs_after_loss_ = std::max(solo_jobs_after_loss_ / 2, 1);
  }
}

void ThreadPool::worker_loop() {
  uint32_t seen = 0;
  while (const std::optional<uint32_t> generation = wait_for_job(seen)) {
    seen = *generation;
    work_on(seen);
  }
}

std::optional<uint32_t> ThreadPool::wait_for_job(uint32_t seen) {
  auto posted = [&] { return generation_of(job_.load()) != seen; };
  if (!spin_until(posted, spin_time_)) {
    std::unique_lock lock(mutex_);
    sleeping_workers_.fetch_add(1);
    job_posted_.wait(lock, [&] { return stopping_ || posted(); });
    sleeping_workers_.fetch_sub(1);
    if (stopping_) return std::nullopt;
  }
  return generation_of(job_.load());
}

int ThreadPool::work_on(uint32_t generation) {
  int tasks_run = 0;
  int task_index = claim_task(generation);
  // Tasks are left for others: wake one more worker, who does the same when it claims its
  // first task. A job so wakes at most as many threads as it has tasks, never the whole pool.
  if (task_index > 0) wake_one_worker();
  for (; task_index >= 0; task_index = claim_task(generation)) {
    const int n_tasks = n_tasks_;
    task_(task_index);
    // After this count the job may be over and task_ rewritten: touch no job data past it.
    if (finished_tasks_.fetch_add(1) + 1 == n_tasks && caller_sleeping_.load()) {
      { std::lock_guard lock(mutex_); }  // the caller is inside wait() once we hold the mutex
      job_finished_.notify_one();
    }
    ++tasks_run;
  }
  return tasks_run;
}

int ThreadPool::claim_task(uint32_t generation) {
  uint64_t job = job_.load();
  while (generation_of(job) == generation && unclaimed_tasks_of(job) > 0) {
    // Tasks are handed out from the last one down: the index is the count left after this one.
    if (job_.compare_exchange_weak(job, job - 1)) return int(unclaimed_tasks_of(job) - 1);
  }
  return -1;
}

void ThreadPool::wake_one_worker() {
  if (sleeping_workers_.load() == 0) return;
  // A worker that has counted itself as sleeping holds the mutex until it is inside wait().
  { std::lock_guard lock(mutex_); }
  job_posted_.notify_one();
}

void ThreadPool::wait_until_finished(int n_tasks) {
  auto finished = [&] { return finished_tasks_.load() == n_tasks; };
  if (spin_until(finished, spin_time_)) return;
  std::unique_lock lock(mutex_);
  caller_sleeping_.store(true);
  job_finished_.wait(lock, finished);
  caller_sleeping_.store(false);
}

int available_cores() {
  cpu_set_t cores;
  CPU_ZERO(&cores);
  if (sched_getaffinity(0, sizeof cores, &cores) == 0) return std::max(1, CPU_COUNT(&cores));
  // Fails only on machines with more cores than a cpu_set_t holds (1024).
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

namespace {
std::unique_ptr<ThreadPool>& pool_instance() {
  static std::unique_ptr<ThreadPool> pool;
  return pool;
}
}  // namespace

ThreadPool& thread_pool() {
  auto& pool = pool_instance();
  if (!pool) pool = std::make_unique<ThreadPool>(available_cores());
  return *pool;
}

void set_thread_count(int n_threads) {
  const int cores = available_cores();
  if (n_threads > cores) {
    spdlog::warn("-t {}: more threads than the {} available cores; expect it to be slower",
                 n_threads, cores);
  }
  auto& pool = pool_instance();
  pool.reset();  // the old workers stop before the new ones start
  pool = std::make_unique<ThreadPool>(n_threads);
}

}  // namespace attn
