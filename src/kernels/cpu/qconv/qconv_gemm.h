// The int8 convolution GEMM computed directly in NCHW, Y[M, pixels] = W[M, K] * X[K, pixels]:
// weights packed once into MR-row blocks, activations packed per panel of pixels so that one
// vector lane holds KG consecutive k of one pixel (4 u8 for vpdpbusd, 2 u16 for vpmaddwd), and a
// register-blocked micro-kernel with the requantizing epilogue storing contiguous NCHW rows.
// The per-ISA units instantiate qconv_gemm_inl.h with that ISA's compiler flags.
#pragma once

#include <cstdint>

#include "kernels/cpu/qgemm/qgemm.h"

namespace kestrel::kernels::cpu::qconv_detail {

// Everything the epilogue needs that does not depend on the row.
struct alignas(64) QcEpilogue {
  bool i32 = false;              // store the int32 sums (ConvInteger), else requantize to u8
  float lo_f = 0.f, hi_f = 0.f;  // out_min - y_zp, out_max - y_zp (clamp before rounding)
  int32_t zp = 0;                // y_zp
  // The same broadcast to 16 lanes, so that vector instructions take them as memory operands
  // (no register held across the K loop, no broadcast per use).
  alignas(64) float lo16[16] = {}, hi16[16] = {};
  void set(bool int32_out, float lo, float hi, int32_t y_zp) {
    i32 = int32_out;
    lo_f = lo;
    hi_f = hi;
    zp = y_zp;
    for (int i = 0; i < 16; ++i) {
      lo16[i] = lo;
      hi16[i] = hi;
    }
  }
};

// One panel of pixels against rows [m0, m1) of one group's weights.
struct QcPanel {
  const uint8_t* w = nullptr;       // packed weights of the group (all row blocks)
  int64_t m0 = 0, m1 = 0;           // rows to compute (m0 a multiple of MR)
  int64_t groups = 0;               // ceil(K / KG)
  const uint8_t* x = nullptr;       // packed panel [groups][pt][4 bytes]
  int64_t pt = 0;                   // panel stride in pixels (a multiple of the vector lanes)
  int64_t cols = 0;                 // valid pixels (<= pt)
  const int32_t* offset = nullptr;  // [M] bias - x_zp * sum_k w (added to the sums)
  const float* scale = nullptr;     // [M] (u8 output)
  const QcEpilogue* ep = nullptr;
  uint8_t* y = nullptr;  // &Y[0, p0] of the group in the output type
  int64_t ldy = 0;       // elements between rows of Y (pixels of the image)
};

// Where pack_im2col finds the input: per channel, sw phase planes of the zero-point padded
// input, phase j holding padded columns j, j + sw, ... (so that a run of outputs along a row
// reads a contiguous run whatever the stride), rows prow bytes apart. Output (oy, ox) of K row
// kk reads src + row_off[kk] + oy * sh * prow + ox.
struct QcIm2col {
  const uint8_t* src = nullptr;
  const int64_t* row_off = nullptr;  // [k]: where row (c, ky, kx) of K starts, from src
  int64_t prow = 0, k = 0, sh = 1, ow = 1;
};

struct QcTable {
  int mr = 0, lanes = 0, nr = 0, kg = 4;
  // W [m, k] (s8 row-major) -> ceil(m / MR) blocks of [groups][MR][4 bytes], zero padded.
  void (*pack_w)(const int8_t* w, int64_t m, int64_t k, uint8_t* dst) = nullptr;
  // Rows [0, k) of src (row stride ld), pixels [0, cols) -> [groups][pt][4 bytes]; k past K is 0.
  void (*pack_x)(const uint8_t* src, int64_t ld, int64_t k, int64_t cols, int64_t pt, uint8_t* dst) = nullptr;
  // im2col of output pixels [p0, p0 + cols) (rows (c, ky, kx) of K) -> [groups][pt][4 bytes].
  void (*pack_im2col)(const QcIm2col& a, int64_t p0, int64_t cols, int64_t pt, uint8_t* dst) = nullptr;
  void (*run)(const QcPanel& p) = nullptr;
};

// Null when the ISA was not compiled into this binary.
const QcTable* qc_table(QgemmIsa isa);
const QcTable* qc_table_scalar();
const QcTable* qc_table_avx2();
const QcTable* qc_table_avxvnni();
const QcTable* qc_table_avx512vnni();

}  // namespace kestrel::kernels::cpu::qconv_detail
