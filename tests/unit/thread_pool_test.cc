// ThreadPool: every task runs once, nested calls run inline, and pools torn down at once (before
// their workers first ran) do not hang.
#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
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

TEST(ThreadPool, NestedRunIsInline) {
  core::ThreadPool pool(2);
  std::atomic<int> inner{0};
  pool.run(4, [&](int64_t) { pool.run(3, [&](int64_t) { inner.fetch_add(1); }); });
  EXPECT_EQ(inner.load(), 12);
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
