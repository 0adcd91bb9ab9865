// Reference kernels of ONNX's optimizer ops (ai.onnx.preview.training): one Adagrad, Adam or
// Momentum step for one optimized tensor. The ops' variadic groups are looped over by the binding.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

// Shared contract: R (learning rate, f32/f64) and T (update count, int64, >= 0) hold one element
// each. X and its gradient / state tensors have one shape and are f32 or f64 each (the spec's
// variadic inputs are not homogeneous); every output has the shape and dtype of the tensor it
// replaces. All arithmetic is in double, rounded once on store. Outputs may alias their inputs.

struct AdagradParams {
  double norm_coefficient = 0;
  double decay_factor = 0;
  double epsilon = 1e-6;
};
// r = R / (1 + T * decay_factor); g = norm_coefficient * X + G; H_new = H + g^2;
// X_new = X - r * g / (sqrt(H_new) + epsilon).
Status adagrad(const Tensor& r, const Tensor& t, const Tensor& x, const Tensor& g, const Tensor& h,
               const AdagradParams& p, Tensor& x_new, Tensor& h_new);

struct AdamParams {
  double alpha = 0.9;
  double beta = 0.999;
  double epsilon = 1e-6;
  double norm_coefficient = 0;
  double norm_coefficient_post = 0;
};
// g = norm_coefficient * X + G; V_new = alpha V + (1 - alpha) g; H_new = beta H + (1 - beta) g^2;
// R' = T > 0 ? R sqrt(1 - beta^T) / (1 - alpha^T) : R;
// X_new = (1 - norm_coefficient_post) (X - R' V_new / (sqrt(H_new) + epsilon)).
Status adam(const Tensor& r, const Tensor& t, const Tensor& x, const Tensor& g, const Tensor& v, const Tensor& h,
            const AdamParams& p, Tensor& x_new, Tensor& v_new, Tensor& h_new);

struct MomentumParams {
  double alpha = 0;
  double beta = 0;
  double norm_coefficient = 0;
  bool nesterov = false;
};
// g = norm_coefficient * X + G; V_new = alpha V + (T > 0 ? beta : 1) g;
// X_new = X - R V_new (standard) or X - R (g + alpha V_new) (nesterov).
Status momentum(const Tensor& r, const Tensor& t, const Tensor& x, const Tensor& g, const Tensor& v,
                const MomentumParams& p, Tensor& x_new, Tensor& v_new);

}  // namespace kestrel::kernels::ref
