// Reference elementwise kernels: unary math and activations, broadcasting binary ops, Where,
// Clip, Cast, and the variadic Sum/Mean/Max/Min. Plain loops; the oracle for fast kernels.
#pragma once

#include <span>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

enum class UnaryOp {
  kAbs, kNeg, kSqrt, kExp, kLog, kErf, kTanh, kSigmoid, kRelu, kFloor, kCeil, kReciprocal,
  kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kAsinh, kAcosh, kAtanh,
  kSign, kRound, kNot, kIsNaN, kIsInf, kSoftplus, kSoftsign, kIdentity, kBitwiseNot,
  // Parametrized activations (alpha, beta, gamma as in the ONNX spec):
  kLeakyRelu,        // x >= 0 ? x : alpha * x
  kElu,              // x >= 0 ? x : alpha * (exp(x) - 1)
  kSelu,             // gamma * (x > 0 ? x : alpha * (exp(x) - 1))
  kCelu,             // max(0,x) + min(0, alpha * (exp(x / alpha) - 1))
  kHardSigmoid,      // max(0, min(1, alpha * x + beta))
  kHardSwish,        // x * max(0, min(1, x / 6 + 0.5))
  kThresholdedRelu,  // x > alpha ? x : 0
  kMish,             // x * tanh(softplus(x))
  kGeluErf,          // 0.5 x (1 + erf(x / sqrt 2))
  kGeluTanh,         // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  kSilu,             // x * sigmoid(x)
  kIsInfPos, kIsInfNeg,
};

struct UnaryParams {
  UnaryOp op = UnaryOp::kIdentity;
  float alpha = 0.f, beta = 0.f, gamma = 0.f;
};

// Scalar form, shared with fast kernels' tails and epilogues (float math; double for f64).
float unary_scalar(const UnaryParams& p, float x);
double unary_scalar(const UnaryParams& p, double x);

// y = op(x), same shape. Float ops accept f32/f16/bf16/f64; Abs/Neg/Sign/Relu/Identity also ints;
// Not takes bool; IsNaN/IsInf produce bool.
Status unary(const UnaryParams& p, const Tensor& x, Tensor& y);

enum class BinaryOp {
  kAdd, kSub, kMul, kDiv, kPow, kMax, kMin, kMod, kFMod,
  kEqual, kLess, kLessOrEqual, kGreater, kGreaterOrEqual,  // -> bool
  kAnd, kOr, kXor,                                          // bool
  kBitShiftLeft, kBitShiftRight, kBitwiseAnd, kBitwiseOr, kBitwiseXor,
  kPRelu,  // x < 0 ? slope * x : x (slope broadcast unidirectionally)
};

// y = a op b with numpy broadcasting; y must already have the broadcast shape. Integer division
// or modulo by zero gives 0 (ONNX leaves it undefined; we must not trap).
Status binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& y);

// Variadic Sum/Mean/Max/Min with broadcasting.
enum class VariadicOp { kSum, kMean, kMax, kMin };
Status variadic(VariadicOp op, std::span<const Tensor* const> inputs, Tensor& y);

// out = cond ? x : y with broadcasting.
Status where(const Tensor& cond, const Tensor& x, const Tensor& y, Tensor& out);

// y = min(max(x, lo), hi); absent bounds are not applied.
Status clip(const Tensor& x, const Tensor* lo, const Tensor* hi, Tensor& y);

// y = x converted to y's dtype (float -> int saturates; NaN -> 0; -> bool is x != 0; strings
// parse/print numbers).
Status cast(const Tensor& x, Tensor& y);

}  // namespace kestrel::kernels::ref
