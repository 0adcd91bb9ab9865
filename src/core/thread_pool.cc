// ThreadPool implementation: generation counter + spin-then-sleep workers, atomic task counter.
#include "core/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#define KESTREL_PAUSE() _mm_pause()
#else
#define KESTREL_PAUSE() std::this_thread::yield()
#endif

namespace kestrel::core {

namespace {
thread_local bool t_inside_pool_task = false;
constexpr int kSpinIterations = 20000;  // ~ tens of microseconds before sleeping
}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::work_on(const FunctionRef<void(int64_t)>& fn, int64_t num_tasks) {
  bool was_inside = t_inside_pool_task;
  t_inside_pool_task = true;
  for (;;) {
    int64_t t = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (t >= num_tasks) break;
    fn(t);
    done_tasks_.fetch_add(1, std::memory_order_release);
  }
  t_inside_pool_task = was_inside;
}

void ThreadPool::worker_loop() {
  // The generation at construction (0), not a fresh load: a job or the destructor's stop posted
  // before this thread got scheduled would otherwise be missed and the thread wait forever.
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen && spins < kSpinIterations) {
      KESTREL_PAUSE();
      ++spins;
    }
    const FunctionRef<void(int64_t)>* fn = nullptr;
    int64_t num_tasks = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
      seen = generation_.load();
      if (stop_) return;
      // Registering under the lock means the job cannot be torn down while we work on it.
      if (!fn_) continue;
      fn = fn_;
      num_tasks = num_tasks_;
      ++active_workers_;
    }
    work_on(*fn, num_tasks);
    std::lock_guard<std::mutex> lock(mu_);
    --active_workers_;
  }
}

void ThreadPool::run(int64_t num_tasks, FunctionRef<void(int64_t)> fn) {
  if (num_tasks <= 0) return;
  if (workers_.empty() || num_tasks == 1 || t_inside_pool_task) {
    for (int64_t t = 0; t < num_tasks; ++t) fn(t);
    return;
  }
  std::lock_guard<std::mutex> job_lock(run_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    num_tasks_ = num_tasks;
    next_task_.store(0, std::memory_order_relaxed);
    done_tasks_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  work_on(fn, num_tasks);
  while (done_tasks_.load(std::memory_order_acquire) < num_tasks) KESTREL_PAUSE();
  // Late workers may still be registered (they found no task left); wait for them to leave.
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (active_workers_ == 0) {
        fn_ = nullptr;
        return;
      }
    }
    KESTREL_PAUSE();
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int64_t max_chunks = (n + grain - 1) / grain;
  int64_t chunks = std::min<int64_t>(max_chunks, num_threads());
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
  run(chunks, [&](int64_t c) {
    int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
    if (begin < end) fn(begin, end);
  });
}

void parallel_for(ThreadPool* pool, int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn) {
  if (pool) pool->parallel_for(n, grain, fn);
  else if (n > 0) fn(0, n);
}

}  // namespace kestrel::core
