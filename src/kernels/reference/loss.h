// Reference loss kernels: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss over [N, C, d...]
// inputs with class weights, ignore_index and none/sum/mean reduction. Computed in double.
#pragma once

#include <cstdint>
#include <optional>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

enum class LossReduction { kNone, kSum, kMean };

struct LossParams {
  LossReduction reduction = LossReduction::kMean;
  std::optional<int64_t> ignore_index;  // samples with this target contribute nothing
};

// x: [N, C, d1..dk] log-probabilities (f32/f16/bf16/f64); target: [N, d1..dk] int32/int64;
// weight: [C] of x's dtype or null (all ones). With w = weight[t] (0 for ignored samples):
//   none: loss[n, d] = -x[n, t, d] * w;  sum: the sum of those;  mean: sum / sum of w
// (0 / 0 = NaN when every sample is ignored, as in the ONNX reference and PyTorch).
// loss has x's dtype and target's shape (none) or one element. A target outside [0, C) that is
// not ignore_index is an error.
Status nll_loss(const LossParams& p, const Tensor& x, const Tensor& target, const Tensor* weight, Tensor& loss);

// Same loss on log_softmax(scores) over axis 1; log_prob (scores' shape and dtype) receives
// log_softmax(scores) when not null.
Status softmax_cross_entropy_loss(const LossParams& p, const Tensor& scores, const Tensor& target, const Tensor* weight,
                                  Tensor& loss, Tensor* log_prob);

}  // namespace kestrel::kernels::ref
