// SGEMM kernels for AVX2 + FMA (compiled with AVX2 flags; used only when the CPU has them).
#include <immintrin.h>

#include "kernels/cpu/gemm/sgemm_ukernel_inl.h"

namespace kestrel::kernels::cpu {
namespace {

struct Avx2Ops {
  using V = __m256;
  static constexpr int kWidth = 8;
  static constexpr bool kHasTranspose = true;
  static KESTREL_GEMM_INLINE __m256i mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static KESTREL_GEMM_INLINE V zero() { return _mm256_setzero_ps(); }
  static KESTREL_GEMM_INLINE V set1(float x) { return _mm256_set1_ps(x); }
  static KESTREL_GEMM_INLINE V load(const float* p) { return _mm256_loadu_ps(p); }
  // maskload does not fault on masked-off lanes, so reading a row's tail is safe.
  static KESTREL_GEMM_INLINE V load_n(const float* p, int n) {
    return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask(n));
  }
  static KESTREL_GEMM_INLINE void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static KESTREL_GEMM_INLINE void store_n(float* p, V v, int n) {
    if (n >= 8) {
      _mm256_storeu_ps(p, v);
    } else {
      _mm256_maskstore_ps(p, mask(n), v);
    }
  }
  static KESTREL_GEMM_INLINE V add(V a, V b) { return _mm256_add_ps(a, b); }
  static KESTREL_GEMM_INLINE V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static KESTREL_GEMM_INLINE V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static KESTREL_GEMM_INLINE V div(V a, V b) { return _mm256_div_ps(a, b); }
  static KESTREL_GEMM_INLINE V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static KESTREL_GEMM_INLINE V max(V a, V b) { return _mm256_max_ps(a, b); }
  static KESTREL_GEMM_INLINE V min(V a, V b) { return _mm256_min_ps(a, b); }
  static KESTREL_GEMM_INLINE V round(V a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static KESTREL_GEMM_INLINE V pow2i(V n) {
    __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
  }
  static KESTREL_GEMM_INLINE V abs(V a) {
    return _mm256_andnot_ps(_mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u))), a);
  }
  static KESTREL_GEMM_INLINE V copysign(V mag, V sgn) {
    const V sign = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
    return _mm256_or_ps(_mm256_and_ps(sgn, sign), _mm256_andnot_ps(sign, mag));
  }

  // In-register 8x8 transpose: r[i] holds row i (8 k values); afterwards r[k] holds column k.
  static KESTREL_GEMM_INLINE void transpose8(V (&r)[8]) {
    V t[8], u[8];
    KESTREL_GEMM_UNROLL(4)
    for (int i = 0; i < 4; ++i) {
      t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    KESTREL_GEMM_UNROLL(2)
    for (int g = 0; g < 2; ++g) {
      u[4 * g + 0] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
      u[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
      u[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
      u[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
    }
    KESTREL_GEMM_UNROLL(4)
    for (int j = 0; j < 4; ++j) {
      r[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
      r[j + 4] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
    }
  }

  // dst[k * R + i] = src[i * ld + k] for i < rows (0 for rows <= i < R), 8 rows x 8 k at a time.
  static void transpose_pack(const float* src, int64_t ld, int rows, int64_t kc, float* dst, int R) {
    for (int g = 0; g < R; g += 8) {
      const int lanes = R - g < 8 ? R - g : 8;
      const int valid = rows - g;
      for (int64_t k0 = 0; k0 < kc; k0 += 8) {
        const int kn = kc - k0 < 8 ? static_cast<int>(kc - k0) : 8;
        // Fully unrolled with constant indices so r[] stays in registers.
        V r[8];
        KESTREL_GEMM_UNROLL(8)
        for (int i = 0; i < 8; ++i) r[i] = i < valid ? load_n(src + (g + i) * ld + k0, kn) : _mm256_setzero_ps();
        transpose8(r);
        float* d = dst + k0 * R + g;
        // A full-width store spills into the next output row, which the next store rewrites; only
        // the chunk's last row needs a masked store.
        KESTREL_GEMM_UNROLL(8)
        for (int k = 0; k < 8; ++k) {
          if (k >= kn) break;
          if (lanes == 8 || k + 1 < kn) {
            _mm256_storeu_ps(d + k * R, r[k]);
          } else {
            store_n(d + k * R, r[k], lanes);
          }
        }
      }
    }
  }
};

}  // namespace

namespace gemm_detail {

const UkernelTable* ukernel_table_avx2() {
  return SgemmKernel<Avx2Ops, 6, 2>::table(core::Isa::kAvx2);
}

}  // namespace gemm_detail
}  // namespace kestrel::kernels::cpu
