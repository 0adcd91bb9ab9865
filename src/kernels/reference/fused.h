// Reference kernels of Kestrel's fused ops: FusedConv, FusedGemm and FusedMatMul are the plain
// reference Conv / Gemm / MatMul followed by an epilogue (bias, residual add, activation) over the
// finished output; FusedPointwiseDepthwise is two or three such convs in a row. The oracle for fast
// kernels with fused epilogues.
#pragma once

#include "core/status.h"
#include "core/tensor.h"
#include "kernels/reference/conv.h"
#include "kernels/reference/matmul.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

// The epilogue activations, aligned with the fast GEMM's list (see docs/fused_ops.md).
enum class Activation {
  kNone,
  kRelu,
  kClip,       // min(max(x, alpha), beta)
  kLeakyRelu,  // x >= 0 ? x : alpha * x
  kSigmoid,
  kHardSigmoid,  // max(0, min(1, alpha * x + beta))
  kHardSwish,
  kSilu,
  kGelu,  // erf form
  kGeluTanh,
  kTanh,
};

struct ActivationParams {
  Activation kind = Activation::kNone;
  float alpha = 0.f, beta = 0.f;
};

// One element (float math; double for f64 tensors).
float activation_scalar(const ActivationParams& a, float x);
double activation_scalar(const ActivationParams& a, double x);

// y = act(y + z) in place, elementwise; z (optional) has y's dtype and dims. Float dtypes.
Status apply_epilogue(const ActivationParams& act, const Tensor* z, Tensor& y);
// y = act(y + bias[last index] + z) in place; bias (optional) is 1-D with y's last dim elements.
Status apply_epilogue(const ActivationParams& act, const Tensor* bias, const Tensor* z, Tensor& y);

// y = act(conv(x, w) + b + z); z (optional) has y's shape.
Status fused_conv(const ConvParams& p, const ActivationParams& act, const Tensor& x, const Tensor& w, const Tensor* b,
                  const Tensor* z, Tensor& y);

// kestrel.FusedPointwiseDepthwise (docs/fused_ops.md), 2-D:
//   expanded = act1(conv1x1(x, w1) + b1)                    [N, M, H, W]     (with w1; else expanded = x)
//   dw       = act2(conv(expanded, w2, group) + b2)         [N, M, OH, OW]
//   y        = act3(conv1x1(dw, w3) + b3 + z)               [N, P, OH, OW]   (with w3; else y = dw)
// x [N, C, H, W] ([N, M, H, W] without w1), w1 [M, C, 1, 1] or null, w2 [M, M / group, k, k] (group M:
// depthwise), w3 [P, M, 1, 1] or null; biases [M] (only with w1) / [M] / [P] (only with w3) or null; z (only
// with w3) y's shape or null. With w1, `expanded`, and with w3, `dw` are the caller's temporaries of those
// shapes and x's dtype (so that a binding allocates them once per input shape); otherwise they may be null.
// The shortcut (w4 [P, C, 1, 1] with w3 and without z; b4 [P] or null) takes z's place:
//   z        = conv1x1(x, w4, stride of the middle conv, no pads) + b4   into `shortcut`, y's shape.
struct PointwiseDepthwiseParams {
  ConvParams depthwise;  // strides, dilations (1), begin pads and group (M: depthwise) of the middle conv
  ConvParams shortcut;   // with w4: 1x1, the middle conv's strides, no pads, group 1
  ActivationParams act1, act2, act3;
};
Status fused_pointwise_depthwise(const PointwiseDepthwiseParams& p, const Tensor& x, const Tensor* w1, const Tensor* b1,
                                 const Tensor& w2, const Tensor* b2, const Tensor* w3, const Tensor* b3,
                                 const Tensor* z, Tensor* expanded, Tensor* dw, Tensor& y, const Tensor* w4 = nullptr,
                                 const Tensor* b4 = nullptr, Tensor* shortcut = nullptr);

// y = act(alpha * op(a) * op(b) + beta * c).
Status fused_gemm(const GemmParams& p, const ActivationParams& act, const Tensor& a, const Tensor& b, const Tensor* c,
                  Tensor& y);

// y = act(matmul(a, b) + bias + z); bias (optional) has N = y's last dim elements, z (optional)
// has y's shape.
Status fused_matmul(const ActivationParams& act, const Tensor& a, const Tensor& b, const Tensor* bias, const Tensor* z,
                    Tensor& y);

}  // namespace kestrel::kernels::ref
