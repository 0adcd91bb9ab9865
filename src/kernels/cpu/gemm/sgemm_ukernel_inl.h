// The SGEMM macro-kernel, MR x NR register-blocked micro-kernel and packers, written once over a
// vector-ops traits type S (the shared kernels/cpu/vec_ops_*_inl.h VecOps, plus kHasTranspose and,
// when true, transpose_pack; window<kOff> and row_sums for the single-column kernels) and
// instantiated per ISA by sgemm_kernel_*.cc.
//
// Include only from a kernel .cc; the unnamed namespace keeps each ISA's copy private to its
// translation unit (they are compiled with different -m flags and must never be merged).
#pragma once

#include <cstdint>
#include <limits>
#include <numeric>
#include <utility>

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
  static constexpr int kPrefetchFloats = 512;  // gemv_packed_a / _b: how far ahead the weights are fetched

  // Where one tile reads and writes, and what it prefetches for the tiles after it.
  struct TileArgs {
    const float* a;  // A sliver (k rows MR apart)
    const float* b;  // B sliver (k rows ldb apart)
    int64_t ldb;
    float* c;
    const float* c_ahead;  // C of the tile two steps along the row, or null
    bool prefetch_c;       // this tile's C was not prefetched by an earlier tile
    const float* a_next;   // A sliver of the next tile (== a within a row)
    const float* b_next;   // B sliver of the next tile (rows ldb_next apart)
    int64_t ldb_next;
    const float* p_next;  // one 64-byte column of the next B panel (rows ldb apart), or b_next
    bool prefetch_b;      // the k loop prefetches b_next / p_next (B read in place, or a cold packed sliver)
    int m, n;             // valid rows / columns
    int64_t row0, col0;   // offset in the block, for the epilogue
  };

  // How a tile's result is combined and stored, fixed per block so the store is straight-line
  // code. kGeneral: any alpha, beta and epilogue. 0..31: alpha == 1, beta 0 or 1 (kEpiAccum: the
  // later K blocks add onto C), plus the listed epilogue parts (0 is C = A * B).
  static constexpr int kGeneral = -1;
  static constexpr int kModes = 32;
  enum : int { kEpiRowBias = 1, kEpiColBias = 2, kEpiResidual = 4, kEpiClamp = 8, kEpiAccum = 16 };

  static int block_mode(const MacroTile& t) {
    if (t.alpha != 1.f || (t.beta != 0.f && t.beta != 1.f)) return kGeneral;
    int mode = t.beta == 1.f ? kEpiAccum : 0;
    if (!t.last_k) return mode;
    // Other activations run as a pass over the tile after the store.
    if (t.bias_row) mode |= kEpiRowBias;
    if (t.bias_col) mode |= kEpiColBias;
    if (t.residual) mode |= kEpiResidual;
    if (t.activation == GemmActivation::kRelu || t.activation == GemmActivation::kClip) mode |= kEpiClamp;
    return mode;
  }

  // acc[R][NV2] = (first R rows of an A sliver) * (first NV2 vectors of a B sliver) over kc, then
  // the epilogue and a (masked) store of the valid m x n corner. R < MR and NV2 < NV are the edge
  // variants, so a partial tile costs only the rows and vectors it has.
  template <int R, int NV2, int kMode>
  static __attribute__((noinline)) void tile(const MacroTile& t, const TileArgs& g) {
    // Two accumulator arrays: the out-of-line k loop takes its array's address, which keeps that array in memory.
    // With one array for both, the inline loop's 28 accumulators went to the stack after the loop and came back
    // for the store (perf annotate, 14 x 32 at K = 16: a third of the tile's time outside the k loop).
    if (t.kc >= kOutOfLineK) {
      V acc[R][NV2];
      accumulate_out_of_line<R, NV2>(t, g, acc);
      finish<R, NV2, kMode>(t, g, acc);
    } else {
      V acc[R][NV2];
      accumulate<R, NV2>(t, g, acc);
      finish<R, NV2, kMode>(t, g, acc);
    }
  }

  template <int R, int NV2, int kMode>
  static KESTREL_GEMM_INLINE void finish(const MacroTile& t, const TileArgs& g, V (&acc)[R][NV2]) {
    float* c = g.c;
    const int m = g.m, n = g.n;
    if constexpr (kMode == kGeneral) {
      store_general<R, NV2>(t, acc, c, m, n, g.row0, g.col0);
    } else if (m == R && n == NV2 * W) {
      store_fast<R, NV2, kMode, true>(t, acc, c, m, n, g.row0, g.col0);
    } else {
      store_fast<R, NV2, kMode, false>(t, acc, c, m, n, g.row0, g.col0);
    }
  }

  // From this K block depth the k loop runs in its own function, compiled once per tile shape:
  // inlined into each epilogue's tile, GCC 12 kept one of the 12 accumulators of some epilogues
  // on the stack (AVX2 6 x 16: 12 accumulators + 2 B vectors + 1 broadcast of 16 registers),
  // a store and reload per k step on the FMA chain. Column bias + residual (mode 6, transformer
  // MatMuls) ran at half speed: mlp_mixer_tiny 5.7 -> 4.15 ms, vit_tiny -6%. Shallower blocks (the
  // K = 16..64 conv GEMMs, a few hundred cycles a tile) keep the loop inline, where the call and
  // the accumulators' trip through memory would be a real share (the CNNs were within noise).
  static constexpr int64_t kOutOfLineK = 128;

  template <int R, int NV2>
  static __attribute__((noinline)) void accumulate_out_of_line(const MacroTile& t, const TileArgs& g,
                                                               V (&out)[R][NV2]) {
    accumulate<R, NV2>(t, g, out);
  }

  // out = (first R rows of the A sliver) * (first NV2 vectors of the B sliver) over kc.
  template <int R, int NV2>
  static KESTREL_GEMM_INLINE void accumulate(const MacroTile& t, const TileArgs& g, V (&out)[R][NV2]) {
    const float* a = g.a;
    const float* b = g.b;
    const int64_t ldb = g.ldb;
    const float* c = g.c;
    const int m = g.m;
    // Small edge tiles have too few accumulators to hide the FMA latency: they keep kSets
    // independent copies over interleaved k and add them up at the end.
    constexpr int kChains = R * NV2;
    constexpr int kSets = kChains >= 8 ? 1 : kChains >= 4 ? 2 : 4;
    V acc[kSets][R][NV2];
    KESTREL_GEMM_UNROLL(4)
    for (int s = 0; s < kSets; ++s) {
      KESTREL_GEMM_UNROLL(32)
      for (int i = 0; i < R; ++i) {
        KESTREL_GEMM_UNROLL(8)
        for (int v = 0; v < NV2; ++v) acc[s][i][v] = S::zero();
      }
    }
    // The C tile is read (beta) or written only after the k loop; fetch the tile two steps ahead
    // along the row (short k loops finish before memory answers), and this one when no earlier
    // tile did.
    KESTREL_GEMM_UNROLL(32)
    for (int i = 0; i < R; ++i) {
      if (i < m) {
        if (g.prefetch_c) {
          KESTREL_GEMM_UNROLL(8)
          for (int v = 0; v < NV2 * W; v += 16) __builtin_prefetch(c + i * t.ldc + v, 1, 3);
        }
        if (g.c_ahead) {
          KESTREL_GEMM_UNROLL(8)
          for (int v = 0; v < NR; v += 16) __builtin_prefetch(g.c_ahead + i * t.ldc + v, 1, 3);
        }
      }
    }
    // a_next: the A sliver the next tile starts on (itself when it is this one, then the prefetch
    // finds it in L1); one line per k step keeps ahead of the MR floats consumed per step.
    // b_next likewise, for B read in place (strided rows the hardware prefetcher follows badly).
    // p_next spreads the fetch of the next B panel (read in place, from memory) over the tiles of
    // this one instead of leaving it all to the first sweep.
    const float* a_next = g.a_next;
    const float* b_next = g.b_next;
    const float* p_next = g.p_next;
    int64_t k = 0;
    // 8-wide vectors (AVX2): one k step is only 2 x 6 FMAs, so the loop's pointer updates and a
    // prefetch per step take a real share of the front end (Zen 2 dispatches 6 macro-ops a cycle:
    // the 12 FMAs need 6 cycles, the step was ~30 ops). Two steps per iteration, and the A sliver
    // (MR floats a step) fetched once per 64-byte line instead of once per step.
    constexpr int kUnroll = W == 8 ? 2 : 1;
    constexpr int kStep = kUnroll * kSets;
    constexpr int kAPrefetchEvery = W == 8 && MR * 4 * 2 <= 64 ? 2 : 1;
    if (g.prefetch_b) {
      for (; k + kStep <= t.kc; k += kStep) {
        KESTREL_GEMM_UNROLL(8)
        for (int j = 0; j < kStep; ++j) {
          if (j % kAPrefetchEvery == 0) __builtin_prefetch(a_next + (k + j) * MR, 0, 3);
          KESTREL_GEMM_UNROLL(8)
          for (int v = 0; v < NR; v += 16) __builtin_prefetch(b_next + v, 0, 3);
          b_next += g.ldb_next;
          __builtin_prefetch(p_next, 0, 2);
          p_next += g.ldb_next;
          fma_step<R, NV2>(acc[j % kSets], a, b);
          a += MR;
          b += ldb;
        }
      }
    } else {
      // A packed B panel streams well by itself.
      for (; k + kStep <= t.kc; k += kStep) {
        KESTREL_GEMM_UNROLL(8)
        for (int j = 0; j < kStep; ++j) {
          if (j % kAPrefetchEvery == 0) __builtin_prefetch(a_next + (k + j) * MR, 0, 3);
          fma_step<R, NV2>(acc[j % kSets], a, b);
          a += MR;
          b += ldb;
        }
      }
    }
    for (; k < t.kc; ++k) {
      fma_step<R, NV2>(acc[0], a, b);
      a += MR;
      b += ldb;
    }
    KESTREL_GEMM_UNROLL(4)
    for (int s = 1; s < kSets; ++s) {
      KESTREL_GEMM_UNROLL(32)
      for (int i = 0; i < R; ++i) {
        KESTREL_GEMM_UNROLL(8)
        for (int v = 0; v < NV2; ++v) acc[0][i][v] = S::add(acc[0][i][v], acc[s][i][v]);
      }
    }
    KESTREL_GEMM_UNROLL(32)
    for (int i = 0; i < R; ++i) {
      KESTREL_GEMM_UNROLL(8)
      for (int v = 0; v < NV2; ++v) out[i][v] = acc[0][i][v];
    }
  }

  // acc += (R rows of one A step) x (NV2 vectors of one B row).
  template <int R, int NV2>
  static KESTREL_GEMM_INLINE void fma_step(V (&acc)[R][NV2], const float* a, const float* b) {
    V bv[NV2];
    KESTREL_GEMM_UNROLL(8)
    for (int v = 0; v < NV2; ++v) bv[v] = S::load(b + v * W);
    KESTREL_GEMM_UNROLL(32)
    for (int i = 0; i < R; ++i) {
      V av = S::set1(a[i]);
      KESTREL_GEMM_UNROLL(8)
      for (int v = 0; v < NV2; ++v) acc[i][v] = S::fmadd(av, bv[v], acc[i][v]);
    }
  }

  template <int NV2, int kMode, int... Rs>
  static KESTREL_GEMM_INLINE void edge_tile(std::integer_sequence<int, Rs...>, const MacroTile& t, const TileArgs& g) {
    (void)((g.m == Rs + 1 ? (tile<Rs + 1, NV2, kMode>(t, g), true) : false) || ...);
  }

  template <int... Vs>
  static KESTREL_GEMM_INLINE void edge_nv(std::integer_sequence<int, Vs...>, bool plain, const MacroTile& t,
                                          const TileArgs& g) {
    const int nv = (g.n + W - 1) / W;
    (void)((nv == Vs + 1 ? (plain ? edge_tile<Vs + 1, 0>(std::make_integer_sequence<int, MR>(), t, g)
                                  : edge_tile<Vs + 1, kGeneral>(std::make_integer_sequence<int, MR>(), t, g),
                            true)
                         : false) ||
           ...);
  }

  template <int... Ms>
  static KESTREL_GEMM_INLINE void full_tile(std::integer_sequence<int, Ms...>, int mode, const MacroTile& t,
                                            const TileArgs& g) {
    // Bias is per row or per column, never both: those modes are not instantiated.
    (void)((mode == Ms && (Ms & 3) != 3 ? (tile<MR, NV, ((Ms & 3) == 3 ? 0 : Ms)>(t, g), true) : false) || ...);
  }

  // alpha == 1, beta == 0: acc (+ bias) (+ residual) (clamped), stored. kFull: m == R, n == NV2 * W.
  template <int R, int NV2, int kMode, bool kFull>
  static KESTREL_GEMM_INLINE void store_fast(const MacroTile& t, V (&acc)[R][NV2], float* c, int m, int n, int64_t row0,
                                             int64_t col0) {
    constexpr bool kRowBias = kMode & kEpiRowBias, kColBias = kMode & kEpiColBias;
    constexpr bool kRes = kMode & kEpiResidual, kClamp = kMode & kEpiClamp, kAccum = kMode & kEpiAccum;
    V bcol[NV2];
    if constexpr (kColBias) {
      KESTREL_GEMM_UNROLL(8)
      for (int v = 0; v < NV2; ++v)
        bcol[v] = kFull ? S::load(t.bias_col + col0 + v * W) : S::load_n(t.bias_col + col0 + v * W, n - v * W);
    }
    V lo = S::zero(), hi = S::zero();
    if constexpr (kClamp) {
      lo = t.activation == GemmActivation::kClip ? S::set1(t.act_alpha) : S::zero();
      hi =
          t.activation == GemmActivation::kClip ? S::set1(t.act_beta) : S::set1(std::numeric_limits<float>::infinity());
    }
    // Fields of t read once: the vector stores may alias anything, so t's fields would be reloaded after each.
    const int64_t ldc = t.ldc, ldr = t.ldr;
    const bool stream = t.stream_c;
    const float* bias_row = t.bias_row;
    const float* res = kRes ? t.residual + row0 * ldr + col0 : nullptr;
    KESTREL_GEMM_UNROLL(32)
    for (int i = 0; i < R; ++i) {
      if (!kFull && i >= m) break;
      float* crow = c + i * ldc;
      V brow = S::zero();
      if constexpr (kRowBias) brow = S::set1(bias_row[row0 + i]);
      KESTREL_GEMM_UNROLL(8)
      for (int v = 0; v < NV2; ++v) {
        const int nv = n - v * W;
        V x = acc[i][v];
        if constexpr (kAccum) x = S::add(x, kFull ? S::load(crow + v * W) : S::load_n(crow + v * W, nv));
        if constexpr (kRowBias) x = S::add(x, brow);
        if constexpr (kColBias) x = S::add(x, bcol[v]);
        if constexpr (kRes)
          x = S::add(x, kFull ? S::load(res + i * ldr + v * W) : S::load_n(res + i * ldr + v * W, nv));
        if constexpr (kClamp) x = vclamp<S>(x, lo, hi);
        if (kFull) {
          if (stream) {
            S::stream(crow + v * W, x);
          } else {
            S::store(crow + v * W, x);
          }
        } else {
          S::store_n(crow + v * W, x, nv);
        }
      }
    }
  }

  template <int R, int NV2>
  static KESTREL_GEMM_INLINE void store_general(const MacroTile& t, V (&acc)[R][NV2], float* c, int m, int n,
                                                int64_t row0, int64_t col0) {
    const V alpha = S::set1(t.alpha), beta = S::set1(t.beta);
    const bool use_alpha = t.alpha != 1.f;
    const bool use_beta = t.beta != 0.f;
    const bool epi = t.last_k;
    const float* bias_col = epi ? t.bias_col : nullptr;
    const float* bias_row = epi ? t.bias_row : nullptr;
    const int64_t ldc = t.ldc, ldr = t.ldr;
    const float* res = epi && t.residual ? t.residual + row0 * ldr + col0 : nullptr;
    const bool clamp = epi && t.activation != GemmActivation::kNone && gemm_detail::activation_is_clamp(t.activation);
    const V lo = t.activation == GemmActivation::kClip ? S::set1(t.act_alpha) : S::zero();
    const V hi =
        t.activation == GemmActivation::kClip ? S::set1(t.act_beta) : S::set1(std::numeric_limits<float>::infinity());
    V bcol[NV2];
    KESTREL_GEMM_UNROLL(8)
    for (int v = 0; v < NV2; ++v) bcol[v] = bias_col ? S::load_n(bias_col + col0 + v * W, n - v * W) : S::zero();
    KESTREL_GEMM_UNROLL(32)
    for (int i = 0; i < R; ++i) {
      if (i >= m) break;
      float* crow = c + i * ldc;
      V brow = bias_row ? S::set1(bias_row[row0 + i]) : S::zero();
      KESTREL_GEMM_UNROLL(8)
      for (int v = 0; v < NV2; ++v) {
        const int nv = n - v * W;
        if (nv <= 0) break;
        V x = use_alpha ? S::mul(acc[i][v], alpha) : acc[i][v];
        if (use_beta) x = S::fmadd(S::load_n(crow + v * W, nv), beta, x);
        if (bias_col) x = S::add(x, bcol[v]);
        if (bias_row) x = S::add(x, brow);
        if (res) x = S::add(x, S::load_n(res + i * ldr + v * W, nv));
        if (clamp) x = vclamp<S>(x, lo, hi);
        S::store_n(crow + v * W, x, nv);
      }
    }
  }

  static KESTREL_GEMM_INLINE void run_tile(const MacroTile& t, int mode, const float* b_edge, int64_t ir, int64_t jr,
                                           int64_t tile_index) {
    TileArgs g;
    g.m = static_cast<int>(gemm_min<int64_t>(MR, t.mc - ir));
    g.n = static_cast<int>(gemm_min<int64_t>(NR, t.nc - jr));
    g.row0 = ir;
    g.col0 = jr;
    auto b_sliver = [&](int64_t j, const float** p, int64_t* ld) {
      if (b_edge && t.nc - j < NR) {
        *p = b_edge;
        *ld = NR;
      } else {
        *p = t.b + (j / NR) * t.b_sliver_stride;
        *ld = t.b_row_stride;
      }
    };
    g.a = t.a + (ir / MR) * t.a_sliver_stride;
    b_sliver(jr, &g.b, &g.ldb);
    g.c = t.c + ir * t.ldc + jr;
    g.c_ahead = jr + 3 * NR <= t.nc ? g.c + 2 * NR : nullptr;
    g.prefetch_c = jr < 2 * NR;
    // At the end of a row of tiles the next tile starts the next A sliver, back at B sliver 0.
    const bool row_end = jr + NR >= t.nc;
    g.a_next = row_end && ir + MR < t.mc ? g.a + t.a_sliver_stride : g.a;
    g.prefetch_b = t.b_direct;
    if (t.b_direct) {
      b_sliver(row_end ? 0 : jr + NR, &g.b_next, &g.ldb_next);
    } else {
      g.b_next = g.b;
      g.ldb_next = g.ldb;
      if (ir == 0 && t.b_prepacked) {
        // A pre-packed panel's first row of tiles is the first to read each B sliver: weights read
        // once per run come from L3 or memory there. Each such tile fetches the sliver of the next
        // one (the last, the next panel's first sliver); the later rows find the panel in L2. The
        // 7x7 pointwise convs (transposed, W^T as B), 1 thread: MnasNet's 7x7 stage -3% to -5%
        // (12 interleaved rounds, Zen 4); square GEMMs (B packed per call) do not take it.
        const float* next = !row_end ? g.b + t.b_sliver_stride : t.b_next_panel;
        if (next) {
          g.b_next = next;
          g.prefetch_b = true;
        }
      }
    }
    g.p_next = g.b_next;
    if (t.b_direct && t.b_next_panel && tile_index * 16 < t.b_next_panel_cols && g.ldb_next == t.b_row_stride)
      g.p_next = t.b_next_panel + tile_index * 16;
    // Edge tiles only get the plain and general stores (fewer instantiations), and only as many
    // vectors as they have columns.
    if (g.m == MR && g.n > NR - W) {
      full_tile(std::make_integer_sequence<int, kModes>(), mode, t, g);
      if (mode < 0) tile<MR, NV, kGeneral>(t, g);
    } else {
      edge_nv(std::make_integer_sequence<int, NV>(), mode == 0, t, g);
    }
    if (t.last_k && !gemm_detail::activation_is_clamp(t.activation))
      activate_rows<S>(g.c, t.ldc, g.m, g.n, t.activation, t.act_alpha, t.act_beta);
  }

  static void macro(const MacroTile& t) {
    // B read in place cannot be loaded past column nc: copy its last, partial sliver (zero padded).
    const float* b_edge = nullptr;
    if (t.b_direct && t.nc % NR != 0) {
      const int64_t j0 = t.nc / NR * NR;
      copy_rows<NR>(t.b + j0, t.b_row_stride, static_cast<int>(t.nc - j0), t.kc, t.b_edge_buf);
      b_edge = t.b_edge_buf;
    }
    // A sliver outer, B slivers inner: the A sliver stays in L1, the B panel streams from L2, and
    // C is written along its rows (walking C down its columns thrashes L1 sets and the TLB).
    const int mode = block_mode(t);
    int64_t tile_index = 0;
    for (int64_t ir = 0; ir < t.mc; ir += MR) {
      for (int64_t jr = 0; jr < t.nc; jr += NR) run_tile(t, mode, b_edge, ir, jr, tile_index++);
      if (t.col_b) sliver_columns(t, ir);
    }
  }

  // The extra columns of MacroTile (col_b) against the A sliver at row ir of the block, while the
  // sliver is in L1.
  static void sliver_columns(const MacroTile& t, int64_t ir) {
    const float* a = t.a + (ir / MR) * t.a_sliver_stride;
    const int rows = static_cast<int>(gemm_min<int64_t>(MR, t.mc - ir));
    for (int j = 0; j < t.col_n; ++j) {
      V sums[1][NA];
      gemv_slivers<1, 8, false>(t.kc, 0, nullptr, a, 0, t.col_b + j * t.kc, 1, sums);
      alignas(64) float out[NA * W];
      KESTREL_GEMM_UNROLL(4)
      for (int v = 0; v < NA; ++v) S::store(out + v * W, sums[0][v]);
      float* y = t.col_c + ir * t.ldc + j;
      for (int i = 0; i < rows; ++i) y[i * t.ldc] = t.col_accum ? y[i * t.ldc] + out[i] : out[i];
    }
  }

  // Copies kc rows of r valid floats (row k at src + k * ld) into rows of R floats, zero padded.
  template <int R>
  static KESTREL_GEMM_INLINE void copy_rows(const float* src, int64_t ld, int r, int64_t kc, float* dst) {
    for (int64_t k = 0; k < kc; ++k) {
      const float* s = src + k * ld;
      float* d = dst + k * R;
      if (r == R) {
        KESTREL_GEMM_UNROLL(8)
        for (int i = 0; i < R; i += W) S::store_n(d + i, S::load_n(s + i, R - i), R - i);
      } else {
        KESTREL_GEMM_UNROLL(8)
        for (int i = 0; i < R; i += W) S::store_n(d + i, S::load_n(s + i, r - i), R - i);
      }
    }
  }

  // Interleaves r source rows (row i at src + i * ld, contiguous over kc) into dst[k * R + i],
  // zero for i >= r: the transposing half of packing.
  template <int R>
  static KESTREL_GEMM_INLINE void transpose_rows(const float* src, int64_t ld, int r, int64_t kc, float* dst) {
    if constexpr (S::kHasTranspose) {
      S::transpose_pack(src, ld, r, kc, dst, R);
    } else {
      for (int i = 0; i < r; ++i) {
        const float* s = src + i * ld;
        for (int64_t k = 0; k < kc; ++k) dst[k * R + i] = s[k];
      }
      for (int i = r; i < R; ++i)
        for (int64_t k = 0; k < kc; ++k) dst[k * R + i] = 0.f;
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
        copy_rows<MR>(a + i0, lda, mb, kc, d);
      } else {
        transpose_rows<MR>(a + i0 * lda, lda, mb, kc, d);
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
        copy_rows<NR>(b + j0, ldb, nb, kc, d);
      } else {
        // op(B)[k, j] = b[j * ldb + k].
        transpose_rows<NR>(b + j0 * ldb, ldb, nb, kc, d);
      }
    }
  }

  // int8 rows (ldb apart) x per-column scale -> NR-column f32 slivers. Rows are read in order (k
  // outer) so the int8 source streams; the slivers being written stay in L2.
  static void unpack_b_i8(const int8_t* b, int64_t ldb, const float* scale, int64_t kc, int64_t nc, float* dst,
                          int64_t sliver_stride) {
    const int64_t full = nc / NR * NR;
    for (int64_t k = 0; k < kc; ++k) {
      const int8_t* s = b + k * ldb;
      for (int64_t j0 = 0; j0 < full; j0 += NR) {
        float* d = dst + (j0 / NR) * sliver_stride + k * NR;
        KESTREL_GEMM_UNROLL(8)
        for (int v = 0; v < NV; ++v)
          S::store(d + v * W, S::mul(S::load_i8(s + j0 + v * W), S::load(scale + j0 + v * W)));
      }
      if (full < nc) {
        const int nb = static_cast<int>(nc - full);
        float* d = dst + (full / NR) * sliver_stride + k * NR;
        KESTREL_GEMM_UNROLL(8)
        for (int v = 0; v < NV; ++v)
          S::store(d + v * W,
                   S::mul(S::load_i8_n(s + full + v * W, nb - v * W), S::load_n(scale + full + v * W, nb - v * W)));
      }
    }
  }

  // Up to 4 rows of A against int8 B, 4 vectors of columns at a time: 16 accumulators, each B
  // vector widened once for all rows.
  static void gemv_b_i8(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool trans_a, const int8_t* b,
                        int64_t ldb, const float* scale, float* y, int64_t ldy) {
    constexpr int kRows = 4, kVecs = 4, kCols = kVecs * W;
    const int64_t ar = trans_a ? 1 : lda, ak = trans_a ? lda : 1;  // A(i, p) = a[i * ar + p * ak]
    for (int64_t j0 = 0; j0 < n; j0 += kCols) {
      const int nb = static_cast<int>(gemm_min<int64_t>(kCols, n - j0));
      V acc[kRows][kVecs];
      KESTREL_GEMM_UNROLL(4)
      for (int i = 0; i < kRows; ++i) {
        KESTREL_GEMM_UNROLL(4)
        for (int v = 0; v < kVecs; ++v) acc[i][v] = S::zero();
      }
      for (int64_t p = 0; p < k; ++p) {
        const int8_t* bp = b + p * ldb + j0;
        V bv[kVecs];
        if (nb == kCols) {
          KESTREL_GEMM_UNROLL(4)
          for (int v = 0; v < kVecs; ++v) bv[v] = S::load_i8(bp + v * W);
        } else {
          KESTREL_GEMM_UNROLL(4)
          for (int v = 0; v < kVecs; ++v) bv[v] = S::load_i8_n(bp + v * W, nb - v * W);
        }
        KESTREL_GEMM_UNROLL(4)
        for (int i = 0; i < kRows; ++i) {
          if (i >= m) break;
          const V av = S::set1(a[i * ar + p * ak]);
          KESTREL_GEMM_UNROLL(4)
          for (int v = 0; v < kVecs; ++v) acc[i][v] = S::fmadd(av, bv[v], acc[i][v]);
        }
      }
      KESTREL_GEMM_UNROLL(4)
      for (int i = 0; i < kRows; ++i) {
        if (i >= m) break;
        KESTREL_GEMM_UNROLL(4)
        for (int v = 0; v < kVecs; ++v) {
          const int nv = nb - v * W;
          if (nv <= 0) break;
          S::store_n(y + i * ldy + j0 + v * W, S::mul(acc[i][v], S::load_n(scale + j0 + v * W, nv)), nv);
        }
      }
    }
  }

  // Up to 4 rows of A against pre-packed B (slivers of NR columns, k rows of NR floats each): one
  // sliver at a time, NV accumulators per row, the sliver read once for all rows. The K loop is
  // split into two halves with their own accumulators so the FMA chains overlap.
  static void gemv_packed_b(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool trans_a,
                            const float* b, const float* bias, float* y, int64_t ldy) {
    constexpr int kRows = 4;
    const int64_t ar = trans_a ? 1 : lda, ak = trans_a ? lda : 1;  // A(i, p) = a[i * ar + p * ak]
    const int64_t half = k / 2;
    for (int64_t j0 = 0; j0 < n; j0 += NR, b += k * NR) {
      const int nb = static_cast<int>(gemm_min<int64_t>(NR, n - j0));
      V acc[2][kRows][NV];
      KESTREL_GEMM_UNROLL(2)
      for (int h = 0; h < 2; ++h) {
        KESTREL_GEMM_UNROLL(4)
        for (int i = 0; i < kRows; ++i) {
          KESTREL_GEMM_UNROLL(4)
          for (int v = 0; v < NV; ++v) acc[h][i][v] = S::zero();
        }
      }
      for (int64_t p = 0; p < half; ++p) {
        KESTREL_GEMM_UNROLL(2)
        for (int h = 0; h < 2; ++h) {
          const int64_t pp = p + h * half;
          const float* bp = b + pp * NR;
          // Weights streamed once per run come from memory: prefetch ~2 KiB ahead of each half.
          KESTREL_GEMM_UNROLL(4)
          for (int v = 0; v < NR; v += 16) __builtin_prefetch(bp + kPrefetchFloats + v, 0, 0);
          V bv[NV];
          KESTREL_GEMM_UNROLL(4)
          for (int v = 0; v < NV; ++v) bv[v] = S::load(bp + v * W);
          KESTREL_GEMM_UNROLL(4)
          for (int i = 0; i < kRows; ++i) {
            if (i >= m) break;
            const V av = S::set1(a[i * ar + pp * ak]);
            KESTREL_GEMM_UNROLL(4)
            for (int v = 0; v < NV; ++v) acc[h][i][v] = S::fmadd(av, bv[v], acc[h][i][v]);
          }
        }
      }
      if (k % 2) {  // the last k
        const int64_t pp = k - 1;
        const float* bp = b + pp * NR;
        KESTREL_GEMM_UNROLL(4)
        for (int i = 0; i < kRows; ++i) {
          if (i >= m) break;
          const V av = S::set1(a[i * ar + pp * ak]);
          KESTREL_GEMM_UNROLL(4)
          for (int v = 0; v < NV; ++v) acc[1][i][v] = S::fmadd(av, S::load(bp + v * W), acc[1][i][v]);
        }
      }
      KESTREL_GEMM_UNROLL(4)
      for (int i = 0; i < kRows; ++i) {
        if (i >= m) break;
        KESTREL_GEMM_UNROLL(4)
        for (int v = 0; v < NV; ++v) {
          const int nv = nb - v * W;
          if (nv <= 0) break;
          V r = S::add(acc[0][i][v], acc[1][i][v]);
          if (bias) r = S::add(r, S::load_n(bias + j0 + v * W, nv));
          S::store_n(y + i * ldy + j0 + v * W, r, nv);
        }
      }
    }
  }

  // Pre-packed A (slivers of MR rows, k rows of MR floats each) against one column of B (a 1x1
  // conv on a 1x1 plane: squeeze-excite): y[i * ldy] = sum_p A[i, p] * b[p * ldb] (+ bias[i],
  // + r[i * ldr] if given) for i in [0, m), each sliver read once, four at a time sharing each
  // read of b (one sliver with two FMA chains left the latency exposed: 1152 -> 48 took 7.0
  // instead of 4.0 us on Zen 2).
  //
  // Up to kPeriodMaxK, b is first spread into `spread` the way A's k rows lie in a sliver, so each
  // period of kPeriodK k rows (kPeriodV whole vectors) is kPeriodV aligned loads and FMAs: with
  // one load per k row, MR = 14 rows of 16 lanes, 7 in 8 loads crossed a cache line and 30% of
  // the time went to a scalar store of the sums (48 -> 1152 took 3.1 us against oneDNN's 2.7).
  static void gemv_packed_a(int64_t m, int64_t k, const float* a, const float* b, int64_t ldb, const float* bias,
                            const float* r, int64_t ldr, float* y, int64_t ldy) {
    constexpr int kGroup = 4;
    const int64_t kp = k <= kPeriodMaxK ? k / kPeriodK * kPeriodK : 0;
    alignas(64) float spread[kPeriodMaxK * MR];  // spread[p * MR + i] = b[p * ldb] for p < kp, i < MR
    for (int64_t p = 0; p < kp; ++p) {
      const V bv = S::set1(b[p * ldb]);
      KESTREL_GEMM_UNROLL(4)
      for (int v = 0; v < NA; ++v) S::store_n(spread + p * MR + v * W, bv, gemm_min(W, MR - v * W));
    }
    int64_t i0 = 0;
    auto emit = [&](const V* sums, int g, int64_t rows) __attribute__((always_inline)) {
      KESTREL_GEMM_UNROLL(4)
      for (int v = 0; v < NA; ++v) {
        const int nv = static_cast<int>(gemm_min<int64_t>(W, rows - v * W));
        if (nv <= 0) break;
        store_sums(sums[v], nv, i0 + g * MR + v * W, bias, r, ldr, y, ldy);
      }
    };
    for (; i0 + kGroup * MR <= m; i0 += kGroup * MR, a += kGroup * k * MR) {
      V sums[kGroup][NA];
      gemv_slivers<kGroup, 2, true>(k, kp, spread, a, k * MR, b, ldb, sums);
      KESTREL_GEMM_UNROLL(4)
      for (int g = 0; g < kGroup; ++g) emit(sums[g], g, MR);
    }
    for (; i0 < m; i0 += MR, a += k * MR) {
      V sums[1][NA];
      gemv_slivers<1, 8, true>(k, kp, spread, a, 0, b, ldb, sums);
      emit(sums[0], 0, gemm_min<int64_t>(MR, m - i0));
    }
  }

  // y[(i + l) * ldy] = lane l of s (+ bias[i + l], + r[(i + l) * ldr] if given) for l < nv.
  static KESTREL_GEMM_INLINE void store_sums(V s, int nv, int64_t i, const float* bias, const float* r, int64_t ldr,
                                             float* y, int64_t ldy) {
    if (bias) s = S::add(s, S::load_n(bias + i, nv));
    if (r && ldr == 1) s = S::add(s, S::load_n(r + i, nv));
    if (ldy == 1 && (!r || ldr == 1)) {
      S::store_n(y + i, s, nv);
      return;
    }
    alignas(64) float lane[W];
    S::store(lane, s);
    for (int l = 0; l < nv; ++l) y[(i + l) * ldy] = lane[l] + (r && ldr != 1 ? r[(i + l) * ldr] : 0.f);
  }

  // NA vectors cover a sliver's MR rows. A period of kPeriodK k rows of a sliver is kPeriodV whole
  // vectors (14 x 16 lanes: 8 k rows, 7 vectors).
  static constexpr int NA = (MR + W - 1) / W;
  static constexpr int kPeriodFloats = std::lcm(MR, W);
  static constexpr int kPeriodK = kPeriodFloats / MR, kPeriodV = kPeriodFloats / W;
  static constexpr int64_t kPeriodMaxK = 256;  // the spread column: 256 * MR floats on the stack

  // out[v] += vector v of each k row of the period in pacc (kPeriodV vectors); vector v of k row t
  // is the window of W floats at t * MR + v * W, within two neighbouring vectors (S::window).
  template <int... Q>
  static KESTREL_GEMM_INLINE void add_period_rows(const V (&pacc)[kPeriodV], V (&out)[NA],
                                                  std::integer_sequence<int, Q...>) {
    (add_period_row<Q / NA, Q % NA>(pacc, out), ...);
  }
  template <int T, int Vi>
  static KESTREL_GEMM_INLINE void add_period_row(const V (&pacc)[kPeriodV], V (&out)[NA]) {
    constexpr int f = T * MR + Vi * W, j = f / W;
    // Past the period's end (the last k row when W does not divide MR) are lanes no one stores.
    constexpr int hi = j + 1 < kPeriodV ? j + 1 : j;
    out[Vi] = S::add(out[Vi], S::template window<f % W>(pacc[j], pacc[hi]));
  }

  // G packed slivers (k rows of MR floats; a_stride floats apart) times a column b (k values ldb
  // apart): sliver g's MR sums go to out[g]. The first kp k rows (whole periods) against `spread`
  // (b spread as A's k rows are), then the rest with H FMA chains per sliver over interleaved k.
  // kPrefetch: the slivers stream from memory (pre-packed weights).
  template <int G, int H, bool kPrefetch>
  static KESTREL_GEMM_INLINE void gemv_slivers(int64_t k, int64_t kp, const float* spread, const float* a,
                                               int64_t a_stride, const float* b, int64_t ldb, V (&out)[G][NA]) {
    static_assert(G * kPeriodV <= 28, "the period accumulators must fit in registers");
    KESTREL_GEMM_UNROLL(8)
    for (int g = 0; g < G; ++g) {
      KESTREL_GEMM_UNROLL(4)
      for (int v = 0; v < NA; ++v) out[g][v] = S::zero();
    }
    if (kp > 0) {
      V pacc[G][kPeriodV];
      KESTREL_GEMM_UNROLL(8)
      for (int g = 0; g < G; ++g) {
        KESTREL_GEMM_UNROLL(8)
        for (int j = 0; j < kPeriodV; ++j) pacc[g][j] = S::zero();
      }
      for (int64_t f = 0; f < kp * MR; f += kPeriodFloats) {
        KESTREL_GEMM_UNROLL(8)
        for (int j = 0; j < kPeriodV; ++j) {
          const V x = S::load(spread + f + j * W);
          KESTREL_GEMM_UNROLL(8)
          for (int g = 0; g < G; ++g) {
            const float* ap = a + g * a_stride + f + j * W;
            if constexpr (kPrefetch) {
              if (j * W % 16 == 0) __builtin_prefetch(ap + kPrefetchFloats, 0, 0);  // once per 64-byte line
            }
            pacc[g][j] = S::fmadd(S::load(ap), x, pacc[g][j]);
          }
        }
      }
      // Row i of the sliver is float i of each of the period's k rows: add them up in registers
      // (through a store and unaligned loads, which cannot be forwarded, this took 60% of the time).
      KESTREL_GEMM_UNROLL(8)
      for (int g = 0; g < G; ++g) add_period_rows(pacc[g], out[g], std::make_integer_sequence<int, kPeriodK * NA>());
    }
    if (kp == k) return;
    V acc[H][G][NA];
    KESTREL_GEMM_UNROLL(8)
    for (int h = 0; h < H; ++h) {
      KESTREL_GEMM_UNROLL(8)
      for (int g = 0; g < G; ++g) {
        KESTREL_GEMM_UNROLL(4)
        for (int v = 0; v < NA; ++v) acc[h][g][v] = S::zero();
      }
    }
    // A k row is MR floats; a whole vector past it reads into the next k row (lanes not used),
    // except on the last row, which loads only its MR floats.
    auto step = [&](int h, int64_t p, bool last) __attribute__((always_inline)) {
      const V bv = S::set1(b[p * ldb]);
      KESTREL_GEMM_UNROLL(8)
      for (int g = 0; g < G; ++g) {
        const float* ap = a + g * a_stride + p * MR;
        if constexpr (kPrefetch) __builtin_prefetch(ap + kPrefetchFloats, 0, 0);
        KESTREL_GEMM_UNROLL(4)
        for (int v = 0; v < NA; ++v) {
          const V av = (v + 1) * W <= MR || !last ? S::load(ap + v * W) : S::load_n(ap + v * W, MR - v * W);
          acc[h][g][v] = S::fmadd(av, bv, acc[h][g][v]);
        }
      }
    };
    int64_t p = kp;
    for (; p + H < k; p += H) {
      KESTREL_GEMM_UNROLL(8)
      for (int h = 0; h < H; ++h) step(h, p + h, false);
    }
    for (; p < k; ++p) step(0, p, p + 1 == k);
    KESTREL_GEMM_UNROLL(4)
    for (int h = H / 2; h > 0; h /= 2) {
      KESTREL_GEMM_UNROLL(4)
      for (int i = 0; i < h; ++i) {
        KESTREL_GEMM_UNROLL(8)
        for (int g = 0; g < G; ++g) {
          KESTREL_GEMM_UNROLL(4)
          for (int v = 0; v < NA; ++v) acc[i][g][v] = S::add(acc[i][g][v], acc[i + h][g][v]);
        }
      }
    }
    KESTREL_GEMM_UNROLL(8)
    for (int g = 0; g < G; ++g) {
      KESTREL_GEMM_UNROLL(4)
      for (int v = 0; v < NA; ++v) out[g][v] = S::add(out[g][v], acc[0][g][v]);
    }
  }

  // Row-major A (not packed) against one contiguous column x: y[i * ldy] = dot(A[i, :], x)
  // (+ bias[i], + r[i * ldr] if given), A rows lda apart. W rows at a time, their W sums added up
  // in one S::row_sums (a horizontal add per row made 48 -> 1152 take 3.8 us against oneDNN's 2.7).
  static void gemv_rows(int64_t m, int64_t k, const float* a, int64_t lda, const float* x, const float* bias,
                        const float* r, int64_t ldr, float* y, int64_t ldy) {
    const int tail = static_cast<int>(k % W);
    int64_t i0 = 0;
    for (; i0 + W <= m; i0 += W) {
      const float* ar = a + i0 * lda;
      V acc[W];
      KESTREL_GEMM_UNROLL(16)
      for (int i = 0; i < W; ++i) acc[i] = S::zero();
      int64_t p = 0;
      for (; p + W <= k; p += W) {
        const V xv = S::load(x + p);
        KESTREL_GEMM_UNROLL(16)
        for (int i = 0; i < W; ++i) acc[i] = S::fmadd(S::load(ar + i * lda + p), xv, acc[i]);
      }
      if (tail) {
        const V xv = S::load_n(x + p, tail);
        KESTREL_GEMM_UNROLL(16)
        for (int i = 0; i < W; ++i) acc[i] = S::fmadd(S::load_n(ar + i * lda + p, tail), xv, acc[i]);
      }
      store_sums(S::row_sums(acc), W, i0, bias, r, ldr, y, ldy);
    }
    for (; i0 < m; ++i0) {
      const float* ar = a + i0 * lda;
      V acc0 = S::zero(), acc1 = S::zero();
      int64_t p = 0;
      for (; p + 2 * W <= k; p += 2 * W) {
        acc0 = S::fmadd(S::load(ar + p), S::load(x + p), acc0);
        acc1 = S::fmadd(S::load(ar + p + W), S::load(x + p + W), acc1);
      }
      for (; p + W <= k; p += W) acc0 = S::fmadd(S::load(ar + p), S::load(x + p), acc0);
      if (tail) acc1 = S::fmadd(S::load_n(ar + p, tail), S::load_n(x + p, tail), acc1);
      y[i0 * ldy] = S::reduce_add(S::add(acc0, acc1)) + (bias ? bias[i0] : 0.f) + (r ? r[i0 * ldr] : 0.f);
    }
  }

  static void activate(float* c, int64_t ldc, int64_t m, int64_t n, GemmActivation act, float alpha, float beta) {
    activate_rows<S>(c, ldc, m, n, act, alpha, beta);
  }

  static const UkernelTable* table(core::Isa isa) {
    static const UkernelTable t{isa,          MR,         NR,             W,              &macro,     &pack_a,   &pack_b,
                                &unpack_b_i8, &gemv_b_i8, &gemv_packed_b, &gemv_packed_a, &gemv_rows, &activate};
    return &t;
  }
};

}  // namespace
}  // namespace kestrel::kernels::cpu
