// Aligned allocation.
#include "core/buffer.h"

#include <cstdlib>
#include <cstring>

#include "core/str_util.h"

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

}  // namespace kestrel::core
