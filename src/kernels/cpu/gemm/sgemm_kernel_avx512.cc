// SGEMM kernels for AVX-512F (compiled with AVX-512 flags; used only when the CPU has them).
#include "kernels/cpu/vec_ops_avx512_inl.h"  // first: it silences GCC's AVX-512 header warnings
#include "kernels/cpu/gemm/sgemm_ukernel_inl.h"

namespace kestrel::kernels::cpu {
namespace {

// The shared AVX-512 vector ops plus the in-register transpose the packers use.
struct Avx512Ops : VecOps {
  static constexpr bool kHasTranspose = true;

  // Lane i: the sum of a[i]'s 16 lanes. Pairs are added in four rounds (unpack, shuffle_ps, then
  // shuffle_f32x4 twice), each halving the vectors, which leaves the sums in order.
  static KESTREL_GEMM_INLINE V row_sums(const V (&a)[16]) {
    V u[8], w[4], z[2];
    KESTREL_GEMM_UNROLL(8)
    for (int i = 0; i < 8; ++i)  // per 128-bit block: a[2i] lanes 0+2, a[2i+1] 0+2, a[2i] 1+3, a[2i+1] 1+3
      u[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
    KESTREL_GEMM_UNROLL(4)
    for (int j = 0; j < 4; ++j)  // block b, lane c: the sum of block b of a[4j + c]
      w[j] = _mm512_add_ps(_mm512_shuffle_ps(u[2 * j], u[2 * j + 1], 0x44),
                           _mm512_shuffle_ps(u[2 * j], u[2 * j + 1], 0xee));
    KESTREL_GEMM_UNROLL(2)
    for (int h = 0; h < 2; ++h)  // blocks: a[8h + c] over blocks 0+1, 2+3, then a[8h + 4 + c] likewise
      z[h] = _mm512_add_ps(_mm512_shuffle_f32x4(w[2 * h], w[2 * h + 1], 0x88),
                           _mm512_shuffle_f32x4(w[2 * h], w[2 * h + 1], 0xdd));
    return _mm512_add_ps(_mm512_shuffle_f32x4(z[0], z[1], 0x88), _mm512_shuffle_f32x4(z[0], z[1], 0xdd));
  }

  // Lanes kOff .. kOff + 15 of the 32 in (lo, hi).
  template <int kOff>
  static KESTREL_GEMM_INLINE V window(V lo, V hi) {
    return _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(hi), _mm512_castps_si512(lo), kOff));
  }

  // In-register 16x16 transpose: r[i] holds row i (16 k values); afterwards r[k] holds column k.
  static KESTREL_GEMM_INLINE void transpose16(V (&r)[16]) {
    V t[16], u[16];
    KESTREL_GEMM_UNROLL(8)
    for (int i = 0; i < 8; ++i) {
      t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    // u[4g + j]: rows 4g..4g+3 at k = j (+4, +8, +12 in the upper 128-bit lanes).
    KESTREL_GEMM_UNROLL(4)
    for (int g = 0; g < 4; ++g) {
      u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
      u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
      u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
      u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
    }
    KESTREL_GEMM_UNROLL(4)
    for (int j = 0; j < 4; ++j) {
      V v0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88), v1 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xdd);
      V w0 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88), w1 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xdd);
      r[j] = _mm512_shuffle_f32x4(v0, w0, 0x88);
      r[j + 8] = _mm512_shuffle_f32x4(v0, w0, 0xdd);
      r[j + 4] = _mm512_shuffle_f32x4(v1, w1, 0x88);
      r[j + 12] = _mm512_shuffle_f32x4(v1, w1, 0xdd);
    }
  }

  // dst[k * R + i] = src[i * ld + k] for i < rows (0 for rows <= i < R), 16 rows x 16 k at a time.
  static void transpose_pack(const float* src, int64_t ld, int rows, int64_t kc, float* dst, int R) {
    for (int g = 0; g < R; g += 16) {
      const int lanes = R - g < 16 ? R - g : 16;  // lanes of each output row this group fills
      const int valid = rows - g;                 // source rows present in this group
      const __mmask16 out_mask = mask(lanes);
      for (int64_t k0 = 0; k0 < kc; k0 += 16) {
        const int kn = kc - k0 < 16 ? static_cast<int>(kc - k0) : 16;
        // Fully unrolled with constant indices so r[] stays in registers.
        const __mmask16 in_mask = mask(kn);
        // The rows are short, interleaved streams the hardware prefetcher does not follow: fetch
        // each row a few lines ahead.
        V r[16];
        KESTREL_GEMM_UNROLL(16)
        for (int i = 0; i < 16; ++i) {
          if (i < valid) {
            __builtin_prefetch(src + (g + i) * ld + k0 + 64, 0, 3);
            r[i] = _mm512_maskz_loadu_ps(in_mask, src + (g + i) * ld + k0);
          } else {
            r[i] = _mm512_setzero_ps();
          }
        }
        transpose16(r);
        float* d = dst + k0 * R + g;
        if (kn == 16) {
          KESTREL_GEMM_UNROLL(16)
          for (int k = 0; k < 16; ++k) _mm512_mask_storeu_ps(d + k * R, out_mask, r[k]);
        } else {
          KESTREL_GEMM_UNROLL(16)
          for (int k = 0; k < 16; ++k)
            if (k < kn) _mm512_mask_storeu_ps(d + k * R, out_mask, r[k]);
        }
      }
    }
  }
};

}  // namespace

namespace gemm_detail {

// 14 x 32: 28 accumulators + 2 B vectors + 1 broadcast of the 32 registers. Measured against
// 12x32, 8x48, 6x64 and 28x16 on square and conv shapes: best or within noise of the best overall
// (6x64/8x48 win a few small-M shapes, 28x16 loses everywhere).
const UkernelTable* ukernel_table_avx512() {
  return SgemmKernel<Avx512Ops, 14, 2>::table(core::Isa::kAvx512);
}

// 8 x 48 (24 accumulators) for M = 15 or 16 (pack_a packs such an A for it; a packed B keeps the
// default tiles), which 14 x 32 covers with a full tile plus a 1-2 row edge tile: on MobileNetV2's
// 112x112 32 -> 16 1x1 conv (M = 16, K = 32) 170 GFLOP/s against 145;
// 14 x 32 stays better from M = 24 up (198 against 172 at M = 24, 188 against 167 at M = 32).
const UkernelTable* ukernel_table_avx512_small_m() {
  return SgemmKernel<Avx512Ops, 8, 3>::table(core::Isa::kAvx512);
}

}  // namespace gemm_detail
}  // namespace kestrel::kernels::cpu
