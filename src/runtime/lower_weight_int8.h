// Load-time lowering of weight-only int8 MatMul / Gemm: B = DequantizeLinear(int8 constant, scale)
// becomes one kestrel.MatMulWeightInt8 node that reads the int8 weight itself (docs/fused_ops.md);
// the other dequantized constant weights are folded to float.
#pragma once

#include "core/status.h"
#include "ir/graph.h"

namespace kestrel::runtime {

// Rewrites every MatMul, Gemm (transA = 0), kestrel.FusedMatMul and kestrel.FusedGemm whose B is
// DequantizeLinear(W, scale[, zero_point]) with W an int8 rank-2 constant, scale an f32 constant per
// tensor or per output channel (axis = N's axis of W), zero point absent or all zero, and A f32
// not itself produced by a DequantizeLinear (full QDQ patterns are left to the int8 lowering).
// Gemm's alpha goes into the scale, beta * C into the bias (C must then be a constant [N] / [1, N]).
// DequantizeLinear nodes left without consumers are removed. Returns the number of nodes rewritten.
core::Result<int> lower_weight_int8(ir::Graph& g);

// Replaces each DequantizeLinear of constants left after lower_weight_int8 (the weights of the
// layers a QDQ model leaves float) by its float result. The executor creates the kernels before its
// plan-time folding, so a DequantizeLinear output is no constant to them: a Conv reading one got the
// reference kernel and no weights packed at load. Returns the number of nodes folded.
core::Result<int> fold_weight_dequantize(ir::Graph& g);

}  // namespace kestrel::runtime
