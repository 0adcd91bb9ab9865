// bf16 GEMM tiles for AVX-512 + AVX512_BF16 (compiled with those flags; used only when the CPU has them):
// 6 x 64 register tiles of vdpbf16ps over a block of B packed as bf16 pairs of rows.
#include "kernels/cpu/gemm/bf16_gemm.h"
#include "kernels/cpu/gemm/vec_math_inl.h"
#include "kernels/cpu/vec_ops_avx512_inl.h"  // first: it silences GCC's AVX-512 header warnings

namespace kestrel::kernels::cpu::bf16_detail {
namespace {

using S = VecOps;
constexpr int kVecs = kBf16Nr / 16;  // vectors per tile row

// B[0:k, 0:n] (rows ldb apart) as bf16 pairs of rows: tile t (64 columns) at dst + t * kp * 64, its pair row p
// at + p * 64, word j = (B[2p, 64t + j], B[2p + 1, 64t + j]) (low half, high half); zero past k and n.
void pack_b(const float* b, int64_t ldb, int64_t k, int64_t n, int64_t kp, uint32_t* dst) {
  // After vcvtne2ps2bf16 the 16-bit lanes 0-15 hold row 2p, 16-31 row 2p + 1: interleave them.
  const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                              6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const int64_t vecs = (n + 15) / 16;
  for (int64_t p = 0; p < kp; ++p) {
    const float* r0 = b + 2 * p * ldb;
    const float* r1 = 2 * p + 1 < k ? r0 + ldb : nullptr;
    for (int64_t v = 0; v < vecs; ++v) {
      const int64_t j = v * 16;
      const int lanes = n - j < 16 ? static_cast<int>(n - j) : 16;
      const __m512 x0 = S::load_n(r0 + j, lanes);
      const __m512 x1 = r1 ? S::load_n(r1 + j, lanes) : S::zero();
      const __m512i pair = _mm512_permutexvar_epi16(interleave, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(x1, x0)));
      _mm512_store_si512(dst + (v / kVecs) * kp * kBf16Nr + p * kBf16Nr + (v % kVecs) * 16, pair);
    }
  }
}

// Bias, residual and the activation over one tile's sums (acc: rows of NV vectors), into C.
template <int NV, class A, class F>
__attribute__((always_inline)) inline void store_tile(const A& acc, int rows, int cols, const Block& blk, int64_t i0,
                                                      int64_t j0, F act) {
  for (int i = 0; i < rows; ++i) {
    const __m512 bias = blk.bias ? S::set1(blk.bias[i0 + i]) : S::zero();
    float* c = blk.c + (i0 + i) * blk.ldc + j0;
    const float* r = blk.residual ? blk.residual + (i0 + i) * blk.ldr + j0 : nullptr;
    for (int v = 0; v < NV; ++v) {
      const int lanes = cols - 16 * v < 16 ? cols - 16 * v : 16;
      if (lanes <= 0) break;
      __m512 x = S::add(acc(i, v), bias);
      if (r) x = S::add(x, S::load_n(r + 16 * v, lanes));
      x = act(x);
      if (lanes == 16)
        S::store(c + 16 * v, x);
      else
        S::store_n(c + 16 * v, x, lanes);
    }
  }
}

// store_tile from sums in memory, not inlined: see tile.
template <int NV, class F>
__attribute__((noinline)) void store_tile_sums(const float* sums, int rows, int cols, const Block& blk, int64_t i0,
                                               int64_t j0, F act) {
  store_tile<NV>([&](int i, int v) { return _mm512_load_ps(sums + (i * NV + v) * 16); }, rows, cols, blk, i0, j0, act);
}

// One 6 x (16 NV) tile over all k pairs, then bias, residual and the activation on the way out; rows and cols: how
// many of the tile's rows and columns are in C. kOutOfLine: the epilogue is a call on the sums stored to the stack.
// For the activations that need constants (SiLU, ...): inlined, GCC 12 hoisted them out of the tile loops and kept
// accumulators of the 6 x 64 tile on the stack with a load and a store around their vdpbf16ps in every k step (perf
// annotate, EfficientNet-B0's mixed file: 28% of the kernel's samples on stack moves).
template <int NV, bool kOutOfLine, class F>
__attribute__((always_inline)) inline void tile(const uint32_t* a, const uint32_t* bt, int64_t kp, int rows, int cols,
                                                const Block& blk, int64_t i0, int64_t j0, F act) {
  __m512 acc[kBf16Mr][NV];
  for (int i = 0; i < kBf16Mr; ++i)
    for (int v = 0; v < NV; ++v) acc[i][v] = S::zero();
  for (int64_t p = 0; p < kp; ++p) {
    __m512bh bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = reinterpret_cast<__m512bh>(_mm512_load_si512(bt + p * kBf16Nr + v * 16));
    for (int i = 0; i < kBf16Mr; ++i) {
      const __m512bh av = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[p * kBf16Mr + i])));
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], av, bv[v]);
    }
  }
  if constexpr (kOutOfLine) {
    alignas(64) float sums[kBf16Mr * NV * 16];
    for (int i = 0; i < kBf16Mr; ++i)
      for (int v = 0; v < NV; ++v) _mm512_store_ps(sums + (i * NV + v) * 16, acc[i][v]);
    store_tile_sums<NV>(sums, rows, cols, blk, i0, j0, act);
  } else {
    store_tile<NV>([&](int i, int v) { return acc[i][v]; }, rows, cols, blk, i0, j0, act);
  }
}

