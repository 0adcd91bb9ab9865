// Fast Concat for any fixed-size dtype: memcpy of the inputs' blocks, the output split into
// byte ranges over the threads when it is large (ranges of each input when the output is one
// block per input, as a batch-1 channel concat).
#pragma once

#include <cstdint>
#include <span>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace kestrel::kernels::cpu {

// y = concat(xs, axis). Returns false (nothing written) when the fast path does not apply
// (strings, mismatched inputs or output, bad axis): the caller runs the reference kernel, which
// reports the error.
bool concat_fast(std::span<const core::Tensor* const> xs, int64_t axis, core::Tensor& y, core::ThreadPool* pool);

}  // namespace kestrel::kernels::cpu
