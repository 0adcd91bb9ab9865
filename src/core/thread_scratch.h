// ScratchSlot: per-thread scratch buffers for kernels (packing panels, im2col strips, padded rows).
//
// Each slot is one static object at its use site; every thread gets its own buffer per slot, which
// only grows. The guarantee that keeps run() allocation-free for static shapes whichever pool
// thread takes which task: every slot records the largest size any thread has asked for (its
// high-water mark), and after a run in which a mark rose, the session has each of its pool threads
// grow its buffers to the marks (ThreadPool::run_on_each_thread + reserve_high_water). So a task
// that lands on another thread in a later run finds its buffer already there.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace kestrel::core {

class ScratchSlot {
 public:
  static constexpr int kMaxSlots = 32;

  ScratchSlot() noexcept;  // only as static / namespace-scope objects (at most kMaxSlots)
  ScratchSlot(const ScratchSlot&) = delete;
  ScratchSlot& operator=(const ScratchSlot&) = delete;

  // This thread's buffer of at least `bytes` (64-byte aligned, contents unspecified), or null if
  // the allocation failed. A later call on the same slot and thread may return a new buffer.
  void* get(size_t bytes) noexcept;
  template <class T>
  T* get_as(size_t count) noexcept {
    return count > SIZE_MAX / sizeof(T) ? nullptr : static_cast<T*>(get(count * sizeof(T)));
  }

  // Grows this thread's buffers to every slot's high-water mark (best effort: a failed allocation
  // leaves that buffer as it was; get() retries then).
  static void reserve_high_water() noexcept;
  // Rises whenever some slot's high-water mark does.
  static uint64_t epoch() noexcept { return epoch_.load(std::memory_order_acquire); }

 private:
  int id_;
  static std::atomic<int> count_;
  static std::atomic<size_t> high_water_[kMaxSlots];
  static std::atomic<uint64_t> epoch_;
};

}  // namespace kestrel::core
