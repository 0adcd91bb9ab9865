// Counting replacements of the global allocation functions (see alloc_counter.h).
#include "testing/alloc_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

extern "C" {
void* __real_malloc(size_t n);
void* __real_calloc(size_t n, size_t size);
void* __real_realloc(void* p, size_t n);
void* __real_aligned_alloc(size_t align, size_t n);
int __real_posix_memalign(void** p, size_t align, size_t n);
}

namespace kestrel::testing {
namespace {

std::atomic<uint64_t> g_count{0};
std::atomic<uint64_t> g_bytes{0};

inline void note(size_t n) {
  g_count.fetch_add(1, std::memory_order_relaxed);
  g_bytes.fetch_add(n, std::memory_order_relaxed);
}

void* counted_new(size_t n) {
  note(n);
  void* p = __real_malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  return p;
}

void* counted_new_aligned(size_t n, std::align_val_t al) {
  note(n);
  size_t a = static_cast<size_t>(al);
  if (a < sizeof(void*)) a = sizeof(void*);
  void* p = nullptr;
  if (__real_posix_memalign(&p, a, n ? n : 1) != 0) throw std::bad_alloc();
  return p;
}

}  // namespace

uint64_t alloc_count() {
  return g_count.load(std::memory_order_relaxed);
}
uint64_t alloc_bytes() {
  return g_bytes.load(std::memory_order_relaxed);
}

}  // namespace kestrel::testing

using kestrel::testing::counted_new;
using kestrel::testing::counted_new_aligned;
using kestrel::testing::note;

extern "C" {
void* __wrap_malloc(size_t n) {
  note(n);
  return __real_malloc(n);
}
void* __wrap_calloc(size_t n, size_t size) {
  note(n * size);
  return __real_calloc(n, size);
}
void* __wrap_realloc(void* p, size_t n) {
  note(n);
  return __real_realloc(p, n);
}
void* __wrap_aligned_alloc(size_t align, size_t n) {
  note(n);
  return __real_aligned_alloc(align, n);
}
int __wrap_posix_memalign(void** p, size_t align, size_t n) {
  note(n);
  return __real_posix_memalign(p, align, n);
}
}

void* operator new(size_t n) {
  return counted_new(n);
}
void* operator new[](size_t n) {
  return counted_new(n);
}
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted_new(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted_new(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new(size_t n, std::align_val_t al) {
  return counted_new_aligned(n, al);
}
void* operator new[](size_t n, std::align_val_t al) {
  return counted_new_aligned(n, al);
}
void* operator new(size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  try {
    return counted_new_aligned(n, al);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  try {
    return counted_new_aligned(n, al);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
