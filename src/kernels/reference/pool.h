// Reference pooling kernels: MaxPool (with optional argmax indices), AveragePool, LpPool and the
// global pools. Plain window loops accumulating in float (double for f64).
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

// Per spatial axis. Output spatial sizes come from y; window taps outside the input are skipped
// (padding never wins a max and adds nothing to a sum).
struct PoolParams {
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads_begin;
  std::vector<int64_t> pads_end;  // only AveragePool with count_include_pad reads it
};

// y = max over the window. Floats and i8/u8. NaN propagates. indices (i64, optional) receive
// the flat input index of the first maximum: ((n*C + c) * prod(D) + spatial offset), the spatial
// offset row-major, or column-major when `column_major` (storage_order=1). A window with no input
// element gives the type's lowest value (-inf for floats) and index -1.
Status max_pool(const PoolParams& p, const Tensor& x, Tensor& y, Tensor* indices, bool column_major);

// y = mean over the window's taps inside the input, or, with count_include_pad, divided by the
// number of taps inside the padded input [-pad_begin, D + pad_end) (the ceil_mode overhang never
// counts). An empty window gives NaN.
Status average_pool(const PoolParams& p, bool count_include_pad, const Tensor& x, Tensor& y);

// y = (sum over the window of |x|^p)^(1/p), p >= 1.
Status lp_pool(const PoolParams& p, int64_t lp, const Tensor& x, Tensor& y);

enum class GlobalPoolKind { kAverage, kMax, kLp };
// Pools each [n, c] plane over all spatial dims; y is [N, C, 1, ...]. lp only for kLp.
Status global_pool(GlobalPoolKind kind, int64_t lp, const Tensor& x, Tensor& y);

}  // namespace kestrel::kernels::ref
