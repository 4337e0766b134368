#include "src/kernels/thread_pool.h"

#include <immintrin.h>

#include <memory>
#include <string>
#include <system_error>

#include "src/base/error.h"

namespace attn {

ThreadPool::ThreadPool(int n_threads) {
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
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::claim_tasks() {
  for (int i = next_task_.fetch_add(1); i < n_tasks_; i = next_task_.fetch_add(1)) (*task_)(i);
}

void ThreadPool::worker_loop() {
  unsigned seen = 0;
  while (true) {
    // Spin for a while (about a millisecond) before sleeping on the condition variable.
    for (int spin = 0; spin < 20000 && generation_.load(std::memory_order_acquire) == seen;
         ++spin) {
      _mm_pause();
    }
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
      seen = generation_.load();
      if (stopping_) return;
    }
    claim_tasks();
    busy_workers_.fetch_sub(1, std::memory_order_release);
  }
}

void ThreadPool::run(int n_tasks, const std::function<void(int)>& task) {
  if (workers_.empty() || n_tasks <= 1) {
    for (int i = 0; i < n_tasks; ++i) task(i);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    task_ = &task;
    n_tasks_ = n_tasks;
    next_task_.store(0);
    busy_workers_.store(int(workers_.size()));
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  claim_tasks();
  // Workers finish within microseconds unless the machine is oversubscribed and one of them
  // lost its core: then give the core away rather than spin against it.
  for (int spin = 0; busy_workers_.load(std::memory_order_acquire) > 0; ++spin) {
    if (spin < 4000) {
      _mm_pause();
    } else {
      std::this_thread::yield();
    }
  }
}

namespace {
std::unique_ptr<ThreadPool>& pool_instance() {
  static std::unique_ptr<ThreadPool> pool;
  return pool;
}
}  // namespace

ThreadPool& thread_pool() {
  auto& pool = pool_instance();
  if (!pool)
    pool = std::make_unique<ThreadPool>(int(std::max(1u, std::thread::hardware_concurrency())));
  return *pool;
}

void set_thread_count(int n_threads) { pool_instance() = std::make_unique<ThreadPool>(n_threads); }

}  // namespace attn
