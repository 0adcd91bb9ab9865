// Reference kernels of the shape ops: Reshape/Squeeze/Unsqueeze/Flatten (a copy into the new
// shape), Shape, Size, Expand, ConstantOfShape, Range, EyeLike. Every dtype, strings included,
// where the op only moves data.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

// y = x's elements in y's shape (same dtype and element count): Reshape, Squeeze, Unsqueeze, Flatten.
Status copy_reshaped(const Tensor& x, Tensor& y);

// Shape-15: y (int64, 1-D) = dims[start:end]; negative start/end count from the back, then clamp.
Status shape_of(const core::Dims& dims, int64_t start, int64_t end, Tensor& y);
// y (int64 scalar) = number of elements of a tensor with `dims`.
Status size_of(const core::Dims& dims, Tensor& y);

// y = x broadcast to y's shape (each x dim, aligned from the right, is 1 or equal to y's).
Status expand(const Tensor& x, Tensor& y);

// Fills y with the single element of `value` (same dtype as y).
Status constant_of_shape(const Tensor& value, Tensor& y);

// Element count of Range: max(ceil((limit - start) / delta), 0); error for delta 0, non-finite
// floats, or counts above core::kMaxElements. Scalars (or one-element tensors) of one numeric dtype.
core::Result<int64_t> range_count(const Tensor& start, const Tensor& limit, const Tensor& delta);
// y[i] = start + i * delta; y must have range_count elements.
Status range(const Tensor& start, const Tensor& limit, const Tensor& delta, Tensor& y);

// y (2-D, any numeric or bool dtype) = 1 where col - row == k, else 0.
Status eye_like(int64_t k, Tensor& y);

}  // namespace kestrel::kernels::ref
