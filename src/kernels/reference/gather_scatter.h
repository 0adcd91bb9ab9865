// Reference kernels of the indexing ops: Gather, GatherElements, GatherND, ScatterElements,
// ScatterND, OneHot, NonZero, Compress. Indices are int32 or int64; negative ones count from the
// back; an index out of range is an error (never a wild read or write).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

// y = data indexed along `axis` by `indices`: y.dims = data[:axis] + indices.dims + data[axis+1:].
Status gather(const Tensor& data, const Tensor& indices, int64_t axis, Tensor& y);

// y[i...] = data[i... with i[axis] replaced by indices[i...]]; y.dims = indices.dims.
Status gather_elements(const Tensor& data, const Tensor& indices, int64_t axis, Tensor& y);

// Gathers slices of data addressed by the last dim of indices, after `batch_dims` shared leading
// dims: y.dims = indices.dims[:-1] + data.dims[batch_dims + k:] with k = indices.dims[-1].
Status gather_nd(const Tensor& data, const Tensor& indices, int64_t batch_dims, Tensor& y);

// How a scatter combines an update with the value already there. On bool, add/max act as OR and
// mul/min as AND; on strings only kNone is allowed.
enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };
core::Result<ScatterReduction> parse_scatter_reduction(const std::string& s);

// y = data with updates written (or combined) at the positions indices name along `axis`.
Status scatter_elements(const Tensor& data, const Tensor& indices, const Tensor& updates, int64_t axis,
                        ScatterReduction red, Tensor& y);
// y = data with update slices written (or combined) at the index tuples in the last dim of indices.
Status scatter_nd(const Tensor& data, const Tensor& indices, const Tensor& updates, ScatterReduction red, Tensor& y);

// One-hot along `axis` of the output (rank indices.rank + 1): values[1] where the index (negative
// ones plus depth) equals the position, values[0] elsewhere; indices outside [-depth, depth) give
// an all-off row. Indices may be any numeric dtype (fractions truncate).
Status one_hot(const Tensor& indices, int64_t depth, const Tensor& values, int64_t axis, Tensor& y);

// Number of non-zero elements (bool true, any numeric != 0).
core::Result<int64_t> count_nonzero(const Tensor& x);
// y (int64 [max(rank, 1), count]) = the coordinates of the non-zero elements, row-major order. A
// scalar is treated as a 1-element vector (as numpy does).
Status nonzero(const Tensor& x, Tensor& y);

// Compress: the dims of the result, then the copy. Without axis the input is flattened. The
// condition (bool 1-D) may be shorter than the dim (the rest is dropped); entries past the dim
// must be false.
core::Result<core::Dims> compress_dims(const Tensor& x, const Tensor& condition, std::optional<int64_t> axis);
Status compress(const Tensor& x, const Tensor& condition, std::optional<int64_t> axis, Tensor& y);

}  // namespace kestrel::kernels::ref
