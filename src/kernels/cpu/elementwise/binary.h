// Fast f32 Add / Sub / Mul / Div for the broadcasts CNNs and transformers use: equal shapes, and
// one operand of the output's shape with the other varying along one contiguous run of axes
// (scalars, per-channel [1,C,1,1] as in squeeze-excite, per-feature [N] biases).
#pragma once

#include "core/status.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/reference/elementwise.h"

namespace kestrel::kernels::cpu {

// Returns false (and writes nothing) when the op, dtypes or broadcast pattern are not covered;
// the caller then runs the reference kernel. y has the broadcast shape.
bool binary_f32(ref::BinaryOp op, const core::Tensor& a, const core::Tensor& b, core::Tensor& y,
                core::ThreadPool* pool);

}  // namespace kestrel::kernels::cpu
