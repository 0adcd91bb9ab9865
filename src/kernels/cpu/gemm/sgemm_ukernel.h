// The contract between the SGEMM driver (blocking, packing order, threads) and one instruction
// set's kernels (micro-kernel, packers, activation pass). A new ISA (e.g. NEON) adds one table.
#pragma once

#include <cstdint>

#include "core/cpu_features.h"
#include "kernels/cpu/gemm/sgemm.h"

namespace kestrel::kernels::cpu::gemm_detail {

// Packed layouts (MR, NR from the table):
//   A: slivers of MR rows; sliver s holds op(A)[s*MR + i, k] at [k * MR + i], zero rows past M.
//   B: slivers of NR columns; sliver s holds op(B)[k, s*NR + j] at [k * NR + j], zero past N.
// Pre-packed operands keep the whole K in each sliver; the driver points into them at k0.

// One call of the macro-kernel: C block [mc, nc] += one k-block of depth kc.
struct MacroTile {
  int64_t mc = 0, nc = 0, kc = 0;
  const float* a = nullptr;  // first A sliver
  int64_t a_sliver_stride = 0;
  const float* b = nullptr;             // first B sliver (packed) or &op(B)[k0, n0] (direct)
  int64_t b_sliver_stride = 0;          // floats between slivers (NR when direct)
  int64_t b_row_stride = 0;             // floats between k rows inside a sliver (NR packed, ldb direct)
  bool b_direct = false;                // B read in place (row stride ldb)
  float* b_edge_buf = nullptr;          // direct B: kc * NR floats of scratch for the last partial sliver
  bool b_prepacked = false;             // B is a pre-packed operand (weights), not packed for this call
  const float* b_next_panel = nullptr;  // direct or pre-packed B: the panel after this one (to prefetch), or null
  int64_t b_next_panel_cols = 0;
  float* c = nullptr;
  int64_t ldc = 0;
  float alpha = 1.f, beta = 0.f;  // beta == 0: C is not read
  bool last_k = true;             // apply the epilogue after this block
  // Epilogue, already offset to this block's first row / column.
  const float* bias_row = nullptr;  // [mc]
  const float* bias_col = nullptr;  // [nc]
  const float* residual = nullptr;
  int64_t ldr = 0;
  GemmActivation activation = GemmActivation::kNone;
  float act_alpha = 0.f, act_beta = 0.f;
  // Whole-vector stores of C non-temporal (the driver sets it only on the last K block, for large
  // C with aligned rows and an activation applied in the store; it fences afterwards).
  bool stream_c = false;
  // The col_n columns past the tiled ones (N = 49 = 3 x 16 + 1 on a 7x7 plane, 196 = 12 x 16 + 4
  // on a 14x14 one), or null: after each A sliver's tiles the macro-kernel stores the sliver's dot
  // products with column j of op(B) (kc contiguous values at col_b + j * kc) at col_c + j (rows
  // ldc apart; col_accum: added, for the later K blocks), while the sliver is in L1. The driver
  // applies the epilogue to the columns after the last block.
  const float* col_b = nullptr;
  int col_n = 0;
  float* col_c = nullptr;
  bool col_accum = false;
};

struct UkernelTable {
  core::Isa isa = core::Isa::kScalar;
  int mr = 0, nr = 0;
  int width = 1;  // floats per vector
  void (*macro)(const MacroTile& t) = nullptr;
  // Packs op(A)[0:mc, 0:kc] into ceil(mc/MR) slivers starting at dst, sliver_stride floats apart
  // (each sliver's k rows are MR apart). a points at op(A)[0,0] of the block.
  void (*pack_a)(const float* a, int64_t lda, bool trans, int64_t mc, int64_t kc, float* dst,
                 int64_t sliver_stride) = nullptr;
  // Packs op(B)[0:kc, 0:nc] into ceil(nc/NR) slivers.
  void (*pack_b)(const float* b, int64_t ldb, bool trans, int64_t kc, int64_t nc, float* dst,
                 int64_t sliver_stride) = nullptr;
  // Widens op(B)[0:kc, 0:nc] = int8 b (rows ldb apart) * scale[column] into ceil(nc/NR) slivers.
  void (*unpack_b_i8)(const int8_t* b, int64_t ldb, const float* scale, int64_t kc, int64_t nc, float* dst,
                      int64_t sliver_stride) = nullptr;
  // Small-M int8 B: y[i, j] = sum_p op(A)[i, p] * b[p * ldb + j] * scale[j] for i < m <= 4 and
  // j in [0, n), y rows ldy apart; B is widened in registers (no panel), read once for all rows.
  void (*gemv_b_i8)(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool trans_a, const int8_t* b,
                    int64_t ldb, const float* scale, float* y, int64_t ldy) = nullptr;
  // Small-M pre-packed B: y[i, j] = sum_p op(A)[i, p] * op(B)[p, j] (+ bias[j] if given) for
  // i < m <= 4 and j in [0, n), b at the first sliver of the columns (whole K per sliver), y rows
  // ldy apart.
  void (*gemv_packed_b)(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool trans_a, const float* b,
                        const float* bias, float* y, int64_t ldy) = nullptr;
  // Pre-packed A against one column of B: y[i * ldy] = sum_p op(A)[i, p] * b[p * ldb] (+ bias[i],
  // + r[i * ldr] if given) for i in [0, m), a at the first sliver (whole K per sliver).
  void (*gemv_packed_a)(int64_t m, int64_t k, const float* a, const float* b, int64_t ldb, const float* bias,
                        const float* r, int64_t ldr, float* y, int64_t ldy) = nullptr;
  // Row-major A against one contiguous column: y[i * ldy] = sum_p a[i * lda + p] * x[p] (+ bias[i],
  // + r[i * ldr] if given) for i in [0, m).
  void (*gemv_rows)(int64_t m, int64_t k, const float* a, int64_t lda, const float* x, const float* bias,
                    const float* r, int64_t ldr, float* y, int64_t ldy) = nullptr;
  // In-place activation of an [m, n] block (the passes the micro-kernel does not do in registers).
  void (*activate)(float* c, int64_t ldc, int64_t m, int64_t n, GemmActivation act, float alpha, float beta) = nullptr;
};

// Per-ISA tables; null when the ISA was not compiled into this binary.
const UkernelTable* ukernel_table_scalar();
const UkernelTable* ukernel_table_avx2();
const UkernelTable* ukernel_table_avx512();
// AVX-512 with 8 x 48 tiles, for M = 15..16 when neither operand is pre-packed (sgemm.cc).
const UkernelTable* ukernel_table_avx512_small_m();

// Activations done in registers by the micro-kernel (a clamp); the others run as a pass over the
// tile right after it is stored, while it is in L1.
inline bool activation_is_clamp(GemmActivation a) {
  return a == GemmActivation::kNone || a == GemmActivation::kRelu || a == GemmActivation::kClip;
}

}  // namespace kestrel::kernels::cpu::gemm_detail
