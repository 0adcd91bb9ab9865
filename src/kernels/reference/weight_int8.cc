// Reference kestrel.MatMulWeightInt8: plain loops in double, then the shared epilogue.
#include "kernels/reference/weight_int8.h"

#include <vector>

#include "core/str_util.h"

namespace kestrel::kernels::ref {

Status matmul_weight_int8(const Tensor& a, const Tensor& w, const Tensor& scale, bool trans_b, const Tensor* bias,
                          const Tensor* z, const ActivationParams& act, Tensor& y) {
  using core::DType;
  using core::str_cat;
  if (a.dtype() != DType::kF32 || w.dtype() != DType::kI8 || scale.dtype() != DType::kF32 || y.dtype() != DType::kF32)
    return core::invalid_argument(str_cat("MatMulWeightInt8: needs f32 A, int8 W, f32 scale and f32 Y, got ",
                                          a.type_string(), ", ", w.type_string(), ", ", scale.type_string()));
  if (a.rank() < 1 || w.rank() != 2)
    return core::invalid_argument(
        str_cat("MatMulWeightInt8: A must have rank >= 1 and W rank 2: ", a.type_string(), ", ", w.type_string()));
  const int64_t k = a.dim(-1);
  const int64_t kw = trans_b ? w.dim(1) : w.dim(0), n = trans_b ? w.dim(0) : w.dim(1);
  if (k != kw)
    return core::invalid_argument(
        str_cat("MatMulWeightInt8: inner dims differ: ", a.type_string(), ", ", w.type_string()));
  if (scale.num_elements() != n)
    return core::invalid_argument(
        str_cat("MatMulWeightInt8: scale ", scale.type_string(), " must have ", n, " elements"));
  const int64_t rows = k > 0 ? a.num_elements() / k : (n > 0 ? y.num_elements() / n : 0);
  if (y.num_elements() != rows * n)
    return core::invalid_argument(str_cat("MatMulWeightInt8: output ", y.type_string(), " has the wrong size"));
  const float* ad = a.data<float>();
  const int8_t* wd = w.data<int8_t>();
  const float* sd = scale.data<float>();
  float* yd = y.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        const int8_t q = trans_b ? wd[j * k + p] : wd[p * n + j];
        acc += static_cast<double>(ad[r * k + p]) * static_cast<double>(q);
      }
      yd[r * n + j] = static_cast<float>(acc * sd[j]);
    }
  return apply_epilogue(act, bias, z, y);
}

}  // namespace kestrel::kernels::ref
