// Fast Transpose and Slice for any fixed-size dtype, as one strided copy: dims coalesced, then
// contiguous rows copied with memcpy when the innermost dim stays innermost, else a cache-blocked
// 2-D transpose per outer index (or a strided row loop). Portable C++ (the copies are
// memory-bound; no ISA-specific code).
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

// y[i] = x[base + sum_d idx_d * in_strides[d]] over y's dims (strides in elements, any sign; every
// address inside x, as the caller guarantees). Returns false for strings and mismatched inputs.
bool strided_copy_fast(const core::Tensor& x, int64_t base, std::span<const int64_t> in_strides, core::Tensor& y,
                       core::ThreadPool* pool);

}  // namespace kestrel::kernels::cpu
