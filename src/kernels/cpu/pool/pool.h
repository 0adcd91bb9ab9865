// Fast f32 pooling for NCHW: 2-D MaxPool (no indices output) and GlobalAveragePool, planes spread
// over the thread pool. Same semantics as kernels/reference/pool.h (padding taps are absent; a
// window with no input element gives -inf).
#pragma once

#include "core/status.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/reference/pool.h"

namespace kestrel::kernels::cpu {

// x [N, C, H, W], y [N, C, OH, OW] (output size from y); p: 2 spatial axes.
core::Status max_pool_2d(const ref::PoolParams& p, const core::Tensor& x, core::Tensor& y, core::ThreadPool* pool);

// x [N, C, ...], y [N, C, 1, ...]: the mean of each plane.
core::Status global_average_pool(const core::Tensor& x, core::Tensor& y, core::ThreadPool* pool);

}  // namespace kestrel::kernels::cpu
