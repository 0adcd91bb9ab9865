// Reference Conv and ConvTranspose (1-D, 2-D, 3-D or any spatial rank, groups, dilations).
// Plain loops accumulating in float (double for f64); the oracle for fast convolution kernels.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

// Per spatial axis. The output spatial sizes are taken from y, which the caller has shaped (the
// pads at the end only matter for that shape); every input access is bounds-checked, so padding
// reads as zero.
struct ConvParams {
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads_begin;
  int64_t group = 1;
};

// y[n, m, o] = b[m] + sum_{c, k} x[n, g*C/G + c, o*stride - pad + k*dilation] * w[m, c, k]
// with g = m / (M/G). x: [N, C, D...], w: [M, C/G, K...], b: [M] or null, y: [N, M, O...].
// f32/f16/bf16/f64, all the same dtype.
Status conv(const ConvParams& p, const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y);

// The adjoint of conv: each input element scatters x * w into
// y[n, g*M/G + m, i*stride - pad + k*dilation]. x: [N, C, D...], w: [C, M/G, K...], b: [M] or
// null, y: [N, M, O...] (positions no tap reaches get only the bias).
Status conv_transpose(const ConvParams& p, const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y);

}  // namespace kestrel::kernels::ref
