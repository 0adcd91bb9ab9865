// Fast f32 Gemm and MatMul (ONNX semantics) on top of sgemm: constant B pre-packed once, batched
// MatMul with numpy broadcasting, Gemm's C as a bias or residual, optional fused activation.
#pragma once

#include <optional>

#include "core/cpu_features.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/cpu/gemm/sgemm.h"

namespace kestrel::kernels::cpu {

using core::Tensor;

// The activation part of a GemmEpilogue (bias and residual come from the op's inputs).
struct FusedActivation {
  GemmActivation kind = GemmActivation::kNone;
  float alpha = 0.f, beta = 0.f;
};

struct GemmOpParams {
  bool trans_a = false, trans_b = false;
  float alpha = 1.f, beta = 1.f;
  FusedActivation activation;
};

// Y = act(alpha * op(A) * op(B) + beta * C + Z), C broadcast unidirectionally to [M, N], Z (fused
// ops' residual) of shape [M, N]. f32 only.
class FastGemm {
 public:
  // b: B's data when it is a constant (packed now), else null. isa: the micro-kernel to use.
  static Result<FastGemm> create(const GemmOpParams& p, const Tensor* b, core::Isa isa);
  Status run(const Tensor& a, const Tensor& b, const Tensor* c, const Tensor* z, Tensor& y,
             core::ThreadPool* pool) const;
  const char* name() const;

 private:
  GemmOpParams p_;
  core::Isa isa_ = core::Isa::kScalar;
  std::optional<PackedB> packed_b_;
  int64_t packed_k_ = 0, packed_n_ = 0;
};

// numpy.matmul with an optional per-column bias [N] (FusedMatMul), residual Z of Y's shape and
// activation.
class FastMatMul {
 public:
  // b: B's data when it is a constant of rank <= 2 (packed now), else null.
  static Result<FastMatMul> create(const Tensor* b, FusedActivation act, core::Isa isa);
  Status run(const Tensor& a, const Tensor& b, const Tensor* bias, const Tensor* z, Tensor& y,
             core::ThreadPool* pool) const;
  const char* name() const;

 private:
  FusedActivation act_;
  core::Isa isa_ = core::Isa::kScalar;
  std::optional<PackedB> packed_b_;
  int64_t packed_k_ = 0, packed_n_ = 0;
};

// "sgemm.avx512" etc.: the impl name for profiles.
const char* sgemm_impl_name(core::Isa isa);

}  // namespace kestrel::kernels::cpu
