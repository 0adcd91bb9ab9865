// Fast single-precision GEMM with a fused epilogue, pre-packed operands, batching and threading.
//
//   C[M,N] = act( alpha * op(A)[M,K] * op(B)[K,N] + beta * C + bias + residual )
//
// All matrices are row-major with a leading dimension (elements between rows); op(X) is X or X^T
// as stored. BLIS-style: cache-blocked loops around packed panels and a register-blocked
// micro-kernel per instruction set (scalar, AVX2+FMA, AVX-512), chosen at run time.
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

enum class GemmActivation : uint8_t {
  kNone,
  kRelu,         // max(x, 0)
  kClip,         // min(max(x, act_alpha), act_beta); Relu6 is Clip(0, 6)
  kLeakyRelu,    // x >= 0 ? x : act_alpha * x
  kSigmoid,      // 1 / (1 + exp(-x))
  kHardSigmoid,  // max(0, min(1, act_alpha * x + act_beta))  (ONNX defaults 0.2, 0.5)
  kHardSwish,    // x * max(0, min(1, x / 6 + 0.5))
  kSilu,         // x * sigmoid(x)
  kSiluBf16,     // x * sigmoid(x) to bf16's precision (relative error under 1e-4): bf16 math, FastConv::enable_bf16
  kGelu,         // 0.5 x (1 + erf(x / sqrt 2))
  kTanh,
};

enum class GemmBias : uint8_t {
  kNone,
  kPerColumn,  // bias[n], length N (Gemm / MatMul + Add, C = [rows, features])
  kPerRow,     // bias[m], length M (convolution with C = [Cout, H*W])
};

// Work done on each output tile while it is still in registers or L1, in this order: bias,
// residual, activation. Pointers are borrowed for the duration of the call.
struct GemmEpilogue {
  GemmBias bias_kind = GemmBias::kNone;
  const float* bias = nullptr;
  const float* residual = nullptr;  // [M,N] added after the bias; row stride ldr
  int64_t ldr = 0;
  GemmActivation activation = GemmActivation::kNone;
  float act_alpha = 0.f, act_beta = 0.f;  // see GemmActivation
};

// Weights packed once into the layout one instruction set's micro-kernel reads (column or row
// slivers, zero padded, 64-byte aligned). Cheap to copy (shared, immutable storage).
class PackedA {
 public:
  PackedA() = default;
  int64_t m() const { return m_; }
  int64_t k() const { return k_; }
  core::Isa isa() const { return isa_; }
  // Rows per packed sliver: the tile height of the micro-kernel it was packed for (AVX-512 packs
  // M = 15..16 for its 8-row tiles, every other M for its 14-row ones).
  int mr() const { return mr_; }
  bool empty() const { return data_ == nullptr; }
  const float* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  // Rows [m0, m1) as a packed matrix of their own, sharing this one's storage (no copy, no
  // allocation): threads that each own a range of output rows multiply by their slice. m0 must be
  // a multiple of the tile height (`mr()`).
  Result<PackedA> slice_rows(int64_t m0, int64_t m1) const;

 private:
  friend Result<PackedA> pack_a(int64_t, int64_t, const float*, int64_t, bool, std::optional<core::Isa>);
  std::shared_ptr<void> storage_;
  const float* data_ = nullptr;
  int64_t m_ = 0, k_ = 0;
  int mr_ = 1;
  size_t bytes_ = 0;
  core::Isa isa_ = core::Isa::kScalar;
};

class PackedB {
 public:
  PackedB() = default;
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  core::Isa isa() const { return isa_; }
  bool empty() const { return data_ == nullptr; }
  const float* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  // Columns per packed sliver (the micro-kernel's tile width).
  int nr() const { return nr_; }
  // Columns [n0, n1) as a packed matrix of their own, sharing this one's storage (no copy, no
  // allocation); n0 must be a multiple of `nr()`.
  Result<PackedB> slice_cols(int64_t n0, int64_t n1) const;

 private:
  friend Result<PackedB> pack_b(int64_t, int64_t, const float*, int64_t, bool, std::optional<core::Isa>);
  std::shared_ptr<void> storage_;
  const float* data_ = nullptr;
  int64_t k_ = 0, n_ = 0;
  int nr_ = 1;
  size_t bytes_ = 0;
  core::Isa isa_ = core::Isa::kScalar;
};

// Packs op(A) ([m,k]; stored [m,k] with lda, or [k,m] when trans_a) / op(B) ([k,n]; stored [k,n]
// with ldb, or [n,k] when trans_b). isa: which micro-kernel the packing is for (default: the
// active one); GEMMs using the result run on that instruction set.
Result<PackedA> pack_a(int64_t m, int64_t k, const float* a, int64_t lda, bool trans_a,
                       std::optional<core::Isa> isa = std::nullopt);
