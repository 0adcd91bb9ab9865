// Reference kernel of kestrel.MatMulWeightInt8: matmul of f32 A with an int8 weight dequantized by
// a per-output-channel scale, then the fused epilogue. The oracle for the int8-weight SGEMM path.
#pragma once

#include "core/status.h"
#include "core/tensor.h"
#include "kernels/reference/fused.h"

namespace kestrel::kernels::ref {

// y[..., n] = act(sum_k a[..., k] * w(k, n) * scale[n] + bias[n] + z[..., n]), with w(k, n) =
// w[k, n] (trans_b false, w [K, N]) or w[n, k] (trans_b true, w [N, K]). a f32 of rank >= 1, w int8
// rank 2, scale f32 [N]; bias (optional) [N], z (optional) y's shape; y preallocated [..., N].
Status matmul_weight_int8(const Tensor& a, const Tensor& w, const Tensor& scale, bool trans_b, const Tensor* bias,
                          const Tensor* z, const ActivationParams& act, Tensor& y);

}  // namespace kestrel::kernels::ref
