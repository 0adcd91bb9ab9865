// Channel-blocked depthwise convolution written once over a vector-ops traits type S (depthwise_inl.h's
// contract plus transpose(V[W]), an in-register W x W transpose). A block of W = S::kWidth channels is transposed into an
// interleaved, zero-padded strip [row][col][W] so one vector holds one pixel of W channels: every tap is then one
// full-width FMA whatever the plane size (a 7x7 plane wastes no lanes on row ends), and the weights are one vector
// per tap. The results are transposed back to NCHW with bias, residual and activation on contiguous plane vectors.
#pragma once

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/cpu/conv/depthwise.h"
#include "kernels/cpu/conv/depthwise_inl.h"

namespace kestrel::kernels::cpu::conv_detail {
namespace {

// y = act(x) for the activations with_activation does not give the fused kernels their own copy for; out of line,
// one call per output vector.
template <class S>
[[gnu::noinline]] typename S::V activation_call(GemmActivation kind, float alpha, float beta, typename S::V x) {
  typename S::V y = x;
  with_activation<S>(kind, alpha, beta, [&](auto act) { y = act(x); });
  return y;
}

// As with_activation, for kernels whose whole loop nest is instantiated inside f (the plane-direct depthwise, the
// stem): copies only for one clamp (None, Relu, Clip: NaN passes through), HardSwish and SiLU, the activations these
// convolutions carry in the shared models, and on AVX-512 bf16 math's SiLU (with_silu); the others (LeakyRelu,
// HardSigmoid, Sigmoid, Gelu, Tanh) go through activation_call. Ten copies, each twice (streaming stores or not), made
// depthwise_avx512.cc 9 MB of code and 22 minutes of compile.
template <class S, class F>
void with_fused_activation(GemmActivation kind, float alpha, float beta, F f) {
  using V = typename S::V;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  switch (kind) {
    case GemmActivation::kNone:
    case GemmActivation::kRelu:
    case GemmActivation::kClip: {
      const V lo = S::set1(kind == GemmActivation::kClip ? alpha : kind == GemmActivation::kRelu ? 0.f : -kInf);
      const V hi = S::set1(kind == GemmActivation::kClip ? beta : kInf);
      return f([=](V x) { return vclamp<S>(x, lo, hi); });
    }
    case GemmActivation::kHardSwish:
      return f([](V x) { return vhard_swish<S>(x); });
    case GemmActivation::kSilu:
    case GemmActivation::kSiluBf16:
      return with_silu<S>(kind, f);
    default:
      return f([=](V x) { return activation_call<S>(kind, alpha, beta, x); });
  }
}

// Output pixels [ox0, ox0 + NB) of one row: acc_i = sum_t w[t] * strip[tap t of pixel i].
template <class S, int K, int s, int NB>
inline void dw_block_pixels(const float* row0, int64_t lp, const float* w, float* out) {
  using V = typename S::V;
  constexpr int W = S::kWidth;
  V acc[NB];
  for (int i = 0; i < NB; ++i) acc[i] = S::zero();
  for (int ky = 0; ky < K; ++ky) {
    const float* r = row0 + ky * lp * W;
    for (int kx = 0; kx < K; ++kx) {
      const V wv = S::load(w + (ky * K + kx) * W);
      for (int i = 0; i < NB; ++i) acc[i] = S::fmadd(wv, S::load(r + (i * s + kx) * W), acc[i]);
    }
  }
  for (int i = 0; i < NB; ++i) S::store(out + i * W, acc[i]);
}

template <class S, int K, int s>
void dw_block_compute(const DepthwiseBlockArgs& a, int64_t rows_out, int64_t lp, const float* strip, const float* w,
                      float* out) {
  constexpr int W = S::kWidth;
  constexpr int NB = W == 1 ? 4 : (K == 3 ? 6 : 4);
  for (int64_t r = 0; r < rows_out; ++r) {
    const float* row0 = strip + r * s * lp * W;
    float* o = out + r * a.ow * W;
    int64_t ox = 0;
    for (; ox + NB <= a.ow; ox += NB) dw_block_pixels<S, K, s, NB>(row0 + ox * s * W, lp, w, o + ox * W);
    for (; ox < a.ow; ++ox) dw_block_pixels<S, K, s, 1>(row0 + ox * s * W, lp, w, o + ox * W);
  }
}

// Input rows [oy0 * s - pad_top, ...) of channels [c0, c0 + nc) into the strip, W lanes per pixel (lanes past nc
// repeat the last channel), zero in the padding: pixel (row r, column j) at strip + r * rs + j * ps (rs 0: lp * ps).
template <class S>
void pack_strip(const DepthwiseBlockArgs& a, int64_t c0, int64_t nc, int64_t oy0, int64_t rows_in, int64_t lp,
                float* strip, int64_t ps, int64_t rs = 0) {
  if (rs == 0) rs = lp * ps;
  using V = typename S::V;
  constexpr int W = S::kWidth;
  const int64_t ihw = a.in_plane();
  int64_t row_off[W];
  for (int l = 0; l < W; ++l) row_off[l] = std::min<int64_t>(l, nc - 1) * ihw;
  const float* xb = a.x + c0 * ihw;
  const int64_t x_lo = std::min(a.pad_left, lp), x_hi = std::clamp(a.pad_left + a.iw, x_lo, lp);
  V v[W];
  const int64_t iy0 = oy0 * a.stride - a.pad_top;  // input row of strip row 0
  if (x_lo == a.pad_left && x_hi == a.pad_left + a.iw && a.iw < 4 * W) {
    // Whole input rows, narrow planes: the valid rows are one run of each plane, so the transposes take W pixels
    // at a time across row ends (7x7: 4 transposes per channel block instead of 7; 14x14: 13 instead of 14).
    const int64_t r_lo = std::clamp<int64_t>(-iy0, 0, rows_in), r_hi = std::clamp<int64_t>(a.ih - iy0, r_lo, rows_in);
    for (int64_t r = 0; r < rows_in; ++r) {
      float* d = strip + r * rs;
      if (r < r_lo || r >= r_hi) {
        for (int64_t j = 0; j < lp; ++j) S::store(d + j * ps, S::zero());
        continue;
      }
      for (int64_t j = 0; j < x_lo; ++j) S::store(d + j * ps, S::zero());
      for (int64_t j = x_hi; j < lp; ++j) S::store(d + j * ps, S::zero());
    }
    const int64_t iw = a.iw, count = (r_hi - r_lo) * iw, gap = rs - iw * ps;
    const float* xr = xb + (iy0 + r_lo) * iw;
    float* d = strip + r_lo * rs + x_lo * ps;    // pixel p's place; a row end skips the padding columns
    int64_t left = iw;                           // pixels left in the current row
    for (int64_t p = 0; p < count; p += W) {
      const int n = count - p < W ? static_cast<int>(count - p) : W;
      for (int l = 0; l < W; ++l) v[l] = S::load_n(xr + row_off[l] + p, n);
      S::transpose(v);
      for (int q = 0; q < n; ++q) {
        S::store(d, v[q]);
        d += ps;
        if (--left == 0) {
          d += gap;
          left = iw;
        }
      }
    }
    return;
  }
  for (int64_t r = 0; r < rows_in; ++r) {
    float* d = strip + r * rs;
    const int64_t iy = oy0 * a.stride + r - a.pad_top;
    if (iy < 0 || iy >= a.ih) {
      for (int64_t j = 0; j < lp; ++j) S::store(d + j * ps, S::zero());
      continue;
    }
    const float* xr = xb + iy * a.iw - a.pad_left;
    for (int64_t j = 0; j < x_lo; ++j) S::store(d + j * ps, S::zero());
    // W columns of W channels at a time: W row loads, one in-register transpose, W stores.
    for (int64_t j = x_lo; j < x_hi; j += W) {
      const int n = x_hi - j < W ? static_cast<int>(x_hi - j) : W;
      for (int l = 0; l < W; ++l) v[l] = S::load_n(xr + row_off[l] + j, n);
      S::transpose(v);
      for (int q = 0; q < n; ++q) S::store(d + (j + q) * ps, v[q]);
    }
    for (int64_t j = x_hi; j < lp; ++j) S::store(d + j * ps, S::zero());
  }
}

// One whole output vector; non-temporal when st.on (DepthwiseBlockArgs::stream) and p is vector-aligned. A run-time
// flag (one predictable branch per vector): as a type it doubled every kernel instantiated under it.
struct StreamIf {
  bool on;
};
template <class S>
inline void store_out(float* p, typename S::V v, StreamIf st) {
  if (st.on && (reinterpret_cast<uintptr_t>(p) & (sizeof(float) * S::kWidth - 1)) == 0) {
    S::stream(p, v);
    return;
  }
  S::store(p, v);
}

// out[pixel][W] (pixels [0, count) of output rows from oy0) back to NCHW channels [c0, c0 + nc): W pixels of W
// channels per transpose, then bias, residual and activation on contiguous plane vectors. `out` must hold W pixels
// past `count` (whole-vector loads).
template <class S, class F>
void unpack_out(const DepthwiseBlockArgs& a, const float* out, int64_t count, int64_t c0, int64_t nc, int64_t oy0,
                StreamIf st, F act) {
  using V = typename S::V;
  constexpr int W = S::kWidth;
  const int64_t ohw = a.oh * a.ow;
  V v[W];
  for (int64_t p = 0; p < count; p += W) {
    const int n = count - p < W ? static_cast<int>(count - p) : W;
    for (int q = 0; q < W; ++q) v[q] = S::load(out + (p + q) * W);
    S::transpose(v);
    for (int64_t l = 0; l < nc; ++l) {
      const int64_t at = (c0 + l) * ohw + oy0 * a.ow + p;
      V r = a.bias ? S::add(v[l], S::set1(a.bias[c0 + l])) : v[l];
      if (a.residual) r = S::add(r, S::load_n(a.residual + at, n));
      if (n == W) {
        store_out<S>(a.y + at, act(r), st);
      } else {
        S::store_n(a.y + at, act(r), n);
      }
    }
  }
}

// transpose_out (depthwise.h): per block of W channels, W pixels at a time (rows past `pixels` are not read).
template <class S>
void transpose_out(const TransposeOutArgs& a, int64_t c0, int64_t c1) {
  using V = typename S::V;
  constexpr int W = S::kWidth;
  const int64_t plane = a.plane ? a.plane : a.pixels;
  with_activation<S>(a.activation, a.act_alpha, a.act_beta, [&](auto act) {
    V v[W];
    for (int64_t cb = c0; cb < c1; cb += W) {
      const int nc = c1 - cb < W ? static_cast<int>(c1 - cb) : W;
      for (int64_t p = 0; p < a.pixels; p += W) {
        const int n = a.pixels - p < W ? static_cast<int>(a.pixels - p) : W;
        const float* src = a.ct + p * a.ldc + (cb - c0);
        for (int q = 0; q < W; ++q)
          v[q] = q >= n ? S::zero() : nc == W ? S::load(src + q * a.ldc) : S::load_n(src + q * a.ldc, nc);
        S::transpose(v);
        for (int l = 0; l < nc; ++l) {
          const int64_t at = (cb + l) * plane + p;
          V r = a.bias ? S::add(v[l], S::set1(a.bias[cb + l])) : v[l];
          if (n == W) {
            if (a.residual) r = S::add(r, S::load(a.residual + at));
            S::store(a.y + at, act(r));
          } else {
            if (a.residual) r = S::add(r, S::load_n(a.residual + at, n));
            S::store_n(a.y + at, act(r), n);
          }
        }
      }
    }
  });
}

// Plane-direct depthwise for planes at least a vector wide: at stride 1 each channel's input rows are copied
// zero-padded into the scratch (dw_direct_channel) or, for planes past kDirectCopyMaxPlaneBytes, read in place
// (dw_inplace_channel); stride 2 reads them in place with in-lane shuffles (dw_inplace_channel). W outputs of one row
// are one vector. No transposes in or out, and the epilogue runs on the accumulators; only the last vector of a row has
// idle lanes.
constexpr int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// NR output rows x NX vectors at column ox0 of the zero-padded rows:
// acc += w[tap] * row[(r + ky) * rs + kx + ox0 + i * W].
template <class S, int K, int NR, int NX, class F>
inline void dw_direct_tile(const float* rows, int64_t rs, const float* wk, float bias, int64_t ox0, int64_t ow,
                           const float* res, float* y, int64_t ld, StreamIf stream, F act) {
  using V = typename S::V;
  constexpr int W = S::kWidth;
  V acc[NR][NX];
  for (int r = 0; r < NR; ++r)
    for (int i = 0; i < NX; ++i) acc[r][i] = S::set1(bias);
  for (int ky = 0; ky < K; ++ky)
    for (int kx = 0; kx < K; ++kx) {
      const V wv = S::set1(wk[ky * K + kx]);
      for (int r = 0; r < NR; ++r) {
        const float* src = rows + (r + ky) * rs + kx + ox0;
        for (int i = 0; i < NX; ++i) acc[r][i] = S::fmadd(wv, S::load(src + i * W), acc[r][i]);
      }
    }
  for (int r = 0; r < NR; ++r)
    for (int i = 0; i < NX; ++i) {
      const int64_t ox = ox0 + i * W, at = r * ld + ox;
      if (ox + W <= ow) {
        V v = acc[r][i];
        if (res) v = S::add(v, S::load(res + at));
        store_out<S>(y + at, act(v), stream);
      } else {
        const int n = static_cast<int>(ow - ox);
        V v = acc[r][i];
        if (res) v = S::add(v, S::load_n(res + at, n));
        S::store_n(y + at, act(v), n);
      }
    }
}

// A row of ow outputs as tiles of 4 vectors, the rest (up to 4 vectors) as one tile: tile(ox, nx) with nx an
// std::integral_constant. Lone 1-vector tiles reload each input row K times for K FMAs (AVX-512, a 112-wide
// stride-1 row as 4 + 3 vectors instead of 4 + 2 + 1, 32 channels: 116 -> 108 us in one pair of runs, within noise
// in the next).
template <int W, class T>
inline void for_row_tiles(int64_t ow, T tile) {
  int64_t ox = 0;
  for (; ox + 4 * W <= ow; ox += 4 * W) tile(ox, std::integral_constant<int, 4>{});
  if (ox + 3 * W < ow) {
    tile(ox, std::integral_constant<int, 4>{});
  } else if (ox + 2 * W < ow) {
    tile(ox, std::integral_constant<int, 3>{});
  } else if (ox + W < ow) {
    tile(ox, std::integral_constant<int, 2>{});
  } else if (ox < ow) {
    tile(ox, std::integral_constant<int, 1>{});
  }
}

template <class S, int K, int NR, class F>
inline void dw_direct_row(const float* rows, int64_t rs, const float* wk, float bias, int64_t ow, const float* res,
                          float* y, int64_t ld, StreamIf stream, F act) {
  for_row_tiles<S::kWidth>(ow, [&](int64_t ox, auto nx) {
    dw_direct_tile<S, K, NR, decltype(nx)::value>(rows, rs, wk, bias, ox, ow, res, y, ld, stream, act);
  });
}

// Stride 1 only (stride 2 reads the input in place: dw_inplace_channel).
template <class S, int K, class F>
void dw_direct_channel(const DepthwiseBlockArgs& a, int64_t ch, const float* wk, int64_t oy0, int64_t oy1, StreamIf st,
                       F act) {
  constexpr int W = S::kWidth;
  const int64_t rows_in = oy1 - oy0 - 1 + K, owr = round_up(a.ow, W);
  const int64_t rs = owr + round_up(K - 1, W);  // padded columns [0, rs)
  float* strip = a.scratch;
  const float* xc = a.x + ch * a.in_plane();
  for (int64_t r = 0; r < rows_in; ++r) {
    const int64_t iy = oy0 + r - a.pad_top;
    float* d = strip + r * rs;
    if (iy < 0 || iy >= a.ih) {
      for (int64_t j = 0; j < rs; j += W) S::store(d + j, S::zero());
      continue;
    }
    // Padded column j is input column j - pad_left. Whole-vector stores only: a load that spans a recent masked or
    // partial store cannot be forwarded and stalls (badly on Zen).
    const float* xr = xc + iy * a.iw;
    const int64_t lo = a.pad_left, hi = a.pad_left + a.iw;
    auto padded = [&](int64_t j) {
      if (j >= lo && j + W <= hi) return S::load(xr + (j - lo));
      if (j + W <= lo || j >= hi) return S::zero();
      const int l0 = static_cast<int>(std::max<int64_t>(lo - j, 0)), l1 = static_cast<int>(std::min<int64_t>(hi - j, W));
      return S::load_lanes(xr + (j - lo), l0, l1);  // lanes below l0 are never read
    };
    for (int64_t j = 0; j < rs; j += W) S::store(d + j, padded(j));
  }
  const float bias = a.bias ? a.bias[ch] : 0.f;
  const int64_t ohw = a.oh * a.ow;
  const float* res = a.residual ? a.residual + ch * ohw : nullptr;
  float* y = a.y + ch * ohw;
  int64_t oy = oy0;
  for (; oy + 2 <= oy1; oy += 2)
    dw_direct_row<S, K, 2>(strip + (oy - oy0) * rs, rs, wk, bias, a.ow, res ? res + oy * a.ow : nullptr, y + oy * a.ow,
                           a.ow, st, act);
  if (oy < oy1)
    dw_direct_row<S, K, 1>(strip + (oy - oy0) * rs, rs, wk, bias, a.ow, res ? res + oy * a.ow : nullptr, y + oy * a.ow,
                           a.ow, st, act);
}

// Stride-1 plane-direct rows read straight from the input plane (no scratch copy): NR output rows x NX vectors at
// column ox0; tap (ky, kx) of output row r reads input row rows[r + ky] (null: a padding row) at columns
// ox0 + kx - pad_left + i.
template <class S>
inline typename S::V load_padded(const float* xr, int64_t iw, int64_t col) {
  constexpr int W = S::kWidth;
  if (col >= 0 && col + W <= iw) return S::load(xr + col);
  if (col + W <= 0 || col >= iw) return S::zero();
  const int lo = col < 0 ? static_cast<int>(-col) : 0, hi = col + W > iw ? static_cast<int>(iw - col) : W;
  return S::load_lanes(xr + col, lo, hi);  // lanes outside [lo, hi) are never read
}
// The lane mask of load_padded at column col (lanes inside [0, iw)), for loads at the same column of many rows.
template <class S>
inline typename S::M padded_lanes(int64_t iw, int64_t col) {
  constexpr int W = S::kWidth;
  return S::lanes(static_cast<int>(std::clamp<int64_t>(-col, 0, W)),
                  static_cast<int>(std::clamp<int64_t>(iw - col, 0, W)));
}

// kInside: every column read is inside the plane (plain loads); else kMasks: the lanes of each load from mk
// ([K][NX]: tap column kx, vector i; computed once by the caller for tiles that start at the same column), or
// load_padded's own mask per load.
template <class S, int K, int NR, int NX, bool kInside, class F, bool kMasks = false>
inline void dw_s1_tile(const float* const* rows, int64_t iw, int64_t pl, const float* wk, float bias, int64_t ox0,
                       int64_t ow, const float* res, float* y, StreamIf stream, F act,
                       const typename S::M* mk = nullptr) {
  using V = typename S::V;
  constexpr int W = S::kWidth;
  V acc[NR][NX];
#pragma GCC unroll 16
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 4
    for (int i = 0; i < NX; ++i) acc[r][i] = S::set1(bias);
#pragma GCC unroll 20
  for (int ri = 0; ri < NR - 1 + K; ++ri) {
    const float* xr = rows[ri];
    if (!xr) continue;
#pragma GCC unroll 5
    for (int kx = 0; kx < K; ++kx) {
      V in[NX];
#pragma GCC unroll 4
      for (int i = 0; i < NX; ++i) {
        const int64_t col = ox0 + i * W + kx - pl;
        if constexpr (kInside) {
          in[i] = S::load(xr + col);
        } else if constexpr (kMasks) {
          in[i] = S::load_masked(xr + col, mk[kx * NX + i]);
        } else {
          in[i] = load_padded<S>(xr, iw, col);
        }
      }
#pragma GCC unroll 16
      for (int r = 0; r < NR; ++r) {
        const int ky = ri - r;
        if (ky < 0 || ky >= K) continue;
        const V wv = S::set1(wk[ky * K + kx]);
#pragma GCC unroll 4
        for (int i = 0; i < NX; ++i) acc[r][i] = S::fmadd(wv, in[i], acc[r][i]);
      }
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 4
    for (int i = 0; i < NX; ++i) {
      const int64_t ox = ox0 + i * W, at = r * ow + ox;
      V v = acc[r][i];
      if (ox + W <= ow) {
        if (res) v = S::add(v, S::load(res + at));
        store_out<S>(y + at, act(v), stream);
      } else {
        const int n = static_cast<int>(ow - ox);
        if (res) v = S::add(v, S::load_n(res + at, n));
        S::store_n(y + at, act(v), n);
      }
    }
}

template <class S, int K, int NR, int NX, class F>
inline void dw_s1_tile_any(const float* const* rows, int64_t iw, int64_t pl, const float* wk, float bias, int64_t ox0,
                           int64_t ow, const float* res, float* y, StreamIf stream, F act) {
  constexpr int W = S::kWidth;
  if (ox0 - pl >= 0 && ox0 + NX * W + K - 1 - pl <= iw) {
    dw_s1_tile<S, K, NR, NX, true>(rows, iw, pl, wk, bias, ox0, ow, res, y, stream, act);
  } else {
    dw_s1_tile<S, K, NR, NX, false>(rows, iw, pl, wk, bias, ox0, ow, res, y, stream, act);
  }
}

template <class S, int K, int NR, class F>
inline void dw_s1_row(const DepthwiseBlockArgs& a, const float* xc, const float* wk, float bias, int64_t oy,
                      const float* res, float* y, StreamIf st, F act) {
  const int64_t ih = a.ih, iw = a.iw, ow = a.ow, pl = a.pad_left, iy0 = oy - a.pad_top;
  const float* rows[NR - 1 + K];
  for (int ri = 0; ri < NR - 1 + K; ++ri) rows[ri] = iy0 + ri >= 0 && iy0 + ri < ih ? xc + (iy0 + ri) * iw : nullptr;
  for_row_tiles<S::kWidth>(ow, [&](int64_t ox, auto nx) {
    dw_s1_tile_any<S, K, NR, decltype(nx)::value>(rows, iw, pl, wk, bias, ox, ow, res, y, st, act);
  });
}

// Stride-2 plane-direct rows read in place: for W outputs from column ox0, tap kx reads input columns
// base + kx + 2i (base = 2 * ox0 - pad_left), the even (kx even) or odd (kx odd) elements of the two vectors at
// base + (kx & ~1). Those are split with in-lane shuffles only, so every tap and the accumulators hold the outputs
// in the lane order P of S::deinterleave_shuffled; one S::unshuffle per output vector restores it. NR output rows
// share their input rows (row 2 * oy + 1 feeds both oy and oy + 1). At the plane's edges (!kInside) load j of a row
// (columns base + (j & ~1) + (j & 1) * W) takes the lanes mk[j], the same for every row.
template <class S, int K, int NR, bool kInside>
inline void dw_s2_vector(const float* const* rows, const typename S::M* mk, const float* wk, float bias, int64_t base,
                         typename S::V* acc) {
  using V = typename S::V;
  constexpr int W = S::kWidth, R = 2 * (NR - 1) + K;
#pragma GCC unroll 2
  for (int r = 0; r < NR; ++r) acc[r] = S::set1(bias);
#pragma GCC unroll 9
  for (int ri = 0; ri < R; ++ri) {
    const float* xr = rows[ri];
    if (!xr) continue;  // a padding row
    V tap[K + 1];
#pragma GCC unroll 3
    for (int t = 0; t < K; t += 2) {
      const V lo = kInside ? S::load(xr + base + t) : S::load_masked(xr + base + t, mk[t]);
      const V hi = kInside ? S::load(xr + base + t + W) : S::load_masked(xr + base + t + W, mk[t + 1]);
      S::deinterleave_shuffled(lo, hi, tap[t], tap[t + 1]);
    }
#pragma GCC unroll 2
    for (int r = 0; r < NR; ++r) {
      const int ky = ri - 2 * r;
      if (ky < 0 || ky >= K) continue;
#pragma GCC unroll 5
      for (int kx = 0; kx < K; ++kx) acc[r] = S::fmadd(S::set1(wk[ky * K + kx]), tap[kx], acc[r]);
    }
  }
}

template <class S, int K, int NR, class F>
inline void dw_s2_rows(const DepthwiseBlockArgs& a, const float* xc, const float* wk, float bias, int64_t oy,
                       const float* res, float* y, StreamIf st, F act) {
  using V = typename S::V;
  constexpr int W = S::kWidth, R = 2 * (NR - 1) + K;
  const int64_t ih = a.ih, iw = a.iw, ow = a.ow, pl = a.pad_left, iy0 = 2 * oy - a.pad_top;
  const float* rows[R];
  for (int ri = 0; ri < R; ++ri) rows[ri] = iy0 + ri >= 0 && iy0 + ri < ih ? xc + (iy0 + ri) * iw : nullptr;
  for (int64_t ox0 = 0; ox0 < ow; ox0 += W) {
    V acc[NR];
    const int64_t base = 2 * ox0 - pl;
    // The loads reach columns [base, base + (K - 1) / 2 * 2 + 2W).
    if (base >= 0 && base + (K - 1) / 2 * 2 + 2 * W <= iw) {
      dw_s2_vector<S, K, NR, true>(rows, nullptr, wk, bias, base, acc);
    } else {
      typename S::M mk[K + 1];
      for (int t = 0; t < K; t += 2) {
        mk[t] = padded_lanes<S>(iw, base + t);
        mk[t + 1] = padded_lanes<S>(iw, base + t + W);
      }
      dw_s2_vector<S, K, NR, false>(rows, mk, wk, bias, base, acc);
    }
#pragma GCC unroll 2
    for (int r = 0; r < NR; ++r) {
      const int64_t at = r * ow + ox0;
      V v = S::unshuffle(acc[r]);
      if (ox0 + W <= ow) {
        if (res) v = S::add(v, S::load(res + at));
        store_out<S>(y + at, act(v), st);
      } else {
        const int n = static_cast<int>(ow - ox0);
        if (res) v = S::add(v, S::load_n(res + at, n));
        S::store_n(y + at, act(v), n);
      }
    }
  }
}

// Output rows [oy0, oy1) of channel ch read in place from the input, two rows at a time: stride 1 (dw_s1_row) or 2
// (dw_s2_rows).
template <class S, int K, int STRIDE, class F>
void dw_inplace_channel(const DepthwiseBlockArgs& a, int64_t ch, const float* wk, int64_t oy0, int64_t oy1, StreamIf st,
                        F act) {
  const float bias = a.bias ? a.bias[ch] : 0.f;
  const int64_t ohw = a.oh * a.ow;
  const float* xc = a.x + ch * a.in_plane();
  const float* res = a.residual ? a.residual + ch * ohw : nullptr;
  float* y = a.y + ch * ohw;
  auto rows = [&](auto nr, int64_t oy) {
    constexpr int NR = decltype(nr)::value;
    const float* r = res ? res + oy * a.ow : nullptr;
    if constexpr (STRIDE == 1) {
      dw_s1_row<S, K, NR>(a, xc, wk, bias, oy, r, y + oy * a.ow, st, act);
    } else {
      dw_s2_rows<S, K, NR>(a, xc, wk, bias, oy, r, y + oy * a.ow, st, act);
    }
  };
  int64_t oy = oy0;
  for (; oy + 2 <= oy1; oy += 2) rows(std::integral_constant<int, 2>{}, oy);
  if (oy < oy1) rows(std::integral_constant<int, 1>{}, oy);
}

// Stem: dense 3x3 stride-2 convolution over a.cg (few) input channels into a.mg output channels, output rows
// [oy0, oy1). Each input channel's rows are split into even and odd columns as in the stride-2 direct depthwise
// layout, so a tap of W consecutive outputs is one load; one load then feeds MB output channels (weights tap-major
// [C * 9][M], broadcast from memory), which keeps the FMA units busy where im2col + GEMM (K = 27) was bound by the
// copy. A tile is MB output channels x NX output vectors at the offsets src (input, in the split rows) / dst (output
// plane), lanes[i] of vector i in the output (fewer than W at a row's end); tap t of input channel c reads the split
// rows at toff[c * 9 + t].
template <class S, int MB, int NX, class F>
inline void stem_tile(const DepthwiseBlockArgs& a, const float* rows, const int64_t* toff, const int64_t* src,
                      const int64_t* dst, const int* lanes, int64_t m0, StreamIf st, F act) {
  using V = typename S::V;
  constexpr int W = S::kWidth;
  V acc[MB][NX];
  // The loops over the accumulators unroll fully (here and in the store), so they stay in registers: left as
  // loops, the store's indexed acc[mb][i] kept them on the stack.
#pragma GCC unroll 8
  for (int mb = 0; mb < MB; ++mb) {
    const V b = S::set1(a.bias ? a.bias[m0 + mb] : 0.f);
#pragma GCC unroll 8
    for (int i = 0; i < NX; ++i) acc[mb][i] = b;
  }
  if (!st.on) {
    // A column step (stem_columns) writes every output plane, 32-64 store streams, more than the hardware
    // prefetcher follows: in a model (output not in cache) mobilenet_v2's stem took 0.8-0.9 ms against 0.52 in the
    // warm benchmark (AMD Zen 2). Each tile fetches its MB planes' lines 1 KiB ahead (`kestrel bench --profile`:
    // 0.52-0.68 ms; 0.5 KiB and 4 KiB a little slower). Past a plane's end the address is only a hint (prefetches
    // do not fault). Streaming stores need no fetch.
    constexpr int64_t kAhead = 256;  // floats (1 KiB): past the largest tile (NX * W = 96 on AVX-512)
    const int64_t plane = a.oh * a.ow;
    for (int mb = 0; mb < MB; ++mb)
      for (int off = 0; off < NX * W; off += 16)
        __builtin_prefetch(a.y + (m0 + mb) * plane + dst[0] + kAhead + off, 1, 3);
  }
  const float* w = a.w + m0;  // tap t's weight for channel m0 + mb at w[t * a.mg + mb]
  const int64_t taps = a.cg * 9;
  if constexpr (W == 8) {
    // 16 registers: the NX input vectors stay, each weight is broadcast just before its NX FMAs (MB x NX
    // accumulators + NX + 1 <= 16). One tap per iteration: with the 27 taps unrolled (loops over c, ky, kx)
    // GCC 12 hoisted broadcasts and kept two accumulators on the stack (perf annotate on Zen 2: 3 -> 64 at 224
    // ran at 46 GFLOP/s).
    for (int64_t t = 0; t < taps; ++t, w += a.mg) {
      const float* tap = rows + toff[t];
      V v[NX];
      for (int i = 0; i < NX; ++i) v[i] = S::load(tap + src[i]);
      for (int mb = 0; mb < MB; ++mb) {
        const V wv = S::set1(w[mb]);
        for (int i = 0; i < NX; ++i) acc[mb][i] = S::fmadd(wv, v[i], acc[mb][i]);
      }
    }
  } else {
    for (int64_t t = 0; t < taps; ++t, w += a.mg) {
      const float* tap = rows + toff[t];
      V wv[MB];
      for (int mb = 0; mb < MB; ++mb) wv[mb] = S::set1(w[mb]);
      for (int i = 0; i < NX; ++i) {
        const V v = S::load(tap + src[i]);
        for (int mb = 0; mb < MB; ++mb) acc[mb][i] = S::fmadd(wv[mb], v, acc[mb][i]);
      }
    }
  }
  const int64_t ohw = a.oh * a.ow;
  float* const y0 = a.y;
  const float* const res0 = a.residual;
#pragma GCC unroll 8
  for (int mb = 0; mb < MB; ++mb) {
    float* y = y0 + (m0 + mb) * ohw;
    const float* res = res0 ? res0 + (m0 + mb) * ohw : nullptr;
#pragma GCC unroll 8
    for (int i = 0; i < NX; ++i) {
      V v = acc[mb][i];
      if (lanes[i] == W) {
        if (res) v = S::add(v, S::load(res + dst[i]));
        store_out<S>(y + dst[i], act(v), st);
      } else {
        if (res) v = S::add(v, S::load_n(res + dst[i], lanes[i]));
        S::store_n(y + dst[i], act(v), lanes[i]);
      }
    }
  }
}

// Output channels in groups of MB for the NX vectors from `first` (taken in row-major order over the block's
// rows, so a tile may continue on the next row and a row of 7 vectors (112 or 111 wide) leaves no narrow
// remainder tile). The vectors' input and output offsets are worked out once here for every channel group:
// per tile (27 taps for RGB) that index arithmetic and the accumulators' set-up took a third of the stem's
// time (perf, 3 -> 64 at 224). With 32 registers (AVX-512): 4 channels x 6 vectors, 24 accumulators fed by
// 4 broadcast weights and 6 loads per tap. 8 x 3 (8 broadcasts per tap) ran the 3 -> 32 stem at 224 in
// 197 us, 4 x 6 in 163 (3 -> 64: 375 -> 308 us; bench/conv_bench.cc, AMD EPYC); 2 x 12, 3 x 8, 4 x 7 and
// weights stored pre-broadcast were slower, 5 x 5 no better. With 16 (AVX2): 4 channels x 3 vectors, each weight
// broadcast right before its three FMAs (AMD Zen 2, 5 interleaved runs: 3 -> 64 at 224 665 -> 638 us against 6 x 2;
// 8 x 2 with all 8 weights held spilled accumulators).
template <class S, int NX, class F>
inline void stem_columns(const DepthwiseBlockArgs& a, const float* rows, const int64_t* toff, int64_t rs, int64_t oy0,
                         int64_t vpr, int64_t first, StreamIf st, F act) {
  constexpr int W = S::kWidth;
  constexpr int kMB = 4;
  int64_t src[NX], dst[NX];
  int lanes[NX];
  for (int i = 0; i < NX; ++i) {
    const int64_t r = (first + i) / vpr, ox = (first + i - r * vpr) * W;
    src[i] = r * 2 * rs + ox;
    dst[i] = (oy0 + r) * a.ow + ox;
    lanes[i] = static_cast<int>(std::min<int64_t>(W, a.ow - ox));
  }
  int64_t m0 = 0;
  for (; m0 + kMB <= a.mg; m0 += kMB) stem_tile<S, kMB, NX>(a, rows, toff, src, dst, lanes, m0, st, act);
  for (; m0 < a.mg; ++m0) stem_tile<S, 1, NX>(a, rows, toff, src, dst, lanes, m0, st, act);
}

// The last n (< NX + 1) vectors of a block: one stem_columns call n vectors wide.
template <class S, int NX, class F>
inline void stem_columns_tail(const DepthwiseBlockArgs& a, const float* rows, const int64_t* toff, int64_t rs,
                              int64_t oy0, int64_t vpr, int64_t first, int64_t n, StreamIf st, F act) {
  if constexpr (NX > 0) {
    if (n == NX) return stem_columns<S, NX>(a, rows, toff, rs, oy0, vpr, first, st, act);
    stem_columns_tail<S, NX - 1>(a, rows, toff, rs, oy0, vpr, first, n, st, act);
  }
}

template <class S>
void stem_block(const DepthwiseBlockArgs& a, int64_t, int64_t oy0, int64_t oy1) {
  using V = typename S::V;
  constexpr int W = S::kWidth;
  const int64_t rows_in = (oy1 - oy0 - 1) * 2 + 3, owr = round_up(a.ow, W);
  const int64_t half = owr + W, rs = 2 * half, cs = rows_in * rs;
  int64_t toff[kStemMaxInputChannels * 9];  // tap (c, ky, kx) in the split rows: even columns, then odd
  for (int64_t c = 0; c < a.cg; ++c)
    for (int ky = 0; ky < 3; ++ky)
      for (int kx = 0; kx < 3; ++kx) toff[c * 9 + ky * 3 + kx] = c * cs + ky * rs + (kx & 1) * half + kx / 2;
  for (int64_t c = 0; c < a.cg; ++c) {
    const float* xc = a.x + c * a.ih * a.iw;
    for (int64_t r = 0; r < rows_in; ++r) {
      const int64_t iy = oy0 * 2 + r - a.pad_top;
      float* d = a.scratch + c * cs + r * rs;
      if (iy < 0 || iy >= a.ih) {
        for (int64_t j = 0; j < rs; j += W) S::store(d + j, S::zero());
        continue;
      }
      const float* xr = xc + iy * a.iw;
      const int64_t lo = a.pad_left, hi = a.pad_left + a.iw;
      auto padded = [&](int64_t j) {  // as in dw_direct_channel
        if (j >= lo && j + W <= hi) return S::load(xr + (j - lo));
        if (j + W <= lo || j >= hi) return S::zero();
        const int l0 = static_cast<int>(std::max<int64_t>(lo - j, 0)), l1 = static_cast<int>(std::min<int64_t>(hi - j, W));
        return S::load_lanes(xr + (j - lo), l0, l1);
      };
      for (int64_t j = 0; j < half; j += W) {
        V e, o;
        S::deinterleave(padded(2 * j), padded(2 * j + W), e, o);
        S::store(d + j, e);
        S::store(d + half + j, o);
      }
    }
  }
  const StreamIf st{a.stream};
  with_fused_activation<S>(a.activation, a.act_alpha, a.act_beta, [&](auto act) {
    const int64_t vpr = (a.ow + W - 1) / W, total = (oy1 - oy0) * vpr;
    constexpr int kNX = W >= 16 ? 6 : 3;  // vectors per tile (see stem_columns)
    int64_t j = 0;
    for (; j + kNX <= total; j += kNX) stem_columns<S, kNX>(a, a.scratch, toff, rs, oy0, vpr, j, st, act);
    stem_columns_tail<S, kNX - 1>(a, a.scratch, toff, rs, oy0, vpr, j, total - j, st, act);
  });
  if (a.stream) S::stream_fence();
}

// A narrow stride-1 plane (depthwise_runs_narrow), output rows [oy0, oy1) of channel ch as dw_s1_tile tiles of
// whole rows, each input row loaded once for the up to K output rows that read it, masked to the plane with masks
// computed once here: NR rows at a time (14 rows of one vector, 7 of two, 4 of three, 3 of four: 12-14 accumulators
// of the 32 registers), then pairs and a single row.
template <class S, int K, int NX, class F>
void dw_narrow_channel(const DepthwiseBlockArgs& a, int64_t ch, const float* wk, int64_t oy0, int64_t oy1, F act) {
  using M = typename S::M;
  constexpr int W = S::kWidth, NR = 14 / NX;
  const float bias = a.bias ? a.bias[ch] : 0.f;
  const int64_t ohw = a.oh * a.ow, ow = a.ow, ih = a.ih, iw = a.iw, pl = a.pad_left;
  const float* xc = a.x + ch * a.in_plane();
  const float* res = a.residual ? a.residual + ch * ohw : nullptr;
  float* y = a.y + ch * ohw;
  M mk[K][NX];
  for (int kx = 0; kx < K; ++kx)
    for (int i = 0; i < NX; ++i) mk[kx][i] = padded_lanes<S>(iw, i * W + kx - pl);
  const float* rows[NR - 1 + K];
  auto at_row = [&](int64_t oy, int n) {
    for (int ri = 0; ri < n - 1 + K; ++ri) {
      const int64_t iy = oy - a.pad_top + ri;
      rows[ri] = iy >= 0 && iy < ih ? xc + iy * iw : nullptr;
    }
    return oy * ow;
  };
  int64_t oy = oy0;
  for (; oy + NR <= oy1; oy += NR) {
    const int64_t at = at_row(oy, NR);
    dw_s1_tile<S, K, NR, NX, false, F, true>(rows, iw, pl, wk, bias, 0, ow, res ? res + at : nullptr, y + at,
                                             StreamIf{false}, act, &mk[0][0]);
  }
  for (; oy + 2 <= oy1; oy += 2) {
    const int64_t at = at_row(oy, 2);
    dw_s1_tile<S, K, 2, NX, false, F, true>(rows, iw, pl, wk, bias, 0, ow, res ? res + at : nullptr, y + at,
                                            StreamIf{false}, act, &mk[0][0]);
  }
  if (oy < oy1) {
    const int64_t at = at_row(oy, 1);
    dw_s1_tile<S, K, 1, NX, false, F, true>(rows, iw, pl, wk, bias, 0, ow, res ? res + at : nullptr, y + at,
                                            StreamIf{false}, act, &mk[0][0]);
  }
}

// dw_narrow_channel with as many vectors a row (NX, 1 to 4) as the plane's rows take.
template <class S, int K, class F>
void dw_narrow_any(const DepthwiseBlockArgs& a, int64_t ch, const float* wk, int64_t oy0, int64_t oy1, F act) {
  constexpr int W = S::kWidth;
  if (a.ow <= W) return dw_narrow_channel<S, K, 1>(a, ch, wk, oy0, oy1, act);
  if (a.ow <= 2 * W) return dw_narrow_channel<S, K, 2>(a, ch, wk, oy0, oy1, act);
  if (a.ow <= 3 * W) return dw_narrow_channel<S, K, 3>(a, ch, wk, oy0, oy1, act);
  dw_narrow_channel<S, K, 4>(a, ch, wk, oy0, oy1, act);
}

// Plane-direct depthwise (depthwise_runs_direct / depthwise_runs_narrow): one channel of the block at a time.
template <class S>
void depthwise_direct(const DepthwiseBlockArgs& a, int64_t block, int64_t oy0, int64_t oy1) {
  constexpr int W = S::kWidth;
  const int k = a.k, taps = k * k;
  const int64_t c0 = block * W, nc = std::min<int64_t>(W, a.c - c0);
  const bool from_input = a.ih * a.iw * int64_t{sizeof(float)} > kDirectCopyMaxPlaneBytes;
  const bool narrow = depthwise_runs_narrow(a.stride, a.ow, W);
  const StreamIf st{a.stream};
  with_fused_activation<S>(a.activation, a.act_alpha, a.act_beta, [&](auto act) {
    for (int64_t l = 0; l < nc; ++l) {
      float wk[25];
      for (int t = 0; t < taps; ++t) wk[t] = a.w[(block * taps + t) * W + l];
      if (narrow) {
        k == 3 ? dw_narrow_any<S, 3>(a, c0 + l, wk, oy0, oy1, act) : dw_narrow_any<S, 5>(a, c0 + l, wk, oy0, oy1, act);
      } else if (a.stride == 2) {
        if (k == 3) {
          dw_inplace_channel<S, 3, 2>(a, c0 + l, wk, oy0, oy1, st, act);
        } else {
          dw_inplace_channel<S, 5, 2>(a, c0 + l, wk, oy0, oy1, st, act);
        }
      } else if (from_input) {
        if (k == 3) {
          dw_inplace_channel<S, 3, 1>(a, c0 + l, wk, oy0, oy1, st, act);
        } else {
          dw_inplace_channel<S, 5, 1>(a, c0 + l, wk, oy0, oy1, st, act);
        }
      } else if (k == 3) {
        dw_direct_channel<S, 3>(a, c0 + l, wk, oy0, oy1, st, act);
      } else {
        dw_direct_channel<S, 5>(a, c0 + l, wk, oy0, oy1, st, act);
      }
    }
  });
  if (a.stream) S::stream_fence();
}

template <class S>
void depthwise_block(const DepthwiseBlockArgs& a, int64_t block, int64_t oy0, int64_t oy1) {
  constexpr int W = S::kWidth;
  // Wide stride-1 planes, and narrow ones on AVX-512, run plane-direct (depthwise.h; scratch
  // depthwise_direct_scratch_floats for the wide ones, none for the narrow ones).
  if (depthwise_runs_direct(a.stride, a.ow, W, a.activation) || depthwise_runs_narrow(a.stride, a.ow, W))
    return depthwise_direct<S>(a, block, oy0, oy1);
  const int k = a.k, s = a.stride;
  const int64_t c0 = block * W, nc = std::min<int64_t>(W, a.c - c0);
  const int64_t lp = (a.ow - 1) * s + k, rows_out = oy1 - oy0, rows_in = (rows_out - 1) * s + k;
  float* strip = a.scratch;
  float* out = strip + rows_in * lp * W;
  pack_strip<S>(a, c0, nc, oy0, rows_in, lp, strip, W);
  const float* w = a.w + block * k * k * W;
  if (k == 3) {
    s == 1 ? dw_block_compute<S, 3, 1>(a, rows_out, lp, strip, w, out)
           : dw_block_compute<S, 3, 2>(a, rows_out, lp, strip, w, out);
  } else {
    s == 1 ? dw_block_compute<S, 5, 1>(a, rows_out, lp, strip, w, out)
           : dw_block_compute<S, 5, 2>(a, rows_out, lp, strip, w, out);
  }
  with_activation<S>(a.activation, a.act_alpha, a.act_beta,
                     [&](auto act) { unpack_out<S>(a, out, rows_out * a.ow, c0, nc, oy0, StreamIf{a.stream}, act); });
  if (a.stream) S::stream_fence();
}

// NB consecutive output pixels of R (1 or 2) rows and one block of W output channels: acc += w[tap][ci] (W output
// channels) * x[pixel + tap][ci]. The strip holds each input row as blocks of W channels ([row][block][col][W], rows
// rs and blocks bs floats apart) and x0 is the first pixel's window (block 0), so pixel i's input is STEP = s * W
// floats on from pixel i - 1's (the second row's pixels are rr floats on) and every load is a base register plus a
// constant: NB * R accumulators and the weight vector take NB * R + 1 vector registers and no pointer spills (with
// one pointer per pixel, 16 pixels spilled six of them: a reload per FMA group).
template <class S, int NB, int STEP, int R>
inline void grouped_pixels(const float* x0, int64_t rs, int64_t rr, int64_t bs, int k, int64_t blocks, const float* w,
                           float* out) {
  using V = typename S::V;
  constexpr int W = S::kWidth;
  V acc[R][NB];
  for (int q = 0; q < R; ++q)
    for (int i = 0; i < NB; ++i) acc[q][i] = S::zero();
  for (int ky = 0; ky < k; ++ky)
    for (int kx = 0; kx < k; ++kx) {
      const float* xb = x0 + ky * rs + kx * W;
      for (int64_t b = 0; b < blocks; ++b, xb += bs) {
        const float* xb2 = xb + rr;
        for (int l = 0; l < W; ++l, w += W) {
          const V wv = S::load(w);
          for (int i = 0; i < NB; ++i) acc[0][i] = S::fmadd(wv, S::set1(xb[i * STEP + l]), acc[0][i]);
          if constexpr (R == 2)
            for (int i = 0; i < NB; ++i) acc[1][i] = S::fmadd(wv, S::set1(xb2[i * STEP + l]), acc[1][i]);
        }
      }
    }
  for (int q = 0; q < R; ++q)
    for (int i = 0; i < NB; ++i) S::store(out + (q * NB + i) * W, acc[q][i]);
}

// grouped_pixels for n (1..NB) pixels per row: one instantiation per count.
template <class S, int NB, int STEP, int R>
inline void grouped_pixels_n(int n, const float* x0, int64_t rs, int64_t rr, int64_t bs, int k, int64_t blocks,
                             const float* w, float* out) {
  if constexpr (NB > 1)
    if (n < NB) return grouped_pixels_n<S, NB - 1, STEP, R>(n, x0, rs, rr, bs, k, blocks, w, out);
  grouped_pixels<S, NB, STEP, R>(x0, rs, rr, bs, k, blocks, w, out);
}

// Grouped convolution with cg input and mg output channels per group, both multiples of W, stride 1 or 2: the
// group's input is packed once per strip ([row][block of W channels][col][W]); each block of W output channels is a
// direct conv over it, one output row at a time in near-equal runs of at most kMaxRun pixels (56 = 4 x 14,
// 28 = 2 x 14), or two rows at a time when both fit (7x7). AVX-512 keeps up to 16 accumulators, AVX2 (16 registers,
// a broadcast register per FMA) 12. RegNet-X 400MF's grouped convs, 1 thread, kestrel_conv_bench, fastest of 20 runs
// against 8 pixels per block across row ends through 8 pointers: 400 -> 400 at 14 174 -> 143 us, at 7 43 -> 37,
// 160 -> 160 at 28 266 -> 241, 32 -> 32 stride 2 at 112 229 -> 213 (docs/architecture.md).
template <class S>
void grouped_block(const DepthwiseBlockArgs& a, int64_t group, int64_t oy0, int64_t oy1) {
  constexpr int W = S::kWidth;
  constexpr int kMaxRun = W == 16 ? 16 : W == 8 ? 12 : 4;
  const int s = a.stride;
  const int64_t cg = a.cg, taps = int64_t{a.k} * a.k, blocks = cg / W;
  const int64_t lp = (a.ow - 1) * s + a.k, rows_out = oy1 - oy0, rows_in = (rows_out - 1) * s + a.k;
  const int64_t rs = lp * cg, bs = lp * W, count = rows_out * a.ow;
  const int64_t runs = (a.ow + kMaxRun - 1) / kMaxRun;
  const bool pairs = 2 * a.ow <= kMaxRun;
  float* strip = a.scratch;
  float* out = strip + rows_in * rs;
  for (int64_t b = 0; b < blocks; ++b) pack_strip<S>(a, group * cg + b * W, W, oy0, rows_in, lp, strip + b * bs, W, rs);
  // Output pixels [x0, x0 + n) of rows r (and r + 1 when two).
  auto run = [&](const float* w, int64_t r, int64_t x0, int n, bool two) {
    const float* in = strip + r * s * rs + x0 * s * W;
    float* o = out + (r * a.ow + x0) * W;
    const int64_t rr = s * rs;
    if (s == 1) {
      two ? grouped_pixels_n<S, kMaxRun / 2, W, 2>(n, in, rs, rr, bs, a.k, blocks, w, o)
          : grouped_pixels_n<S, kMaxRun, W, 1>(n, in, rs, rr, bs, a.k, blocks, w, o);
    } else {
      two ? grouped_pixels_n<S, kMaxRun / 2, 2 * W, 2>(n, in, rs, rr, bs, a.k, blocks, w, o)
          : grouped_pixels_n<S, kMaxRun, 2 * W, 1>(n, in, rs, rr, bs, a.k, blocks, w, o);
    }
  };
  with_activation<S>(a.activation, a.act_alpha, a.act_beta, [&](auto act) {
    for (int64_t ob = 0; ob < a.mg; ob += W) {
      const float* w = a.w + (group * a.mg + ob) * taps * cg;
      if (pairs) {
        for (int64_t r = 0; r < rows_out; r += 2) run(w, r, 0, static_cast<int>(a.ow), r + 1 < rows_out);
      } else {
        for (int64_t r = 0; r < rows_out; ++r)
          for (int64_t j = 0; j < runs; ++j) {
            const int64_t x0 = a.ow * j / runs, x1 = a.ow * (j + 1) / runs;
            run(w, r, x0, static_cast<int>(x1 - x0), false);
          }
      }
      unpack_out<S>(a, out, count, group * a.mg + ob, W, oy0, StreamIf{false}, act);
    }
  });
}

// Per block of W channels: the block's input pixels copied into a zero-padded strip [row][col][W] (one vector per
// pixel: no transposes, the rows are pixel-major already), dw_block_compute over it (as the channel-blocked path),
// then bias and activation on the way out to y's pixels.
template <class S>
void depthwise_nhwc(const DepthwiseNhwcArgs& a, int64_t c0, int64_t c1) {
  using V = typename S::V;
  constexpr int W = S::kWidth;
  const int k = a.k, s = a.stride;
  const int64_t lp = (a.ow - 1) * s + k, rows_in = (a.oh - 1) * s + k, taps = int64_t{k} * k, pixels = a.oh * a.ow;
  float* strip = a.scratch;
  float* out = strip + rows_in * lp * W;
  DepthwiseBlockArgs da;  // what dw_block_compute reads: the output width
  da.ow = a.ow;
  for (int64_t c = c0; c < c1; c += W) {
    const int nc = static_cast<int>(std::min<int64_t>(W, c1 - c));
    for (int64_t r = 0; r < rows_in; ++r) {
      const int64_t iy = r - a.pad_top;
      float* d = strip + r * lp * W;
      const bool row_in = iy >= 0 && iy < a.ih;
      const float* src = a.x + (row_in ? iy : 0) * a.iw * a.ldx + c;
      for (int64_t j = 0; j < lp; ++j) {
        const int64_t ix = j - a.pad_left;
        V v = S::zero();
        if (row_in && ix >= 0 && ix < a.iw) v = nc == W ? S::load(src + ix * a.ldx) : S::load_n(src + ix * a.ldx, nc);
        S::store(d + j * W, v);
      }
    }
    const float* w = a.w + c / W * taps * W;
    if (k == 3) {
      s == 1 ? dw_block_compute<S, 3, 1>(da, a.oh, lp, strip, w, out)
             : dw_block_compute<S, 3, 2>(da, a.oh, lp, strip, w, out);
    } else {
      s == 1 ? dw_block_compute<S, 5, 1>(da, a.oh, lp, strip, w, out)
             : dw_block_compute<S, 5, 2>(da, a.oh, lp, strip, w, out);
    }
    const V bias = a.bias ? S::load_n(a.bias + c, nc) : S::zero();
    float* y = a.y + c;
    with_fused_activation<S>(a.activation, a.act_alpha, a.act_beta, [&](auto act) {
      if (nc == W) {
        for (int64_t p = 0; p < pixels; ++p) S::store(y + p * a.ldy, act(S::add(S::load(out + p * W), bias)));
      } else {
        for (int64_t p = 0; p < pixels; ++p) S::store_n(y + p * a.ldy, act(S::add(S::load(out + p * W), bias)), nc);
      }
    });
  }
}

}  // namespace
}  // namespace kestrel::kernels::cpu::conv_detail
