// GEMM with bf16 products and f32 sums, for the convolutions a model allows to run in reduced
// precision (docs/quantization.md, "bf16 for the float layers of mixed models"):
//
//   C[M,N] = act( A[M,K] * B[K,N] + bias[row] + residual )
//
// A (the weights) is rounded to bf16 and packed once; B (the activations, f32) is rounded to bf16
// (round to nearest even) as it is packed, per block of columns; products of bf16 pairs are summed
// in f32 by AVX512_BF16's vdpbf16ps (twice the multiply-adds of an FMA per instruction). Only CPUs
// with AVX512_BF16 run it (bf16_gemm_available); callers keep their f32 path for the others.
// Tests: tests/unit/bf16_gemm_test.cc (against a double loop over the operands rounded by bf16_round below);
// benchmark: kestrel_kernel_bench --benchmark_filter=sgemm/bf16_packedA (beside sgemm/kestrel_packedA).
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "kernels/cpu/gemm/sgemm.h"

namespace kestrel::kernels::cpu {

// f32 -> bf16 bits, round to nearest even (as vcvtneps2bf16: NaN stays a quiet NaN).
inline uint16_t bf16_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
// x rounded to bf16 and widened back to f32.
inline float bf16_round(float x) {
  const uint32_t u = static_cast<uint32_t>(bf16_bits(x)) << 16;
  float y;
  std::memcpy(&y, &u, 4);
  return y;
}

// Rows and columns of one register tile of the micro-kernel.
inline constexpr int kBf16Mr = 6;
inline constexpr int kBf16Nr = 64;

// A [M, K] in bf16, packed once: slivers of kBf16Mr rows; sliver s holds the pair (A[s * MR + i, 2p],
// A[s * MR + i, 2p + 1]) as one 32-bit word at [p * MR + i], zero past M and past K (K rounded up to even).
class PackedBf16A {
 public:
  PackedBf16A() = default;
  static Result<PackedBf16A> pack(int64_t m, int64_t k, const float* a, int64_t lda);
  int64_t m() const { return m_; }
  int64_t k() const { return k_; }
  bool empty() const { return data_ == nullptr; }
  const uint32_t* data() const { return data_ ? data_->data() : nullptr; }
  size_t bytes() const { return data_ ? data_->size() * sizeof(uint32_t) : 0; }

 private:
  std::shared_ptr<const std::vector<uint32_t>> data_;
  int64_t m_ = 0, k_ = 0;
};

// PackedBf16A's layout written into caller memory (weights that change per run, e.g. scaled per input channel by
// a squeeze-excite gate): A [m, k] rows lda apart, column j times col_scale[j] when col_scale is given, into dst of
// bf16_packed_a_words(m, k) words.
int64_t bf16_packed_a_words(int64_t m, int64_t k);
void bf16_pack_a(int64_t m, int64_t k, const float* a, int64_t lda, const float* col_scale, uint32_t* dst);

// Whether this CPU (and build) runs bf16_gemm.
bool bf16_gemm_available();

// C = act(A * B + bias + residual) as in the header comment; A [m, k] packed (bf16_pack_a), B [K, N] f32 rows ldb
// apart, C rows ldc apart; ep.bias_kind kNone or kPerRow (one per row of C), ep.residual [M, N] rows ep.ldr apart
// (may be C itself: each element is read before it is written). With a pool, threads take blocks of columns.
// Unsupported when !bf16_gemm_available().
Status bf16_gemm(const uint32_t* a, int64_t m, int64_t k, int64_t n, const float* b, int64_t ldb, float* c, int64_t ldc,
                 const GemmEpilogue& ep, core::ThreadPool* pool = nullptr);
inline Status bf16_gemm(const PackedBf16A& a, int64_t n, const float* b, int64_t ldb, float* c, int64_t ldc,
                        const GemmEpilogue& ep, core::ThreadPool* pool = nullptr) {
  return bf16_gemm(a.data(), a.m(), a.k(), n, b, ldb, c, ldc, ep, pool);
}

namespace bf16_detail {
// One block of columns (n <= kBf16BlockCols), all rows of A: B packed into `bpack` ((k + 1) / 2 * kBf16BlockCols
// words), then every tile. The AVX512_BF16 translation unit defines it.
inline constexpr int64_t kBf16BlockCols = 256;
struct Block {
  const uint32_t* a = nullptr;  // PackedBf16A::data()
  int64_t m = 0;
  const float* b = nullptr;  // B[0, first column of the block]
  int64_t ldb = 0, k = 0, n = 0;
  uint32_t* bpack = nullptr;
  float* c = nullptr;  // C[0, first column]
  int64_t ldc = 0;
  const float* bias = nullptr;      // [m] or null
  const float* residual = nullptr;  // residual[0, first column] or null
  int64_t ldr = 0;
  GemmActivation activation = GemmActivation::kNone;
  float act_alpha = 0.f, act_beta = 0.f;
};
using BlockFn = void (*)(const Block& blk);
BlockFn block_fn_avx512bf16();  // x86-64 builds only
}  // namespace bf16_detail

}  // namespace kestrel::kernels::cpu
