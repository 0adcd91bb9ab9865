// ThreadPool: persistent workers for parallel_for over tiles; the caller thread takes part.
// Workers spin briefly after a job (next kernel usually follows at once), then sleep.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "core/function_ref.h"

namespace kestrel::core {

class ThreadPool {
 public:
  // num_threads counts the caller: 1 means no worker threads at all.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(task) for every task in [0, num_tasks), spread over the threads; returns when all are
  // done. Task 0 runs on the calling thread; the others are taken dynamically. Allocates nothing.
  // Nested calls from inside a task run serially on the calling thread.
  void run(int64_t num_tasks, FunctionRef<void(int64_t)> fn);

  // Splits [0, n) into at most num_threads() contiguous ranges of at least `grain` items (sizes
  // differ by at most one item) and calls fn(begin, end) on each; a single range runs inline. The
  // first range runs on the calling thread.
  void parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn);

  // Runs fn() once on every thread of the pool (the caller and each worker), e.g. to grow per-thread
  // scratch (core/thread_scratch.h). Blocks until all have. From inside a task: fn() on this thread only.
  void run_on_each_thread(FunctionRef<void()> fn);

 private:
  void worker_loop(uint64_t seen);
  // Claims tasks of the current job until none is left (task index >= count in claim_).
  void take_tasks();
  void run_job(int64_t num_tasks, FunctionRef<void(int64_t)> fn);

  std::vector<std::thread> workers_;
  // Waking: run() bumps generation_; a worker spins on it for kSpinTime, then sleeps on wake_
  // (counted in sleepers_, so run() takes mu_ and notifies only when someone sleeps).
  std::mutex mu_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};

  // Current job, without a lock: claim_ holds (task count << 32 | next task index). run() publishes
  // fn_ and resets done_tasks_ before it stores claim_ (release); a thread reads fn_ only after it
  // has claimed a task below the count (acquire), and run() returns only when every task is done,
  // so fn_ stays valid while anyone can use it. A worker that wakes late for a job that is over
  // claims from whichever job is current, which is just as valid.
  std::atomic<const FunctionRef<void(int64_t)>*> fn_{nullptr};
  alignas(64) std::atomic<uint64_t> claim_{0};
  alignas(64) std::atomic<int64_t> done_tasks_{0};
  std::mutex run_mu_;  // one job at a time
};

// Runs fn(begin,end) over [0,n) on pool if given (and useful), else inline.
void parallel_for(ThreadPool* pool, int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn);

// Runs fn(task) for every task in [0, n): as pool->run when a pool is given (which itself runs
// them inline with one thread or one task), else in order on the calling thread.
void run_tasks(ThreadPool* pool, int64_t n, FunctionRef<void(int64_t)> fn);

}  // namespace kestrel::core
