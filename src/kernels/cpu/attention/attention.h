// Fast f32 scaled-dot-product attention (kestrel.Attention): per (batch, head), S = scale * Q K^T
// (+ mask) with sgemm, a vectorized row softmax, then Y = P V with sgemm. Same contract as
// kernels/reference/attention.h (B / H broadcast of q, k, v; numpy-broadcast additive mask).
#pragma once

#include "core/cpu_features.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/thread_pool.h"

namespace kestrel::kernels::cpu {

core::Status attention(float scale, const core::Tensor& q, const core::Tensor& k, const core::Tensor& v,
                       const core::Tensor* mask, core::Tensor& y, core::ThreadPool* pool, core::Isa isa);

}  // namespace kestrel::kernels::cpu
