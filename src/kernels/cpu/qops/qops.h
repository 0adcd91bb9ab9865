// Int8 (u8, per-tensor asymmetric) element-wise and pooling kernels behind the kestrel int8 ops:
// QAdd / QMul with numpy broadcasting, 256-entry lookup (QLookup, requantizing copies for
// QConcat), QGlobalAveragePool and MaxPool on u8. Plain loops the compiler vectorizes; they
// allocate nothing (docs/quantization.md).
#pragma once

#include <cstdint>
#include <span>

#include "core/cpu_features.h"
#include "core/shape.h"
#include "core/status.h"
#include "core/thread_pool.h"

namespace kestrel::kernels::cpu {

enum class QBinaryOp : uint8_t { kAdd, kMul };

// y = saturate(round(f(sa (a - za), sb (b - zb)) / sy) + zy) within [lo, hi] (fused Relu / Clip).
struct QBinaryParams {
  QBinaryOp op = QBinaryOp::kAdd;
  float a_scale = 1.f, b_scale = 1.f, y_scale = 1.f;
  int32_t a_zp = 0, b_zp = 0, y_zp = 0, lo = 0, hi = 255;
};

// Largest rank the broadcasting kernels take.
constexpr size_t kQMaxRank = 8;

// a, b broadcast (numpy rules) to y_dims. Errors for shapes that do not broadcast or ranks above kQMaxRank.
core::Status qbinary_u8(const QBinaryParams& p, const uint8_t* a, std::span<const int64_t> a_dims, const uint8_t* b,
                        std::span<const int64_t> b_dims, uint8_t* y, std::span<const int64_t> y_dims,
                        core::ThreadPool* pool, core::Isa isa = core::active_isa());

// y[i] = table[x[i]]. With AVX-512 VBMI (and isa avx512) a register-table kernel, else scalar.
void qlookup_u8(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t n, core::ThreadPool* pool,
                core::Isa isa = core::active_isa());

// The table that requantizes u8 values from (xs, xz) to (ys, yz), and of f(x) for a unary
// function f evaluated in double (the lowering computes these once).
void qrequant_table(double xs, int32_t xz, double ys, int32_t yz, int32_t lo, int32_t hi, uint8_t table[256]);

// y[nc] = saturate(round((mean(x[nc, :]) - xz) * xs / ys) + yz) for planes of hw elements.
core::Status qglobal_avg_pool_u8(const uint8_t* x, int64_t nc, int64_t hw, float x_scale, int32_t x_zp, float y_scale,
                                 int32_t y_zp, uint8_t* y, core::ThreadPool* pool, core::Isa isa = core::active_isa());

// 2-D max pooling of u8 NCHW planes (the max commutes with the monotone quantization, so MaxPool
// between equal Q/DQ parameters runs on u8). Padding never wins (it is absent).
struct QMaxPoolShape {
  int64_t planes = 0, ih = 0, iw = 0, oh = 0, ow = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, pad_top = 0, pad_left = 0;
};
core::Status qmax_pool_u8(const QMaxPoolShape& s, const uint8_t* x, uint8_t* y, core::ThreadPool* pool,
                          core::Isa isa = core::active_isa());

// Per-tensor QuantizeLinear to u8: saturate(round_half_even(x / scale) + zp) (the division in float,
// as the reference; NaN gives the zero point), and DequantizeLinear from u8: (x - zp) * scale.
void quantize_f32_u8(const float* x, int64_t n, float scale, int32_t zp, uint8_t* y, core::ThreadPool* pool,
                     core::Isa isa = core::active_isa());
void dequantize_u8_f32(const uint8_t* x, int64_t n, float scale, int32_t zp, float* y, core::ThreadPool* pool);

}  // namespace kestrel::kernels::cpu
