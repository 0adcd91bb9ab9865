// Fast f32 ConvTranspose, NCHW (1-D and 2-D), as GEMM + col2im: per image and group,
// col[Mg*K, H*W] = W_g^T [Mg*K, Cg] x X_g [Cg, H*W] with the weights packed once at creation, then
// each col row is added into the output plane at its tap's offset (y starts as the bias).
#pragma once

#include <cstdint>
#include <vector>

#include "core/buffer.h"
#include "core/cpu_features.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/cpu/gemm/sgemm.h"
#include "kernels/reference/conv.h"

namespace kestrel::kernels::cpu {

using core::Tensor;

class FastConvTranspose {
 public:
  // w: [C, M/group, KH, KW] or [C, M/group, KW], f32, C a multiple of group (packed here).
  static Result<FastConvTranspose> create(const Tensor& w, int64_t group, core::Isa isa);

  // p: strides, dilations, begin pads per spatial axis (the output size is y's). x: [N, C, ...],
  // bias: [M] or null, y: [N, M, ...]. Not const: the col buffer is a member that only grows, so
  // for static shapes a run allocates nothing (a kernel instance is never run concurrently).
  Status run(const ref::ConvParams& p, const Tensor& x, const Tensor* bias, Tensor& y, core::ThreadPool* pool);
  const char* name() const;

 private:
  core::Isa isa_ = core::Isa::kScalar;
  int64_t c_ = 0, mg_ = 0, kh_ = 1, kw_ = 1, group_ = 1, rank_ = 4;
  std::vector<PackedA> packed_;  // per group: W_g^T [Mg*KH*KW, Cg]
  core::AlignedPtr col_;
  size_t col_floats_ = 0;
};

}  // namespace kestrel::kernels::cpu
