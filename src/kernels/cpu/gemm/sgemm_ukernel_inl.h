// The SGEMM macro-kernel, MR x NR register-blocked micro-kernel and packers, written once over a
// vector-ops traits type S (see vec_math_inl.h) and instantiated per ISA by sgemm_kernel_*.cc.
//
// Include only from a kernel .cc; the unnamed namespace keeps each ISA's copy private to its
// translation unit (they are compiled with different -m flags and must never be merged).
#pragma once

#include <cstdint>

#include "kernels/cpu/gemm/sgemm_ukernel.h"
#include "kernels/cpu/gemm/vec_math_inl.h"

#define KESTREL_GEMM_INLINE inline __attribute__((always_inline))
#define KESTREL_GEMM_PRAGMA(x) _Pragma(#x)
#define KESTREL_GEMM_UNROLL(n) KESTREL_GEMM_PRAGMA(GCC unroll n)

namespace kestrel::kernels::cpu {
namespace {

using gemm_detail::MacroTile;
using gemm_detail::UkernelTable;

template <class T>
KESTREL_GEMM_INLINE T gemm_min(T a, T b) {
  return a < b ? a : b;
}

template <class S, int MR, int NV>
struct SgemmKernel {
  using V = typename S::V;
  static constexpr int W = S::kWidth;
  static constexpr int NR = NV * W;

  // acc[MR][NV] = A sliver * B sliver over kc, then the epilogue and a (masked) store of the
  // valid m x n corner. kMaskB: B is read in place and has only nb valid columns.
  template <bool kMaskB>
  static KESTREL_GEMM_INLINE void tile(const MacroTile& t, const float* a, const float* b, int nb, float* c, int m,
                                       int n, int64_t row0, int64_t col0) {
    V acc[MR][NV];
    KESTREL_GEMM_UNROLL(16)
    for (int i = 0; i < MR; ++i) {
      KESTREL_GEMM_UNROLL(8)
      for (int v = 0; v < NV; ++v) acc[i][v] = S::zero();
    }
    const int64_t ldb = t.b_row_stride;
    for (int64_t k = 0; k < t.kc; ++k) {
      V bv[NV];
      KESTREL_GEMM_UNROLL(8)
      for (int v = 0; v < NV; ++v) bv[v] = kMaskB ? S::load_n(b + v * W, nb - v * W) : S::load(b + v * W);
      KESTREL_GEMM_UNROLL(16)
      for (int i = 0; i < MR; ++i) {
        V av = S::set1(a[i]);
        KESTREL_GEMM_UNROLL(8)
        for (int v = 0; v < NV; ++v) acc[i][v] = S::fmadd(av, bv[v], acc[i][v]);
      }
      a += MR;
      b += ldb;
    }
    store(t, acc, c, m, n, row0, col0);
  }

  static KESTREL_GEMM_INLINE void store(const MacroTile& t, V (&acc)[MR][NV], float* c, int m, int n, int64_t row0,
                                        int64_t col0) {
    const V alpha = S::set1(t.alpha), beta = S::set1(t.beta);
    const bool use_beta = t.beta != 0.f;
    const bool epi = t.last_k;
    const float* bias_col = epi ? t.bias_col : nullptr;
    const float* bias_row = epi ? t.bias_row : nullptr;
    const float* res = epi && t.residual ? t.residual + row0 * t.ldr + col0 : nullptr;
    const bool clamp = epi && t.activation != GemmActivation::kNone && gemm_detail::activation_is_clamp(t.activation);
    const V lo = t.activation == GemmActivation::kClip ? S::set1(t.act_alpha) : S::zero();
    const V hi = t.activation == GemmActivation::kClip ? S::set1(t.act_beta) : S::set1(3.0e38f);
    V bcol[NV];
    KESTREL_GEMM_UNROLL(8)
    for (int v = 0; v < NV; ++v) bcol[v] = bias_col ? S::load_n(bias_col + col0 + v * W, n - v * W) : S::zero();
    KESTREL_GEMM_UNROLL(16)
    for (int i = 0; i < MR; ++i) {
      if (i >= m) break;
      float* crow = c + i * t.ldc;
      V brow = bias_row ? S::set1(bias_row[row0 + i]) : S::zero();
      KESTREL_GEMM_UNROLL(8)
      for (int v = 0; v < NV; ++v) {
        const int nv = n - v * W;
        if (nv <= 0) break;
        V x = S::mul(acc[i][v], alpha);
        if (nv >= W) {
          if (use_beta) x = S::fmadd(S::load(crow + v * W), beta, x);
          if (bias_col) x = S::add(x, bcol[v]);
          if (bias_row) x = S::add(x, brow);
          if (res) x = S::add(x, S::load(res + i * t.ldr + v * W));
          if (clamp) x = S::min(S::max(x, lo), hi);
          S::store(crow + v * W, x);
        } else {
          if (use_beta) x = S::fmadd(S::load_n(crow + v * W, nv), beta, x);
          if (bias_col) x = S::add(x, bcol[v]);
          if (bias_row) x = S::add(x, brow);
          if (res) x = S::add(x, S::load_n(res + i * t.ldr + v * W, nv));
          if (clamp) x = S::min(S::max(x, lo), hi);
          S::store_n(crow + v * W, x, nv);
        }
      }
    }
  }

