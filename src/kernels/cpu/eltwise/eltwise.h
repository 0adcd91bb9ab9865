// Fast float32 elementwise kernels: activations, broadcasting Add/Sub/Mul/Div, Pow by a small
// integer, Clip and inference BatchNormalization. Per-ISA row functions (eltwise_<isa>.cc) behind
// one table; the drivers here split broadcasting into contiguous rows and rows over threads.
// Other dtypes and ops stay with the reference kernels (the callers check the *_supported helpers).
#pragma once

#include <cstdint>

#include "core/cpu_features.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/reference/elementwise.h"

namespace kestrel::kernels::cpu {

using core::Status;
using core::Tensor;

enum class EwUnary {
  kIdentity, kRelu, kLeakyRelu, kClip, kSigmoid, kHardSigmoid, kHardSwish, kTanh, kErf, kGeluErf,
  kExp, kSilu, kNeg, kAbs, kSqrt, kSquare, kCube,
};

struct EwUnaryParams {
  EwUnary op = EwUnary::kIdentity;
  float alpha = 0.f, beta = 0.f;  // LeakyRelu: alpha; HardSigmoid: alpha x + beta; Clip: [alpha, beta]
};

enum class EwBinary { kAdd, kSub, kMul, kDiv };
// Which operands advance along a row: both, only a (b is one value), only b (a is one value).
enum class EwRow { kVV, kVS, kSV };

// One instruction set's row functions.
struct EltwiseTable {
  core::Isa isa = core::Isa::kScalar;
  const char* name = "";  // for profiles: "eltwise.avx512"
  void (*unary)(const EwUnaryParams& p, const float* x, float* y, int64_t n) = nullptr;
  void (*binary)(EwBinary op, EwRow kind, const float* a, const float* b, float* y, int64_t n) = nullptr;
  // y = x * scale + shift.
  void (*affine)(const float* x, float* y, int64_t n, float scale, float shift) = nullptr;
};

// The table for an instruction set; null when it is not compiled in or the CPU lacks it.
const EltwiseTable* eltwise_table(core::Isa isa);
namespace eltwise_detail {
const EltwiseTable* table_scalar();
const EltwiseTable* table_avx2();
const EltwiseTable* table_avx512();
}  // namespace eltwise_detail

// Maps a reference unary op to its fast form; false if there is none.
bool fast_unary_op(const ref::UnaryParams& p, EwUnaryParams* out);
bool fast_binary_op(ref::BinaryOp op, EwBinary* out);

// y = op(x); x and y f32 with the same element count.
Status unary_f32(const EltwiseTable& t, const EwUnaryParams& p, const Tensor& x, Tensor& y, core::ThreadPool* pool);

// y = a op b with numpy broadcasting (y already has the broadcast shape); all f32.
Status binary_f32(const EltwiseTable& t, EwBinary op, const Tensor& a, const Tensor& b, Tensor& y,
                  core::ThreadPool* pool);

// Inference BatchNormalization, x [N, C, ...] and the four parameters C values, all f32.
Status batch_norm_f32(const EltwiseTable& t, const Tensor& x, const Tensor& scale, const Tensor& bias,
                      const Tensor& mean, const Tensor& var, float epsilon, Tensor& y, core::ThreadPool* pool);

}  // namespace kestrel::kernels::cpu
