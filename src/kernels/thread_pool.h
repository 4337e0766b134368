#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace attn {

// The one pool of worker threads in attn. OpenBLAS runs single-threaded inside its tasks: two
// pools competing for the same two cores would each slow the other down.
//
// Workers spin briefly between tasks before sleeping, because a decode step hands out about a
// hundred small parallel regions in quick succession and waking a sleeping thread costs more
// than many of them take.
class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }

  // Runs task(i) for every i in [0, n_tasks) on the pool (the calling thread included) and
  // returns when all are done.
  void run(int n_tasks, const std::function<void(int)>& task);

 private:
  void worker_loop();
  void stop_workers();
  void claim_tasks();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<unsigned> generation_{0};  // bumped for every run(); workers wait for a change
  std::atomic<int> next_task_{0};
  std::atomic<int> busy_workers_{0};
  int n_tasks_ = 0;
  const std::function<void(int)>* task_ = nullptr;
  bool stopping_ = false;
};

// The process-wide pool; set_thread_count() (re)sizes it, by default to all cores.
ThreadPool& thread_pool();
void set_thread_count(int n_threads);

}  // namespace attn
