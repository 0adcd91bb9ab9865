// core::ScratchSlot: once every pool thread has grown its buffers to the high-water marks
// (what Session::run does after a run that raised one), tasks allocate nothing on whichever
// thread they land.
#include "core/thread_scratch.h"

#include <gtest/gtest.h>

#include <atomic>

#include "core/thread_pool.h"
#include "testing/alloc_counter.h"

namespace kestrel {
namespace {

core::ScratchSlot g_slot_a, g_slot_b;

TEST(ThreadScratch, AfterReserveNoThreadAllocates) {
  core::ThreadPool pool(2);
  // Only the caller asks (task 0 always runs there): the worker has no buffer yet.
  const uint64_t epoch0 = core::ScratchSlot::epoch();
  pool.run(1, [&](int64_t) {
    ASSERT_NE(g_slot_a.get_as<float>(5000), nullptr);
    ASSERT_NE(g_slot_b.get(123), nullptr);
  });
  EXPECT_GT(core::ScratchSlot::epoch(), epoch0);
  pool.run_on_each_thread([] { core::ScratchSlot::reserve_high_water(); });
  const uint64_t epoch1 = core::ScratchSlot::epoch();
  const uint64_t before = kestrel::testing::alloc_count();
  std::atomic<int> ok{0};
  for (int rep = 0; rep < 50; ++rep)
    pool.run(8, [&](int64_t t) {
      float* a = g_slot_a.get_as<float>(static_cast<size_t>(1000 + 500 * t));  // at most 4500 floats
      auto* b = static_cast<unsigned char*>(g_slot_b.get(123));
      if (a && b && reinterpret_cast<uintptr_t>(a) % 64 == 0) {
        a[4499 - 500 * (7 - t)] = 1.f;  // the whole request is writable
        b[122] = 1;
        ok.fetch_add(1);
      }
    });
  EXPECT_EQ(kestrel::testing::alloc_count() - before, 0u);
  EXPECT_EQ(ok.load(), 50 * 8);
  EXPECT_EQ(core::ScratchSlot::epoch(), epoch1);
  // A larger request raises the mark again.
  pool.run(1, [&](int64_t) { ASSERT_NE(g_slot_a.get_as<float>(6000), nullptr); });
  EXPECT_GT(core::ScratchSlot::epoch(), epoch1);
}

}  // namespace
}  // namespace kestrel
