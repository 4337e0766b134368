// The thread pool: every task runs exactly once however the pool's size compares with the
// machine's, the default size follows the process's CPU affinity, and attn asked for far more
// threads than cores still works, with one warning.

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "src/kernels/thread_pool.h"
#include "tests/cli_util.h"
#include "tests/test_paths.h"

namespace attn {
namespace {

// Runs jobs of every size from 0 to max_tasks, `rounds` times, and checks that each task of
// each job ran exactly once, before run() returned.
void expect_each_task_once(ThreadPool& pool, int max_tasks, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    for (int n_tasks = 0; n_tasks <= max_tasks; ++n_tasks) {
      std::vector<std::atomic<int>> runs(n_tasks);
      pool.run(n_tasks, [&](int i) { runs[i].fetch_add(1); });
      for (int i = 0; i < n_tasks; ++i) {
        ASSERT_EQ(runs[i].load(), 1) << "task " << i << " of " << n_tasks << ", round " << round;
      }
    }
  }
}

TEST(ThreadPool, RunsEachTaskExactlyOnceWithOneThreadPerCore) {
  ThreadPool pool(available_cores());
  expect_each_task_once(pool, 40, 200);
}

TEST(ThreadPool, RunsEachTaskExactlyOnceWithMoreThreadsThanCores) {
  ThreadPool pool(4 * available_cores() + 3);
  expect_each_task_once(pool, 40, 50);
}

TEST(ThreadPool, RunsEachTaskExactlyOnceWhenTasksAreSlowAndUneven) {
  // Some tasks take long enough for idle workers to fall asleep in the middle of a job.
  ThreadPool pool(3);
  for (int round = 0; round < 20; ++round) {
    std::vector<std::atomic<int>> runs(7);
    pool.run(7, [&](int i) {
      if (i % 3 == round % 3) std::this_thread::sleep_for(std::chrono::microseconds(300));
      runs[i].fetch_add(1);
    });
    for (int i = 0; i < 7; ++i) ASSERT_EQ(runs[i].load(), 1) << "task " << i;
  }
}

TEST(ThreadPool, OneThreadRunsEverythingOnTheCaller) {
  ThreadPool pool(1);
  EXPECT_EQ(pool.size(), 1);
  const auto caller = std::this_thread::get_id();
  std::vector<std::thread::id> ran_on(5);
  pool.run(5, [&](int i) { ran_on[i] = std::this_thread::get_id(); });
  for (const auto& id : ran_on) EXPECT_EQ(id, caller);
}

TEST(ThreadPool, AvailableCoresFollowsTheCpuAffinity) {
  int cores_seen = 0;
  std::thread pinned([&] {
    cpu_set_t one_core;
    CPU_ZERO(&one_core);
    CPU_SET(sched_getcpu(), &one_core);
    ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof one_core, &one_core), 0);
    cores_seen = available_cores();
  });
  pinned.join();
  EXPECT_EQ(cores_seen, 1);
  EXPECT_GE(available_cores(), 1);
}

TEST(ThreadPoolCli, ThousandThreadsGiveTheSameTextWithOneWarning) {
  auto with_threads = [&](const std::string& threads) {
    return test::run_attn(
        {"generate", "-p", "The jury said", "-n", "8", "--temp", "0", "-t", threads});
  };
  const test::CommandResult one = with_threads("1");
  const test::CommandResult many = with_threads("1024");
  ASSERT_EQ(one.exit_status, 0) << test::describe(one);
  ASSERT_EQ(many.exit_status, 0) << test::describe(many);
  EXPECT_EQ(many.out, one.out);
  const std::string warning = "-t 1024: more threads than the " +
                              std::to_string(available_cores()) +
                              " available cores; expect it to be slower";
  const auto first = many.err.find(warning);
  EXPECT_NE(first, std::string::npos) << many.err;
  EXPECT_EQ(many.err.find(warning, first + 1), std::string::npos) << "warned twice: " << many.err;
}

TEST(ThreadPoolCli, TasksetToOneCoreMakesTwoThreadsTooMany) {
  const test::CommandResult result =
      test::run_program("/usr/bin/taskset", {"-c", "0", test::attn_binary().string(), "generate",
                                             "-p", "Hello", "-n", "2", "--temp", "0", "-t", "2"});
  ASSERT_EQ(result.exit_status, 0) << test::describe(result);
  EXPECT_NE(result.err.find("-t 2: more threads than the 1 available cores"), std::string::npos)
      << result.err;
}

// A second caller while a job runs (another thread: attn serve runs the model on one thread
// only) is an error, where it would wait forever for tasks the first caller took; the first job
// finishes, and the pool serves the next caller.
TEST(ThreadPool, ASecondCallerAtOnceIsAnError) {
  ThreadPool pool(2);
  std::atomic<bool> started = false, release = false;
  std::thread first([&] {
    pool.run(2, [&](int task) {
      if (task != 0) return;
      started = true;
      for (int wait = 0; wait < 10000 && !release; ++wait) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  });
  for (int wait = 0; wait < 10000 && !started; ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(started);
  EXPECT_THROW(pool.run(2, [](int) {}), std::logic_error);
  release = true;
  first.join();
  std::atomic<int> ran = 0;
  pool.run(4, [&](int) { ++ran; });
  EXPECT_EQ(ran, 4);
}

}  // namespace
}  // namespace attn
