// Aligned allocation.
#include "core/buffer.h"

#include <cstdlib>
#include <cstring>

#include "core/str_util.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace kestrel::core {

void AlignedFree::operator()(void* p) const { std::free(p); }

static void* raw_alloc(size_t bytes) {
  size_t n = align_up(bytes == 0 ? 1 : bytes);
  if (n < bytes) return nullptr;  // wrapped
  void* p = std::aligned_alloc(kAlignment, n);
  if (p) std::memset(p, 0, n);
  return p;
}

Result<std::shared_ptr<void>> allocate_aligned(size_t bytes) {
  void* p = raw_alloc(bytes);
  if (!p) return Status(StatusCode::kOutOfMemory, str_cat("cannot allocate ", bytes, " bytes"));
  return std::shared_ptr<void>(p, AlignedFree{});
}

Result<AlignedPtr> allocate_aligned_unique(size_t bytes) {
  void* p = raw_alloc(bytes);
  if (!p) return Status(StatusCode::kOutOfMemory, str_cat("cannot allocate ", bytes, " bytes"));
  return AlignedPtr(p);
}

Result<AlignedPtr> allocate_arena(size_t bytes) {
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t align = bytes >= kHugePage ? kHugePage : kAlignment;
  const size_t n = align_up(bytes == 0 ? 1 : bytes, align);
  void* p = n < bytes ? nullptr : std::aligned_alloc(align, n);
  if (!p) return Status(StatusCode::kOutOfMemory, str_cat("cannot allocate ", bytes, " bytes"));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Advice only: without transparent huge pages this changes nothing.
  if (align == kHugePage) (void)madvise(p, n, MADV_HUGEPAGE);
#endif
  return AlignedPtr(p);
}

}  // namespace kestrel::core
