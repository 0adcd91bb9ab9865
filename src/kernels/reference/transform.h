// Reference kernels of the data-rearranging ops: Transpose, Concat, Split, Slice, Tile, Pad,
// DepthToSpace, SpaceToDepth, Trilu. They only move elements, so every dtype works (strings too).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

// Copies the elements x[base + sum_d idx[d] * src_strides[d]] for every index of out_dims, in
// row-major order, into y (which has out_dims' element count). The caller keeps every address
// inside x; strides may be negative or 0.
void strided_copy(const Tensor& x, int64_t base, const core::Dims& out_dims, const core::Dims& src_strides, Tensor& y);

// y = x with dims permuted: y.dims[i] = x.dims[perm[i]]. Empty perm reverses the dims.
Status transpose(const Tensor& x, std::span<const int64_t> perm, Tensor& y);

// Joins the inputs along `axis` (negative counts from the back); y has the joined shape.
Status concat(std::span<const Tensor* const> xs, int64_t axis, Tensor& y);

// Cuts x along `axis` into the outputs, whose dims along axis give the sizes.
Status split(const Tensor& x, int64_t axis, std::span<Tensor* const> ys);

// Split sizes along a dim of size `dim`: the `split` values if given (they must add up to dim),
// else `num_outputs` chunks of ceil(dim / n) with a smaller last one (opset 18), else `count`
// equal parts (dim must divide evenly).
core::Result<std::vector<int64_t>> split_sizes(int64_t dim, const std::optional<std::vector<int64_t>>& split,
                                               std::optional<int64_t> num_outputs, int64_t count);

// One axis of a resolved Slice: first index, step and element count.
struct SliceAxis {
  int64_t start = 0, step = 1, count = 0;
};
// Resolves ONNX Slice inputs against dims: negative starts/ends count from the back, then clamp
// ([0, dim] for positive steps, [-1, dim - 1] for negative ones); axes default to 0..n-1, steps
// to 1. Errors: length mismatch, bad or repeated axis, step 0.
core::Result<std::vector<SliceAxis>> resolve_slice(const core::Dims& dims, std::span<const int64_t> starts,
                                                   std::span<const int64_t> ends, std::span<const int64_t> axes,
                                                   std::span<const int64_t> steps);
// y = x sliced as resolved (y must have the sliced dims).
Status slice(const Tensor& x, std::span<const SliceAxis> spec, Tensor& y);

// y = x repeated repeats[d] times along every dim d.
Status tile(const Tensor& x, std::span<const int64_t> repeats, Tensor& y);

enum class PadMode { kConstant, kReflect, kEdge, kWrap };
// pads: [b_0, ..., b_{r-1}, e_0, ..., e_{r-1}] for every dim; negative values crop (cropping is
// applied first, then the mode pads from the cropped tensor). `value`: constant for kConstant
// (one element of x's dtype), absent = zero.
Status pad(const Tensor& x, std::span<const int64_t> pads, PadMode mode, const Tensor* value, Tensor& y);
// Expands Pad-18's (pads, axes) to pads over every dim of a rank-`rank` tensor.
core::Result<std::vector<int64_t>> full_pads(int64_t rank, std::span<const int64_t> pads,
                                             std::optional<std::vector<int64_t>> axes);

// NCHW DepthToSpace (DCR or CRD ordering) and SpaceToDepth with block size b.
Status depth_to_space(const Tensor& x, int64_t b, bool crd, Tensor& y);
Status space_to_depth(const Tensor& x, int64_t b, Tensor& y);

// y = x's upper (col - row >= k) or lower (col - row <= k) triangle of every matrix in the last
// two dims, zeros elsewhere.
Status trilu(const Tensor& x, int64_t k, bool upper, Tensor& y);

}  // namespace kestrel::kernels::ref
