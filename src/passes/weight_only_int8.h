// Weight-only int8 conversion (`kestrel convert --int8-weights`): the f32 constant weights of
// MatMul / Gemm (and kestrel.FusedMatMul / FusedGemm) become DequantizeLinear(int8, scale per
// output channel); activations and math stay f32 (the runtime lowers the pattern to
// kestrel.MatMulWeightInt8, see docs/fused_ops.md).
#pragma once

#include <cstdint>

#include "core/status.h"
#include "ir/graph.h"

namespace kestrel::passes {

struct WeightInt8Options {
  int64_t min_elements = 1024;  // smaller weights stay f32 (a few KiB; not worth the error)
};

struct WeightInt8Stats {
  int weights = 0;          // constants quantized
  int nodes = 0;            // MatMul / Gemm nodes now reading an int8 weight
  uint64_t f32_bytes = 0;   // their f32 size
  uint64_t int8_bytes = 0;  // int8 weights + scales
};

// Symmetric per-output-channel quantization: scale[c] = max |W[.., c]| / 127, q = round(W / scale)
// in [-127, 127] (an all-zero channel gets scale 1). Output channel = N: axis 1 of MatMul's B
// [K, N], of Gemm's B when transB = 0, axis 0 when transB = 1. Only rank-2 f32 constants with at
// least min_elements finite values; a weight shared by several nodes is quantized once per axis.
// The f32 constants left without uses are removed.
core::Result<WeightInt8Stats> quantize_weights_int8(ir::Graph& g, const WeightInt8Options& opts = {});

}  // namespace kestrel::passes
