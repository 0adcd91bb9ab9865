// ThreadPool: every task runs once (also across back-to-back jobs and after the workers slept),
// nested calls run inline, and pools torn down at once (before their workers first ran) do not hang.
#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace kestrel {
namespace {

TEST(ThreadPool, EveryTaskRunsOnce) {
  for (int threads : {1, 2, 3}) {
    core::ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{1000}}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.run(n, [&](int64_t t) { hits[static_cast<size_t>(t)].fetch_add(1); });
      for (int64_t t = 0; t < n; ++t) EXPECT_EQ(hits[static_cast<size_t>(t)].load(), 1) << threads << " " << n;
    }
  }
}

// Kernels rely on this for cache locality: range 0 of parallel_for (task 0 of run) is the caller's.
TEST(ThreadPool, TaskZeroRunsOnTheCaller) {
  for (int threads : {2, 3}) {
    core::ThreadPool pool(threads);
    for (int rep = 0; rep < 50; ++rep) {
      std::thread::id first;
      pool.run(threads, [&](int64_t t) {
        if (t == 0) first = std::this_thread::get_id();
      });
      EXPECT_EQ(first, std::this_thread::get_id());
      std::thread::id range0;
      pool.parallel_for(100, 1, [&](int64_t b, int64_t) {
        if (b == 0) range0 = std::this_thread::get_id();
      });
      EXPECT_EQ(range0, std::this_thread::get_id());
    }
  }
}

TEST(ThreadPool, RunOnEachThreadRunsOncePerThread) {
  for (int threads : {1, 2, 3}) {
    core::ThreadPool pool(threads);
    for (int rep = 0; rep < 20; ++rep) {
      std::mutex mu;
      std::vector<std::thread::id> ids;
      pool.run_on_each_thread([&] {
        std::lock_guard<std::mutex> lock(mu);
        ids.push_back(std::this_thread::get_id());
      });
      ASSERT_EQ(ids.size(), static_cast<size_t>(threads));
      std::sort(ids.begin(), ids.end());
      EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end()) << "a thread ran fn twice";
    }
  }
}

TEST(ThreadPool, ParallelForCoversTheRange) {
  core::ThreadPool pool(2);
  for (int64_t n : {int64_t{1}, int64_t{5}, int64_t{97}}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    pool.parallel_for(n, 3, [&](int64_t b, int64_t e) {
      EXPECT_LT(b, e);
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1);
  }
}

TEST(ThreadPool, ParallelForRangesHonourTheGrain) {
  core::ThreadPool pool(3);
  for (int64_t n : {int64_t{5}, int64_t{8}, int64_t{9}, int64_t{100}}) {
    for (int64_t grain : {int64_t{1}, int64_t{3}, int64_t{4}, int64_t{50}}) {
      std::atomic<int> ranges{0};
      std::atomic<int64_t> covered{0};
      pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
        if (n >= grain) {
          EXPECT_GE(e - b, grain) << n << " " << grain;
        }
        ranges.fetch_add(1);
        covered.fetch_add(e - b);
      });
      EXPECT_EQ(covered.load(), n);
      EXPECT_LE(ranges.load(), 3);
      EXPECT_EQ(ranges.load(), std::min<int64_t>(3, std::max<int64_t>(n / grain, 1))) << n << " " << grain;
    }
  }
}

TEST(ThreadPool, NestedRunIsInline) {
  core::ThreadPool pool(2);
  std::atomic<int> inner{0};
  pool.run(4, [&](int64_t) { pool.run(3, [&](int64_t) { inner.fetch_add(1); }); });
  EXPECT_EQ(inner.load(), 12);
}

