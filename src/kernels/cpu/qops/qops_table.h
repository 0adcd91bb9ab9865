// The per-ISA row kernels behind qops.h (quantize, max pool, binary rows): a table per ISA.
#pragma once

#include <cstdint>

#include "core/cpu_features.h"
#include "kernels/cpu/qops/qops.h"

namespace kestrel::kernels::cpu::qops_detail {

struct QopsFns {
  void (*quantize)(const float* x, int64_t n, float scale, int32_t zp, uint8_t* y);
  // row: scratch of (ow - 1) * sw + (kw - 1) * dw + 1 bytes (the padded row of the horizontal pass).
  void (*maxpool)(const QMaxPoolShape& s, const uint8_t* x, uint8_t* y, int64_t p0, int64_t p1, uint8_t* row);
  // Element strides sa, sb are 1 or 0 (broadcast).
  void (*binary)(const QBinaryParams& p, const uint8_t* a, const uint8_t* b, uint8_t* y, int64_t n, int sa, int sb);
  // x [rows, inner] against v[rows] (one value per row); x_is_a: x is operand a of p.
  void (*binary_rows)(const QBinaryParams& p, const uint8_t* x, const uint8_t* v, uint8_t* y, int64_t rows,
                      int64_t inner, bool x_is_a);
  // sums[i] = the sum of the hw bytes of plane i of x (planes contiguous); hw < 2^24.
  void (*plane_sums)(const uint8_t* x, int64_t planes, int64_t hw, uint32_t* sums);
};

// The table for an ISA (the scalar one when the ISA is not compiled in).
const QopsFns& qops_fns(core::Isa isa);
QopsFns qops_fns_scalar();
QopsFns qops_fns_avx2();
QopsFns qops_fns_avx512();

}  // namespace kestrel::kernels::cpu::qops_detail