  static void macro(const MacroTile& t) {
    const bool post_act = t.last_k && !gemm_detail::activation_is_clamp(t.activation);
    for (int64_t jr = 0; jr < t.nc; jr += NR) {
      const int n = static_cast<int>(gemm_min<int64_t>(NR, t.nc - jr));
      const float* b = t.b + (jr / NR) * t.b_sliver_stride;
      const bool mask_b = t.b_direct && n < NR;
      for (int64_t ir = 0; ir < t.mc; ir += MR) {
        const int m = static_cast<int>(gemm_min<int64_t>(MR, t.mc - ir));
        const float* a = t.a + (ir / MR) * t.a_sliver_stride;
        float* c = t.c + ir * t.ldc + jr;
        if (mask_b) {
          tile<true>(t, a, b, n, c, m, n, ir, jr);
        } else {
          tile<false>(t, a, b, n, c, m, n, ir, jr);
        }
        if (post_act) activate_rows<S>(c, t.ldc, m, n, t.activation, t.act_alpha, t.act_beta);
      }
    }
  }

  // op(A) rows -> MR-row slivers.
  static void pack_a(const float* a, int64_t lda, bool trans, int64_t mc, int64_t kc, float* dst,
                     int64_t sliver_stride) {
    for (int64_t i0 = 0; i0 < mc; i0 += MR) {
      const int mb = static_cast<int>(gemm_min<int64_t>(MR, mc - i0));
      float* d = dst + (i0 / MR) * sliver_stride;
      if (trans) {
        // op(A)[i, k] = a[k * lda + i]: each k row of the sliver is contiguous in the source.
        for (int64_t k = 0; k < kc; ++k) {
          const float* s = a + k * lda + i0;
          for (int i = 0; i < mb; ++i) d[k * MR + i] = s[i];
          for (int i = mb; i < MR; ++i) d[k * MR + i] = 0.f;
        }
      } else {
        for (int i = 0; i < mb; ++i) {
          const float* s = a + (i0 + i) * lda;
          for (int64_t k = 0; k < kc; ++k) d[k * MR + i] = s[k];
        }
        for (int i = mb; i < MR; ++i)
          for (int64_t k = 0; k < kc; ++k) d[k * MR + i] = 0.f;
      }
    }
  }

  // op(B) columns -> NR-column slivers.
  static void pack_b(const float* b, int64_t ldb, bool trans, int64_t kc, int64_t nc, float* dst,
                     int64_t sliver_stride) {
    for (int64_t j0 = 0; j0 < nc; j0 += NR) {
      const int nb = static_cast<int>(gemm_min<int64_t>(NR, nc - j0));
      float* d = dst + (j0 / NR) * sliver_stride;
      if (!trans) {
        for (int64_t k = 0; k < kc; ++k) {
          const float* s = b + k * ldb + j0;
          if (nb == NR) {
            KESTREL_GEMM_UNROLL(8)
            for (int v = 0; v < NV; ++v) S::store(d + k * NR + v * W, S::load(s + v * W));
          } else {
            KESTREL_GEMM_UNROLL(8)
            for (int v = 0; v < NV; ++v) S::store(d + k * NR + v * W, S::load_n(s + v * W, nb - v * W));
          }
        }
      } else {
        // op(B)[k, j] = b[j * ldb + k].
        for (int j = 0; j < nb; ++j) {
          const float* s = b + (j0 + j) * ldb;
          for (int64_t k = 0; k < kc; ++k) d[k * NR + j] = s[k];
        }
        for (int j = nb; j < NR; ++j)
          for (int64_t k = 0; k < kc; ++k) d[k * NR + j] = 0.f;
      }
    }
  }

  static void activate(float* c, int64_t ldc, int64_t m, int64_t n, GemmActivation act, float alpha, float beta) {
    activate_rows<S>(c, ldc, m, n, act, alpha, beta);
  }

  static const UkernelTable* table(core::Isa isa) {
    static const UkernelTable t{isa, MR, NR, &macro, &pack_a, &pack_b, &activate};
    return &t;
  }
};

}  // namespace
}  // namespace kestrel::kernels::cpu
