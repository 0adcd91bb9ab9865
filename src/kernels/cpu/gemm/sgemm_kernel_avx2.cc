// SGEMM kernels for AVX2 + FMA (compiled with AVX2 flags; used only when the CPU has them).
#include "kernels/cpu/gemm/sgemm_ukernel_inl.h"
#include "kernels/cpu/vec_ops_avx2_inl.h"

namespace kestrel::kernels::cpu {
namespace {

// The shared AVX2 vector ops plus the in-register transpose the packers use.
struct Avx2Ops : VecOps {
  static constexpr bool kHasTranspose = true;

  // Lane i: the sum of a[i]'s 8 lanes (pairs added in three rounds, as in the AVX-512 row_sums).
  static KESTREL_GEMM_INLINE V row_sums(const V (&a)[8]) {
    V u[4], w[2];
    KESTREL_GEMM_UNROLL(4)
    for (int i = 0; i < 4; ++i)
      u[i] = _mm256_add_ps(_mm256_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm256_unpackhi_ps(a[2 * i], a[2 * i + 1]));
    KESTREL_GEMM_UNROLL(2)
    for (int j = 0; j < 2; ++j)
      w[j] = _mm256_add_ps(_mm256_shuffle_ps(u[2 * j], u[2 * j + 1], 0x44),
                           _mm256_shuffle_ps(u[2 * j], u[2 * j + 1], 0xee));
    return _mm256_add_ps(_mm256_permute2f128_ps(w[0], w[1], 0x20), _mm256_permute2f128_ps(w[0], w[1], 0x31));
  }

  // Lanes kOff .. kOff + 7 of the 16 in (lo, hi).
  template <int kOff>
  static KESTREL_GEMM_INLINE V window(V lo, V hi) {
    if constexpr (kOff == 0) {
      return lo;
    } else {
      const __m256i idx = _mm256_setr_epi32(kOff, (kOff + 1) & 7, (kOff + 2) & 7, (kOff + 3) & 7, (kOff + 4) & 7,
                                            (kOff + 5) & 7, (kOff + 6) & 7, (kOff + 7) & 7);
      return _mm256_blend_ps(_mm256_permutevar8x32_ps(lo, idx), _mm256_permutevar8x32_ps(hi, idx),
                             (0xff << (8 - kOff)) & 0xff);
    }
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
