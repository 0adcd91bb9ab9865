// 64-byte aligned heap memory with shared ownership.
#pragma once

#include <cstddef>
#include <memory>

#include "core/status.h"

namespace kestrel::core {

constexpr size_t kAlignment = 64;

inline size_t align_up(size_t n, size_t a = kAlignment) { return (n + a - 1) / a * a; }

// Allocates `bytes` (rounded up to kAlignment, at least kAlignment) aligned to kAlignment,
// zero-filled. Returns kOutOfMemory instead of throwing.
Result<std::shared_ptr<void>> allocate_aligned(size_t bytes);

// Owning aligned allocation with unique ownership (scratch space, arenas).
struct AlignedFree {
  void operator()(void* p) const;
};
using AlignedPtr = std::unique_ptr<void, AlignedFree>;
Result<AlignedPtr> allocate_aligned_unique(size_t bytes);

// Activation arenas: NOT zero-filled (every kernel writes its outputs before they are read), and
// from 2 MiB up aligned to 2 MiB and advised for transparent huge pages (Linux), so the first
// touch of the arena faults once per 2 MiB instead of once per 4 KiB page (a 6 MiB arena zeroed
// here cost ~1500 page faults, 20-60 ms of session creation on a loaded VM).
Result<AlignedPtr> allocate_arena(size_t bytes);

}  // namespace kestrel::core