TEST(ThreadPool, SerialFallbacks) {
  // No pool: the free parallel_for runs the whole range inline, once; n <= 0 calls nothing.
  std::vector<std::pair<int64_t, int64_t>> calls;
  core::parallel_for(nullptr, 10, 1, [&](int64_t b, int64_t e) { calls.emplace_back(b, e); });
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0], (std::pair<int64_t, int64_t>{0, 10}));
  core::parallel_for(nullptr, 0, 1, [&](int64_t, int64_t) { ADD_FAILURE() << "called for n = 0"; });
  core::ThreadPool pool(2);
  pool.parallel_for(-3, 1, [&](int64_t, int64_t) { ADD_FAILURE() << "called for n < 0"; });
  pool.run(0, [&](int64_t) { ADD_FAILURE() << "called for 0 tasks"; });
  // A grain larger than the range: one inline call on the caller's thread.
  calls.clear();
  std::thread::id who;
  pool.parallel_for(7, 100, [&](int64_t b, int64_t e) {
    calls.emplace_back(b, e);
    who = std::this_thread::get_id();
  });
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0], (std::pair<int64_t, int64_t>{0, 7}));
  EXPECT_EQ(who, std::this_thread::get_id());
  // One thread: every task on the caller, in order.
  core::ThreadPool one(1);
  std::vector<int64_t> order;
  one.run(5, [&](int64_t t) {
    order.push_back(t);
    EXPECT_EQ(std::this_thread::get_id(), who);
  });
  EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(ThreadPool, NestedParallelForCoversEveryPair) {
  core::ThreadPool pool(3);
  constexpr int64_t kOuter = 9, kInner = 13;
  std::vector<std::atomic<int>> hits(kOuter * kInner);
  pool.parallel_for(kOuter, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      pool.parallel_for(kInner, 1, [&](int64_t ib, int64_t ie) {
        for (int64_t j = ib; j < ie; ++j) hits[static_cast<size_t>(i * kInner + j)].fetch_add(1);
      });
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

// Jobs submitted from several outside threads at once are serialized, each complete.
TEST(ThreadPool, ConcurrentCallersEachGetTheirWholeJob) {
  core::ThreadPool pool(2);
  constexpr int kCallers = 3, kJobs = 50, kTasks = 17;
  std::vector<std::atomic<int>> sums(kCallers);
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([&, c] {
      for (int j = 0; j < kJobs; ++j) pool.run(kTasks, [&](int64_t t) { sums[c].fetch_add(static_cast<int>(t) + 1); });
    });
  for (auto& t : callers) t.join();
  for (auto& s : sums) EXPECT_EQ(s.load(), kJobs * kTasks * (kTasks + 1) / 2);
}

// Tasks are claimed without a lock, so a worker that wakes late for a job that is over claims
// from the job that is current. Back-to-back jobs of different sizes, each task tagged with its
// job: every task of every job runs exactly once, through that job's function.
TEST(ThreadPool, BackToBackJobsEachRunEveryTaskOnce) {
  for (int threads : {2, 3}) {
    core::ThreadPool pool(threads);
    constexpr int kJobs = 20000, kMaxTasks = 9;
    auto tasks_of = [](int j) { return 2 + j % (kMaxTasks - 1); };
    std::vector<std::atomic<int>> hits(static_cast<size_t>(kJobs) * kMaxTasks);
    for (int j = 0; j < kJobs; ++j)
      pool.run(tasks_of(j),
               [&, j](int64_t t) { hits[static_cast<size_t>(j) * kMaxTasks + static_cast<size_t>(t)].fetch_add(1); });
    int wrong = 0;
    for (int j = 0; j < kJobs; ++j)
      for (int t = 0; t < kMaxTasks; ++t)
        wrong += hits[static_cast<size_t>(j) * kMaxTasks + t].load() != (t < tasks_of(j) ? 1 : 0);
    EXPECT_EQ(wrong, 0) << threads << " threads";
  }
}

// Idle workers sleep after a short spin; a job must wake them (each task here waits until every
// thread holds one, so the job only finishes if all the workers joined it).
TEST(ThreadPool, SleepingWorkersWakeForTheNextJob) {
  for (int threads : {2, 3}) {
    core::ThreadPool pool(threads);
    for (int rep = 0; rep < 5; ++rep) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // well past the spin time
      std::atomic<int> started{0};
      std::mutex mu;
      std::vector<std::thread::id> ids;
      pool.run(threads, [&](int64_t) {
        {
          std::lock_guard<std::mutex> lock(mu);
          ids.push_back(std::this_thread::get_id());
        }
        started.fetch_add(1);
        while (started.load() < threads) std::this_thread::yield();
      });
      std::sort(ids.begin(), ids.end());
      EXPECT_EQ(std::unique(ids.begin(), ids.end()) - ids.begin(), threads);
    }
  }
}

// A worker that had not started when the destructor ran used to sleep through the stop signal
// (it took the already-bumped generation as its starting point), and join() hung.
TEST(ThreadPool, ImmediateDestructionDoesNotHang) {
  for (int i = 0; i < 300; ++i) {
    core::ThreadPool pool(1 + i % 3);
    if (i % 2) pool.run(2, [](int64_t) {});
  }
}

}  // namespace
}  // namespace kestrel
