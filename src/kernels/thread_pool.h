#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace attn {

// The one pool of worker threads in attn: every parallel loop, the matrix products included,
// runs its tasks here.
//
// A decode step hands out about a hundred small parallel regions in quick succession, and
// waking a sleeping thread costs more than many of them take, so idle workers spin for a few
// tens of microseconds (longer than the gap between two regions, far shorter than a time slice)
// before they sleep. A pool with more threads than the process may use cores does not spin at
// all: a spinning thread would take a core from one with work to do.
//
// run() returns once every task has finished, whoever ran it: the calling thread takes tasks
// too, so a worker that has not got a core (another process is busy, or the pool is larger
// than the machine) never holds it up unless it has already started a task.
//
// On a busy machine even that can cost more than sharing saves: a worker preempted in the
// middle of its task holds the caller up for a time slice or more. So run() compares every
// shared job with how long the caller alone would have taken (its own tasks' time, scaled to
// all tasks); after a job that lost, the next jobs run on the caller alone (1, 2, 4, ... up to
// kMaxSoloJobs after losses in a row), and then sharing is tried again.
class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }

  // Runs task(i) exactly once for every i in [0, n_tasks) on the pool (the calling thread
  // included) and returns when all are done. One caller at a time, and not reentrant: a task
  // must not call run() (std::logic_error).
  // `task` is any callable taking the index; the pool calls it through a plain function
  // pointer, so that a parallel region allocates nothing (a std::function may, for a lambda
  // capturing more than a couple of pointers), and a decode step starts dozens of them.
  template <class Task>
  void run(int n_tasks, const Task& task) {
    run_job(n_tasks, JobTask{.callable = &task, .call = [](const void* callable, int index) {
                               (*static_cast<const Task*>(callable))(index);
                             }});
  }

 private:
  // A borrowed callable and the function that calls it.
  struct JobTask {
    const void* callable = nullptr;
    void (*call)(const void* callable, int index) = nullptr;
    void operator()(int index) const { call(callable, index); }
  };

  void run_job(int n_tasks, JobTask task);
  static constexpr int kMaxSoloJobs = 256;

  void worker_loop();
  // Waits for a job newer than `seen`; returns its generation, or nothing when stopping.
  std::optional<uint32_t> wait_for_job(uint32_t seen);
  // Claims and runs tasks of the job `generation` until none is left unclaimed; returns how
  // many this thread ran.
  int work_on(uint32_t generation);
  int claim_task(uint32_t generation);
  void wake_one_worker();
  void wait_until_finished(int n_tasks);
  void stop_workers();
  // After a shared job: whether sharing paid off decides how many jobs run on the caller alone.
  void judge_sharing(double own_seconds, int own_tasks, double total_seconds, int n_tasks);

  std::vector<std::thread> workers_;
  const std::chrono::microseconds spin_time_;

  // The current job in one word, (generation << 32) | tasks nobody has claimed yet, so that
  // claiming a task also checks that its job is still current: a worker that lost its core and
  // comes back after its job finished cannot take a task of the next one.
  std::atomic<uint64_t> job_{0};
  std::atomic<int> finished_tasks_{0};
  // Written by run() before it publishes a job in job_; read only by a thread that holds an
  // unfinished task of that job, which keeps run() from returning and writing the next.
  JobTask task_;
  int n_tasks_ = 0;

  // Sleeping: workers wait for a new job, the caller of run() for the last task to finish.
  std::mutex mutex_;
  std::condition_variable job_posted_;
  std::condition_variable job_finished_;
  std::atomic<int> sleeping_workers_{0};
  std::atomic<bool> caller_sleeping_{false};
  bool stopping_ = false;

  // Whether a run() is under way: one caller at a time (a second, from another thread or from a
  // task, is a std::logic_error, where it would otherwise wait forever for tasks the first took).
  std::atomic<bool> running_{false};
  // Used by the caller of run() only.
  int solo_jobs_left_ = 0;
  int solo_jobs_after_loss_ = 1;
};

// The cores this process may run on (sched_getaffinity), so `taskset -c 0 attn` counts one.
int available_cores();

// The process-wide pool; set_thread_count() (re)sizes it, by default to available_cores(),
// and warns when asked for more threads than that.
ThreadPool& thread_pool();
void set_thread_count(int n_threads);

}  // namespace attn
