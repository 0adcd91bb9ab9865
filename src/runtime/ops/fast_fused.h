// Fast kernels for Kestrel's fused ops (FusedConv, FusedGemm, FusedMatMul) with the activation in
// the sgemm / depthwise epilogue. Each factory returns null when its fast path does not apply
// (reference_only, non-f32, non-constant conv weights, an activation the epilogue lacks), and the
// binding in fused.cc falls back to the plain op + reference epilogue.
#pragma once

#include <memory>

#include "kernels/cpu/matmul/matmul.h"
#include "runtime/kernel.h"

namespace kestrel::runtime {

Result<std::unique_ptr<OpKernel>> make_fast_fused_conv(const KernelCreateInfo& info, kernels::cpu::FusedActivation act);
Result<std::unique_ptr<OpKernel>> make_fast_fused_gemm(const KernelCreateInfo& info, kernels::cpu::FusedActivation act);
Result<std::unique_ptr<OpKernel>> make_fast_fused_matmul(const KernelCreateInfo& info,
                                                         kernels::cpu::FusedActivation act);

}  // namespace kestrel::runtime
