// Reference kernels of ops that belong to no larger family: Unique (sorted or in order of first
// occurrence, flattened or along an axis), ReverseSequence and Shrink.
#pragma once

#include <cstdint>
#include <optional>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

struct UniqueResult {
  Tensor y;        // the unique values (or slices along the axis), x's dtype
  Tensor indices;  // int64: first occurrence of each in x
  Tensor inverse;  // int64: for each element (slice) of x, its position in y
  Tensor counts;   // int64: occurrences of each
};
// Unique elements of the flattened x (axis empty) or unique slices along `axis` (normalized),
// ascending (lexicographic for slices) when `sorted`, else in order of first occurrence. Every
// dtype; NaNs compare equal to each other and after every number, -0 equals +0.
core::Result<UniqueResult> unique(const Tensor& x, std::optional<int64_t> axis, bool sorted);

// y = x with the first seq_lens[b] steps of each batch entry reversed along time_axis. batch_axis
// and time_axis are 0 and 1 in some order; lengths must lie in [0, time steps]. Every dtype.
Status reverse_sequence(const Tensor& x, const Tensor& seq_lens, int64_t batch_axis, int64_t time_axis, Tensor& y);

// y = x + bias where x < -lambd, x - bias where x > lambd, else 0. Numeric dtypes; integer results
// truncate toward zero (and saturate), as the ONNX reference's cast does.
Status shrink(float lambd, float bias, const Tensor& x, Tensor& y);

}  // namespace kestrel::kernels::ref
