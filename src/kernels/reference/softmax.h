// Reference Softmax, LogSoftmax and Hardmax along one axis (opset-13 semantics).
#pragma once

#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

// Along `axis` (already in [0, rank)): Softmax exp(x - max) / sum, LogSoftmax x - max - log(sum),
// Hardmax 1 at the first maximum and 0 elsewhere. Max-subtracted, so large inputs do not overflow.
Status softmax(SoftmaxKind kind, int64_t axis, const Tensor& x, Tensor& y);

}  // namespace kestrel::kernels::ref
