// Fast Transpose for any fixed-size dtype: dims coalesced, then contiguous rows copied with memcpy
// when the innermost dim stays innermost, else a cache-blocked 2-D transpose per outer index.
// Portable C++ (the copies are memory-bound; no ISA-specific code).
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"
#include "core/tensor.h"
#include "core/thread_pool.h"

namespace kestrel::kernels::cpu {

// y = transpose(x, perm) (empty perm: reverse). Returns false (nothing written) when the fast path
// does not apply (strings, invalid perm or output shape): the caller runs the reference kernel,
// which reports the error.
bool transpose_fast(const core::Tensor& x, std::span<const int64_t> perm, core::Tensor& y, core::ThreadPool* pool);

}  // namespace kestrel::kernels::cpu
