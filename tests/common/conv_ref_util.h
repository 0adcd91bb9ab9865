// Shared by the fast conv tests (fast_conv_test.cc, fast_conv_chain_test.cc, fast_conv_bf16_test.cc): every fused
// activation with non-default parameters where it has them, and one conv stage run by the reference kernel.
#pragma once

#include <cmath>

#include "common/fast_kernel_util.h"
#include "kernels/cpu/matmul/matmul.h"
#include "kernels/reference/conv.h"

namespace kestrel::testing {

inline const kernels::cpu::FusedActivation kEveryFusedActivation[] = {
    {kernels::cpu::GemmActivation::kNone, 0, 0},      {kernels::cpu::GemmActivation::kRelu, 0, 0},
    {kernels::cpu::GemmActivation::kClip, 0.f, 0.5f}, {kernels::cpu::GemmActivation::kLeakyRelu, 0.1f, 0},
    {kernels::cpu::GemmActivation::kSigmoid, 0, 0},   {kernels::cpu::GemmActivation::kHardSigmoid, 0.2f, 0.5f},
    {kernels::cpu::GemmActivation::kHardSwish, 0, 0}, {kernels::cpu::GemmActivation::kSilu, 0, 0},
    {kernels::cpu::GemmActivation::kGelu, 0, 0},      {kernels::cpu::GemmActivation::kTanh, 0, 0},
};

// y = act(conv(x, w, b) + z) with the reference conv: square stride, begin pads pt / pl (the output size is yd's).
inline core::Tensor ref_conv_stage(const core::Tensor& x, const core::Tensor& w, const core::Tensor* b, int64_t group,
                                   int64_t stride, int64_t pt, int64_t pl, const core::Dims& yd,
                                   const kernels::cpu::FusedActivation& act, const core::Tensor* z) {
  kernels::ref::ConvParams p{{stride, stride}, {1, 1}, {pt, pl}, group};
  core::Tensor y = filled_f32(yd, NAN);
  EXPECT_TRUE(kernels::ref::conv(p, x, w, b, y).is_ok());
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    const double v = y.data<float>()[i] + (z ? z->data<float>()[i] : 0.f);
    y.data<float>()[i] = static_cast<float>(activation_ref(act.kind, v, act.alpha, act.beta));
  }
  return y;
}

}  // namespace kestrel::testing
