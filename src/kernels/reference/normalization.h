// Reference normalization kernels: BatchNormalization (inference and training), InstanceNormalization,
// LayerNormalization, GroupNormalization, LRN, LpNormalization, MeanVarianceNormalization.
// Statistics are two-pass (mean, then mean of squared deviations) in float, double for f64.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

// y = (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + bias[c], x: [N, C, ...] (rank >= 2).
// The four parameter tensors have C elements and may have any float dtype.
Status batch_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean, const Tensor& var,
                  float epsilon, Tensor& y);

// Training mode: the statistics are the batch's own, per channel over N and the spatial dims
// (mean and population variance, in float; double for f64); y normalizes with them.
// running_mean = input_mean * momentum + mean * (1 - momentum), running_var likewise with the
// population variance; each, when given, has the dtype of its input and C elements. An empty
// batch has NaN statistics (0 / 0, as ReduceMean of nothing).
Status batch_norm_training(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& input_mean,
                           const Tensor& input_var, float epsilon, float momentum, Tensor& y, Tensor* running_mean,
                           Tensor* running_var);

// Per [n, c] plane: y = scale[c] * (x - mean) / sqrt(var + epsilon) + bias[c] (biased variance).
Status instance_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, float epsilon, Tensor& y);

// Normalizes over dims [axis, rank) (axis already in [0, rank]); scale and bias (optional)
// broadcast to those dims. mean / inv_std_dev (optional, any float dtype) get the statistics, shaped
// like x with the normalized dims set to 1.
Status layer_norm(const Tensor& x, const Tensor& scale, const Tensor* bias, int64_t axis, float epsilon, Tensor& y,
                  Tensor* mean, Tensor* inv_std_dev);

// Statistics per [n, group] over C/num_groups channels and all spatial dims; scale and bias have
// C elements (opset 21) or num_groups elements (opset 18, one value per group).
Status group_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, int64_t num_groups, float epsilon,
                  Tensor& y);

// y = x / (bias + alpha / size * sum of x^2 over channels [c - (size-1)/2, c + ceil((size-1)/2)])^beta.
Status lrn(const Tensor& x, int64_t size, float alpha, float beta, float bias, Tensor& y);

// y = x / ||x||_p along axis (already non-negative), p in {1, 2}; a zero norm gives y = 0.
Status lp_norm(const Tensor& x, int64_t axis, int64_t p, Tensor& y);

// y = (x - mean) / (sqrt(var) + 1e-9), statistics over `axes` (distinct, non-negative).
Status mean_variance_norm(const Tensor& x, const std::vector<int64_t>& axes, Tensor& y);

}  // namespace kestrel::kernels::ref
