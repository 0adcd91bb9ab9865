#include "core/thread_scratch.h"

#include <cstdlib>
#include <new>

namespace kestrel::core {

std::atomic<int> ScratchSlot::count_{0};
std::atomic<size_t> ScratchSlot::high_water_[ScratchSlot::kMaxSlots];
std::atomic<uint64_t> ScratchSlot::epoch_{1};

namespace {

struct ThreadBuffers {
  void* ptr[ScratchSlot::kMaxSlots] = {};
  size_t size[ScratchSlot::kMaxSlots] = {};
  ~ThreadBuffers() {
    for (void* p : ptr) ::operator delete(p, std::align_val_t{64}, std::nothrow);
  }
};
thread_local ThreadBuffers t_buffers;

// Grows buffer `id` of this thread to at least `bytes`; false if the allocation failed.
bool grow(int id, size_t bytes) noexcept {
  ThreadBuffers& b = t_buffers;
  if (b.size[id] >= bytes) return true;
  const size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded < bytes) return false;
  void* p = ::operator new(rounded, std::align_val_t{64}, std::nothrow);
  if (!p) return false;
  ::operator delete(b.ptr[id], std::align_val_t{64}, std::nothrow);
  b.ptr[id] = p;
  b.size[id] = rounded;
  return true;
}

}  // namespace

ScratchSlot::ScratchSlot() noexcept : id_(count_.fetch_add(1, std::memory_order_relaxed)) {
  if (id_ >= kMaxSlots) std::abort();  // a programming error caught at static initialization
}

void* ScratchSlot::get(size_t bytes) noexcept {
  if (t_buffers.size[id_] >= bytes) return t_buffers.ptr[id_];
  if (!grow(id_, bytes)) return nullptr;
  const size_t have = t_buffers.size[id_];
  size_t mark = high_water_[id_].load(std::memory_order_relaxed);
  while (mark < have && !high_water_[id_].compare_exchange_weak(mark, have, std::memory_order_relaxed)) {
  }
  if (mark < have) epoch_.fetch_add(1, std::memory_order_release);
  return t_buffers.ptr[id_];
}

void ScratchSlot::reserve_high_water() noexcept {
  const int n = count_.load(std::memory_order_relaxed);
  for (int id = 0; id < n && id < kMaxSlots; ++id) grow(id, high_water_[id].load(std::memory_order_relaxed));
}

}  // namespace kestrel::core
