// SGEMM kernels for AVX-512F (compiled with AVX-512 flags; used only when the CPU has them).
// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 headers (the self-initialized
// _mm512_undefined_ps() placeholder of max/min/scalef/roundscale once inlined); not our code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "kernels/cpu/gemm/sgemm_ukernel_inl.h"

namespace kestrel::kernels::cpu {
namespace {

struct Avx512Ops {
  using V = __m512;
  static constexpr int kWidth = 16;
  static constexpr bool kHasTranspose = true;
  static KESTREL_GEMM_INLINE __mmask16 mask(int n) {
    return n >= 16 ? __mmask16(0xffff) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1u);
  }
  static KESTREL_GEMM_INLINE V zero() { return _mm512_setzero_ps(); }
  static KESTREL_GEMM_INLINE V set1(float x) { return _mm512_set1_ps(x); }
  static KESTREL_GEMM_INLINE V load(const float* p) { return _mm512_loadu_ps(p); }
  static KESTREL_GEMM_INLINE V load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static KESTREL_GEMM_INLINE void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static KESTREL_GEMM_INLINE void store_n(float* p, V v, int n) { _mm512_mask_storeu_ps(p, mask(n), v); }
  static KESTREL_GEMM_INLINE V add(V a, V b) { return _mm512_add_ps(a, b); }
  static KESTREL_GEMM_INLINE V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static KESTREL_GEMM_INLINE V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static KESTREL_GEMM_INLINE V div(V a, V b) { return _mm512_div_ps(a, b); }
  static KESTREL_GEMM_INLINE V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static KESTREL_GEMM_INLINE V max(V a, V b) { return _mm512_max_ps(a, b); }
  static KESTREL_GEMM_INLINE V min(V a, V b) { return _mm512_min_ps(a, b); }
  static KESTREL_GEMM_INLINE V round(V a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT); }
  static KESTREL_GEMM_INLINE V pow2i(V n) { return _mm512_scalef_ps(_mm512_set1_ps(1.f), n); }
  static KESTREL_GEMM_INLINE V abs(V a) { return _mm512_abs_ps(a); }
  static KESTREL_GEMM_INLINE V copysign(V mag, V sgn) {
    const V sign = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(0x80000000u)));
    return _mm512_or_ps(_mm512_and_ps(sgn, sign), _mm512_andnot_ps(sign, mag));
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

}  // namespace gemm_detail
}  // namespace kestrel::kernels::cpu