Result<PackedB> pack_b(int64_t k, int64_t n, const float* b, int64_t ldb, bool trans_b,
                       std::optional<core::Isa> isa = std::nullopt);

// One GEMM input: a row-major matrix (op = transpose when `trans`), or a pre-packed one.
struct SgemmA {
  SgemmA(const float* data, int64_t ld, bool trans = false) : data(data), ld(ld), trans(trans) {}
  SgemmA(const PackedA& packed) : packed(&packed) {}  // NOLINT: implicit on purpose
  const float* data = nullptr;
  int64_t ld = 0;
  bool trans = false;
  const PackedA* packed = nullptr;
};

struct SgemmB {
  SgemmB(const float* data, int64_t ld, bool trans = false) : data(data), ld(ld), trans(trans) {}
  SgemmB(const PackedB& packed) : packed(&packed) {}  // NOLINT: implicit on purpose
  const float* data = nullptr;
  int64_t ld = 0;
  bool trans = false;
  const PackedB* packed = nullptr;
};

// How to run: thread pool (null = the calling thread only) and, for tests and benchmarks, a
// forced instruction set (default: core::active_isa(), which honours KESTREL_ISA). Packing
// scratch is a per-thread buffer that grows to the largest blocking used and is then reused, so a
// steady stream of GEMMs allocates nothing.
struct SgemmContext {
  core::ThreadPool* pool = nullptr;
  std::optional<core::Isa> isa;
  // With threads: give each thread one contiguous range of C's columns when N is at least
  // kSplitColumnsMinN (else the split is chosen by cost, rows first). For callers whose next
  // consumers read C by column ranges (a conv's pixels, read by the next convs in row strips):
  // each thread then reads what it wrote instead of half of it from the other core.
  bool split_columns = false;
};
inline constexpr int64_t kSplitColumnsMinN = 1024;

// Multiple GEMMs with the same shape. Matrix i uses data + i * stride (stride 0 broadcasts one
// matrix to every batch entry), or, when the pointer array is given, ptrs[i]. Pre-packed inputs
// are shared by all entries. bias is shared; residual follows stride_residual / residual_ptrs.
struct SgemmBatch {
  int64_t count = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0, stride_residual = 0;
  const float* const* a_ptrs = nullptr;
  const float* const* b_ptrs = nullptr;
  float* const* c_ptrs = nullptr;
  const float* const* residual_ptrs = nullptr;
};

// C = act(alpha * op(A) * op(B) + beta * C + bias + residual). With beta == 0, C is not read (it
// may hold NaN). M, N or K may be 0 (K = 0 gives beta * C + epilogue). C must not overlap A, B,
// bias or residual (deep K is accumulated in C in several passes; for C += ... use beta = 1).
Status sgemm(int64_t m, int64_t n, int64_t k, float alpha, const SgemmA& a, const SgemmB& b, float beta, float* c,
             int64_t ldc, const GemmEpilogue& epilogue = {}, const SgemmContext& ctx = {});

// BLAS-style spelling of the same call.
inline Status sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                    int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                    const GemmEpilogue& epilogue = {}, const SgemmContext& ctx = {}) {
  return sgemm(m, n, k, alpha, SgemmA(a, lda, trans_a), SgemmB(b, ldb, trans_b), beta, c, ldc, epilogue, ctx);
}

Status sgemm_batched(int64_t m, int64_t n, int64_t k, float alpha, const SgemmA& a, const SgemmB& b, float beta,
                     float* c, int64_t ldc, const SgemmBatch& batch, const GemmEpilogue& epilogue = {},
                     const SgemmContext& ctx = {});

// Weight-only int8 B: op(B)[k, n] = data[k * ld + n] * scale[n], an int8 [K, N] row-major matrix
// with one f32 scale per column (output channel). B stays int8 in memory: each K x N panel is
// widened and scaled into the per-thread packing scratch right before the micro-kernel uses it,
// so the f32 weights never exist as a whole.
struct SgemmBInt8 {
  const int8_t* data = nullptr;
  int64_t ld = 0;
  const float* scale = nullptr;  // [N]
};

// C = act(alpha * op(A) * B + beta * C + bias + residual) with an int8 B (same contract as sgemm).
Status sgemm_b_int8(int64_t m, int64_t n, int64_t k, float alpha, const SgemmA& a, const SgemmBInt8& b, float beta,
                    float* c, int64_t ldc, const GemmEpilogue& epilogue = {}, const SgemmContext& ctx = {});

// Register block (MR x NR) of an instruction set's micro-kernel; for tests that want edge tiles.
struct SgemmTileShape {
  int mr = 0, nr = 0;
};
Result<SgemmTileShape> sgemm_tile_shape(core::Isa isa);

}  // namespace kestrel::kernels::cpu
