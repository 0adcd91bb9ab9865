// Reference Gemm and MatMul: plain triple loops accumulating in float (double for f64, wrapping
// 64-bit integers for integer types); the oracle for fast GEMM kernels.
#pragma once

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

struct GemmParams {
  bool trans_a = false;
  bool trans_b = false;
  float alpha = 1.0f;
  float beta = 1.0f;
};

// y[M, N] = alpha * op(a) * op(b) + beta * c, op = transpose when asked; c (optional) broadcasts
// unidirectionally to [M, N]. Floats (f32/f16/bf16/f64) and i32/i64/u32/u64 (integers: exact
// wrapping arithmetic when alpha == beta == 1, else computed in double and truncated).
Status gemm(const GemmParams& p, const Tensor& a, const Tensor& b, const Tensor* c, Tensor& y);

// numpy.matmul: batch dims broadcast; a 1-D a is a row vector and a 1-D b a column vector, and
// that dim is dropped from y. Same dtypes as gemm.
Status matmul(const Tensor& a, const Tensor& b, Tensor& y);

}  // namespace kestrel::kernels::ref