template <bool kOutOfLine, class F>
void run_block(const Block& blk, F act) {
  const int64_t kp = (blk.k + 1) / 2;
  pack_b(blk.b, blk.ldb, blk.k, blk.n, kp, blk.bpack);
  for (int64_t j0 = 0; j0 < blk.n; j0 += kBf16Nr) {
    const int cols = static_cast<int>(blk.n - j0 < kBf16Nr ? blk.n - j0 : kBf16Nr);
    const uint32_t* bt = blk.bpack + (j0 / kBf16Nr) * kp * kBf16Nr;
    const int nv = (cols + 15) / 16;
    for (int64_t i0 = 0; i0 < blk.m; i0 += kBf16Mr) {
      const uint32_t* a = blk.a + (i0 / kBf16Mr) * kp * kBf16Mr;
      const int rows = static_cast<int>(blk.m - i0 < kBf16Mr ? blk.m - i0 : kBf16Mr);
      switch (nv) {
        case 4:
          tile<4, kOutOfLine>(a, bt, kp, rows, cols, blk, i0, j0, act);
          break;
        case 3:
          tile<3, kOutOfLine>(a, bt, kp, rows, cols, blk, i0, j0, act);
          break;
        case 2:
          tile<2, kOutOfLine>(a, bt, kp, rows, cols, blk, i0, j0, act);
          break;
        default:
          tile<1, kOutOfLine>(a, bt, kp, rows, cols, blk, i0, j0, act);
          break;
      }
    }
  }
}

void block(const Block& blk) {
  switch (blk.activation) {  // the clamps in the store, the others out of line (tile)
    case GemmActivation::kNone:
      return run_block<false>(blk, [](__m512 x) { return x; });
    case GemmActivation::kRelu:
      return run_block<false>(blk, [](__m512 x) { return vrelu<S>(x); });
    case GemmActivation::kClip: {
      const __m512 lo = S::set1(blk.act_alpha), hi = S::set1(blk.act_beta);
      return run_block<false>(blk, [=](__m512 x) { return vclamp<S>(x, lo, hi); });
    }
    default:
      return with_activation<S>(blk.activation, blk.act_alpha, blk.act_beta, [&](auto f) { run_block<true>(blk, f); });
  }
}

}  // namespace

BlockFn block_fn_avx512bf16() {
  return &block;
}

}  // namespace kestrel::kernels::cpu::bf16_detail
