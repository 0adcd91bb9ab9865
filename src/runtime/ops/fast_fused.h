// Fast kernels for Kestrel's fused ops (FusedConv, FusedGemm, FusedMatMul, FusedPointwiseDepthwise) with the
// activation in
// the sgemm / depthwise epilogue. Each factory returns null when its fast path does not apply
// (reference_only, non-f32, non-constant conv weights, an activation the epilogue lacks), and the
// binding in fused.cc falls back to the plain op + reference epilogue.
#pragma once

#include <array>
#include <memory>
#include <optional>

#include "ir/ops/fused_activation.h"
#include "kernels/cpu/matmul/matmul.h"
#include "kernels/reference/fused.h"
#include "runtime/kernel.h"

namespace kestrel::runtime {

// The fast kernels' epilogue activation for a fused op's spec: every activation but GeluTanh
// (nullopt: the caller runs the reference epilogue after). Defined in fused.cc.
std::optional<kernels::cpu::FusedActivation> to_fast_activation(const ir::FusedActivationSpec& s);
// The reference kernels' activation for a fused op's spec (every kind). Defined in fused.cc.
kernels::ref::ActivationParams to_ref_activation(const ir::FusedActivationSpec& s);

Result<std::unique_ptr<OpKernel>> make_fast_fused_conv(const KernelCreateInfo& info, kernels::cpu::FusedActivation act);
Result<std::unique_ptr<OpKernel>> make_fast_fused_gemm(const KernelCreateInfo& info, kernels::cpu::FusedActivation act);
Result<std::unique_ptr<OpKernel>> make_fast_fused_matmul(const KernelCreateInfo& info,
                                                         kernels::cpu::FusedActivation act);
// FusedConv with a MaxPool (pool_* attributes): the fast conv with `fast_act` when it applies (the
// stem path pools in its epilogue; other paths write the conv output to a buffer, then pool), else
// the reference conv, `ref_act` and the reference MaxPool.
Result<std::unique_ptr<OpKernel>> make_pooled_fused_conv(const KernelCreateInfo& info,
                                                        std::optional<kernels::cpu::FusedActivation> fast_act,
                                                        const kernels::ref::ActivationParams& ref_act);
// kestrel.FusedPointwiseDepthwise: the fast chain (kernels/cpu/conv/conv_chain.h) when every activation used
// has a fast form (`fast_acts`: activation1..3), the inputs are f32 and W1 / W2 / W3 (those given: W1 and W3
// are each optional, not both absent) constants of the shapes it runs, else the reference convs with
// `ref_acts`. Defined in conv.cc.
Result<std::unique_ptr<OpKernel>> make_fused_pointwise_depthwise(
    const KernelCreateInfo& info, const std::array<std::optional<kernels::cpu::FusedActivation>, 3>& fast_acts,
    const std::array<kernels::ref::ActivationParams, 3>& ref_acts);

}  // namespace kestrel::runtime
