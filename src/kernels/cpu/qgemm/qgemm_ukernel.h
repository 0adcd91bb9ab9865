// The contract between the int8 GEMM driver (A packing, blocking, threads) and one ISA's kernels.
#pragma once

#include <cstdint>

#include "kernels/cpu/qgemm/qgemm.h"

namespace kestrel::kernels::cpu::qgemm_detail {

// Packed layouts (MR, NR, KG from the table). K is cut into groups of KG values that take 4 bytes
// per row / column: KG = 4 (u8 A, s8 B; vpdpbusd) or KG = 2 (A and B widened to 16 bits; vpmaddwd).
//   A: slivers of MR rows, [group][row][4 bytes], zero rows past M and zero k past K.
//   B: slivers of NR columns, [group][column][4 bytes], zero columns past N and zero k past K.
// A is packed per call (a copy, M * K bytes against M * N * K multiply-adds): the micro-kernel
// then finds every row's group at a constant offset from one pointer. Reading A in place (14 row
// pointers of stride lda) ran out of general registers and was ~2x slower.

// Everything about the epilogue that does not depend on the column.
struct Epilogue {
  QgemmOutput output = QgemmOutput::kInt32;
  QgemmRequant requant = QgemmRequant::kFloat;
  int32_t zero_point = 0;
  int32_t lo = 0, hi = 0;        // final clamp (kU8 / kS8), already within the type's range
  float lo_f = 0.f, hi_f = 0.f;  // lo - zero_point, hi - zero_point (float requantization)
};

// Column parameters of one B sliver, padded to NR (64-byte aligned, as vector loads expect).
constexpr int kMaxNr = 64;
struct alignas(64) ColParams {
  int32_t offset[kMaxNr];  // bias[n] - a_zp * colsum[n] (wrapping)
  float scale[kMaxNr];
  int32_t multiplier[kMaxNr];
  int32_t shift[kMaxNr];
};

// One call of the macro-kernel: C[0:mc, 0:nc] for one A block (all of K) and a run of B slivers.
struct MacroTile {
  int64_t mc = 0, nc = 0;
  int64_t k = 0;                // true K (groups = ceil(K / KG))
  const uint8_t* a = nullptr;   // packed A block
  const uint8_t* b = nullptr;   // first B sliver
  int64_t b_sliver_stride = 0;  // bytes between B slivers
  // Column parameters, offset to this block's first column: offset = bias - a_zp * col_sums.
  const int32_t* col_sums = nullptr;  // [nc]
  const int32_t* bias = nullptr;      // [nc] or null
  int32_t a_zero_point = 0;
  const float* scale = nullptr;         // [nc] or [1]
  const int32_t* multiplier = nullptr;  // [nc] or [1]
  const int32_t* shift = nullptr;       // [nc] or [1]
  bool per_column = true;
  const Epilogue* ep = nullptr;
  void* c = nullptr;         // &C[m0, n0] in the output type
  int64_t ldc = 0;           // elements
  bool transpose_c = false;  // c is &C^T[n0, m0]: element (m, n) at c[n * ldc + m]
};

struct UkernelTable {
  QgemmIsa isa = QgemmIsa::kScalar;
  int mr = 0, nr = 0, kg = 4;
  void (*macro)(const MacroTile& t) = nullptr;
  // Packs A[0:mc, 0:k] (u8, row stride lda) into ceil(mc / MR) slivers of groups(k) * MR * 4 bytes.
  void (*pack_a)(const uint8_t* a, int64_t lda, int64_t mc, int64_t k, uint8_t* dst) = nullptr;
  // Packs B (s8 [k, n] with ldb, or [n, k] when trans) into ceil(n / NR) slivers of
  // groups(k) * NR * 4 bytes.
  void (*pack_b)(const int8_t* b, int64_t ldb, bool trans, int64_t k, int64_t n, uint8_t* dst) = nullptr;
};

// Per-ISA tables; null when the ISA was not compiled into this binary.
const UkernelTable* qgemm_table_scalar();
const UkernelTable* qgemm_table_avx2();
const UkernelTable* qgemm_table_avxvnni();
const UkernelTable* qgemm_table_avx512vnni();

}  // namespace kestrel::kernels::cpu::qgemm_detail
