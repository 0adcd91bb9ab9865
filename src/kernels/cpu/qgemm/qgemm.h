// Int8 GEMM (u8 activations x s8 weights -> int32) with a requantizing epilogue; the kernel layer
// under quantized Conv / MatMul / Gemm.
//
//   acc[m,n] = sum_k (A[m,k] - a_zero_point) * B[k,n] + bias[n]           (exact, int32)
//   C[m,n]   = acc                                        (QgemmOutput::kInt32)
//            = float(acc) * scale[n]                      (kF32, dequantized)
//            = clamp(round(acc * multiplier[n]) + zp)     (kU8 / kS8, float or fixed-point)
//
// A is u8 row-major [M,K] (lda). B is s8 weights, symmetric per column (zero point 0), packed
// once with pack_b_s8 into the micro-kernel's layout together with its column sums (the A
// zero-point correction a_zp * colsum(B) is applied in the epilogue). Micro-kernels: AVX-512 VNNI
// (vpdpbusd), AVX-VNNI (256-bit vpdpbusd), AVX2 (vpmaddwd on widened int16, exact: see
// docs/qgemm.md) and scalar; chosen at run time like the float SGEMM.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "core/cpu_features.h"
#include "core/status.h"
#include "core/thread_pool.h"

namespace kestrel::kernels::cpu {

using core::Result;
using core::Status;

// The int8 micro-kernels. Ordered by preference; core::Isa has no VNNI levels, so the int8 level
// is derived from core::active_isa() (KESTREL_ISA) and core::cpu_features() (qgemm_active_isa).
enum class QgemmIsa : uint8_t {
  kScalar = 0,
  kAvx2 = 1,        // A and B widened to 16 bits when packed, vpmaddwd (no vpmaddubsw saturation)
  kAvxVnni = 2,     // 256-bit vpdpbusd (VEX)
  kAvx512Vnni = 3,  // 512-bit vpdpbusd
};

const char* qgemm_isa_name(QgemmIsa isa);
// True when this CPU can run the ISA's kernels and they were compiled into this build.
bool qgemm_isa_available(QgemmIsa isa);
// Best available ISA within core::active_isa() (KESTREL_ISA=avx2 gives kAvxVnni or kAvx2;
// KESTREL_ISA=avx512 allows kAvx512Vnni; scalar gives kScalar).
QgemmIsa qgemm_active_isa();

// Weights B[K,N] (s8) packed for one ISA: column slivers of NR, K in groups of 4 (VNNI, scalar:
// 4 s8 per column per group) or 2 (AVX2: 2 s16), zero padded; plus colsum[n] = sum_k B[k,n].
// Cheap to copy (shared, immutable storage).
class PackedBS8 {
 public:
  PackedBS8() = default;
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  QgemmIsa isa() const { return isa_; }
  bool empty() const { return data_ == nullptr; }
  const uint8_t* data() const { return data_; }
  // Per column sums of B (length n()).
  const int32_t* col_sums() const { return col_sums_; }
  size_t bytes() const { return bytes_; }

 private:
  friend Result<PackedBS8> pack_b_s8(int64_t, int64_t, const int8_t*, int64_t, bool, std::optional<QgemmIsa>);
  std::shared_ptr<void> storage_;
  const uint8_t* data_ = nullptr;
  const int32_t* col_sums_ = nullptr;
  int64_t k_ = 0, n_ = 0;
  size_t bytes_ = 0;
  QgemmIsa isa_ = QgemmIsa::kScalar;
};

// Packs B ([k,n] stored row-major with ldb, or [n,k] with ldb when trans_b: the usual layout of
// conv / Gemm weights [Cout, Cin*kh*kw]). isa: default qgemm_active_isa(); qgemm calls with the
// result run on that ISA. k is limited to 65536 so that every exact result fits in int32.
Result<PackedBS8> pack_b_s8(int64_t k, int64_t n, const int8_t* b, int64_t ldb, bool trans_b = false,
                            std::optional<QgemmIsa> isa = std::nullopt);

enum class QgemmOutput : uint8_t {
  kInt32,  // acc (int32_t* C)
  kF32,    // float(acc) * scale[n] (float* C)
  kU8,     // saturate(requantize(acc) + out_zero_point) to [out_min, out_max] within [0, 255]
  kS8,     // same within [-128, 127]
};

// Requantization (kU8 / kS8) from the int32 accumulator:
//   kFloat:      round_half_even(float(acc) * scale[n])      (scale per column, or scale[0] for all)
//   kFixedPoint: (int64(acc) * multiplier[n] + 2^(shift[n]-1)) >> shift[n] (arithmetic; rounds half
//                up), i.e. acc * multiplier * 2^-shift; shift in [1, 62], multiplier > 0.
//                quantize_multiplier() turns a real multiplier into this form.
enum class QgemmRequant : uint8_t { kFloat, kFixedPoint };

// Epilogue; pointers are borrowed for the duration of the call. Per-column arrays have length N,
// or length 1 when per_column is false (per-tensor).
struct QgemmEpilogue {
  QgemmOutput output = QgemmOutput::kInt32;
  const int32_t* bias = nullptr;  // [N] added to acc (before scaling), optional
  bool per_column = true;         // scale / multiplier / shift have N entries (else 1)
  QgemmRequant requant = QgemmRequant::kFloat;
  const float* scale = nullptr;         // kF32, and kU8 / kS8 with kFloat
  const int32_t* multiplier = nullptr;  // kFixedPoint
  const int32_t* shift = nullptr;       // kFixedPoint
  int32_t out_zero_point = 0;           // kU8 / kS8
  // Output clamp in the quantized domain (fused Relu / Clip), intersected with the type's range.
  int32_t out_min = -2147483647 - 1, out_max = 2147483647;
  // Store C transposed: element [m, n] at c[n * ldc + m] (ldc >= M). With A = im2col patches
  // [pixels, K] this writes an NCHW convolution's [Cout, pixels] output directly. Each tile goes
  // through an L1 buffer and is scattered column by column (slower than the row-major store).
  bool transpose_c = false;
};

// Splits a positive real multiplier into (multiplier in [2^30, 2^31), shift) for kFixedPoint.
// Fails when real is not finite and positive or the shift would fall outside [1, 62].
Status quantize_multiplier(double real, int32_t* multiplier, int32_t* shift);

struct QgemmContext {
  core::ThreadPool* pool = nullptr;  // null: the calling thread only
};

// C[M,N] (row stride ldc, in elements of the output type; C^T [N,M] with transpose_c) from A (u8 [M,K], lda) and packed
// B. The ISA is the one B was packed for. K must equal b.k(); M, N, K may be 0 (K = 0: acc = bias). Steady-state calls
// allocate nothing (per-thread packing scratch grows to the largest use). Integer arithmetic wraps modulo 2^32 only
// when bias pushes acc past int32 (not for A * B).
Status qgemm_u8s8(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, uint8_t a_zero_point,
                  const PackedBS8& b, void* c, int64_t ldc, const QgemmEpilogue& epilogue = {},
                  const QgemmContext& ctx = {});

// Register block (MR x NR) of an ISA's micro-kernel; for tests that want edge tiles.
struct QgemmTileShape {
  int mr = 0, nr = 0;
};
Result<QgemmTileShape> qgemm_tile_shape(QgemmIsa isa);

}  // namespace kestrel::kernels::cpu
