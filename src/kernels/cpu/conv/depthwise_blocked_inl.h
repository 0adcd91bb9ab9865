// Channel-blocked depthwise convolution written once over a vector-ops traits type S (depthwise_inl.h's
// contract plus transpose(V[W]), an in-register W x W transpose). A block of W = S::kWidth channels is transposed into an
// interleaved, zero-padded strip [row][col][W] so one vector holds one pixel of W channels: every tap is then one
// full-width FMA whatever the plane size (a 7x7 plane wastes no lanes on row ends), and the weights are one vector
// per tap. The results are transposed back to NCHW with bias, residual and activation on contiguous plane vectors.
#pragma once

#include <algorithm>
#include <cstring>

#include "kernels/cpu/conv/depthwise.h"
#include "kernels/cpu/conv/depthwise_inl.h"

namespace kestrel::kernels::cpu::conv_detail {
namespace {

template <class S, class F>
void with_activation(GemmActivation kind, float alpha, float beta, F f) {
  using V = typename S::V;
  const V va = S::set1(alpha), vb = S::set1(beta), zero = S::zero(), one = S::set1(1.f);
  switch (kind) {
    case GemmActivation::kNone:
      return f([](V x) { return x; });
    case GemmActivation::kRelu:
      return f([=](V x) { return S::max(x, zero); });
    case GemmActivation::kClip:
      return f([=](V x) { return S::min(S::max(x, va), vb); });
    case GemmActivation::kLeakyRelu:
      return f([=](V x) { return S::fmadd(S::min(x, zero), va, S::max(x, zero)); });
    case GemmActivation::kSigmoid:
      return f([](V x) { return vsigmoid<S>(x); });
    case GemmActivation::kHardSigmoid:
      return f([=](V x) { return S::min(S::max(S::fmadd(x, va, vb), zero), one); });
    case GemmActivation::kHardSwish: {
      const V sixth = S::set1(1.f / 6.f), half = S::set1(0.5f);
      return f([=](V x) { return S::mul(x, S::min(S::max(S::fmadd(x, sixth, half), zero), one)); });
    }
    case GemmActivation::kSilu:
      return f([](V x) { return S::mul(x, vsigmoid<S>(x)); });
    case GemmActivation::kGelu:
      return f([](V x) { return vgelu<S>(x); });
    case GemmActivation::kTanh:
      return f([](V x) { return vtanh<S>(x); });
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

template <class S>
void depthwise_block(const DepthwiseBlockArgs& a, int64_t block, int64_t oy0, int64_t oy1) {
  using V = typename S::V;
  constexpr int W = S::kWidth;
  const int k = a.k, s = a.stride;
  const int64_t c0 = block * W, nc = std::min<int64_t>(W, a.c - c0);
  const int64_t ihw = a.ih * a.iw, ohw = a.oh * a.ow;
  const int64_t lp = (a.ow - 1) * s + k, rows_out = oy1 - oy0, rows_in = (rows_out - 1) * s + k;
  float* strip = a.scratch;
  float* out = strip + rows_in * lp * W;
  // Rows past the last channel repeat it (their results are never stored).
  int64_t row_off[W];
  for (int l = 0; l < W; ++l) row_off[l] = std::min<int64_t>(l, nc - 1) * ihw;
  const float* xb = a.x + c0 * ihw;
  const int64_t x_lo = std::min(a.pad_left, lp), x_hi = std::clamp(a.pad_left + a.iw, x_lo, lp);
  V v[W];
  for (int64_t r = 0; r < rows_in; ++r) {
    float* d = strip + r * lp * W;
    const int64_t iy = oy0 * s + r - a.pad_top;
    if (iy < 0 || iy >= a.ih) {
      for (int64_t j = 0; j < lp; ++j) S::store(d + j * W, S::zero());
      continue;
    }
    const float* xr = xb + iy * a.iw - a.pad_left;
    for (int64_t j = 0; j < x_lo; ++j) S::store(d + j * W, S::zero());
    // W columns of W channels at a time: W row loads, one in-register transpose, W stores.
    for (int64_t j = x_lo; j < x_hi; j += W) {
      const int n = x_hi - j < W ? static_cast<int>(x_hi - j) : W;
      for (int l = 0; l < W; ++l) v[l] = S::load_n(xr + row_off[l] + j, n);
      S::transpose(v);
      for (int q = 0; q < n; ++q) S::store(d + (j + q) * W, v[q]);
    }
    for (int64_t j = x_hi; j < lp; ++j) S::store(d + j * W, S::zero());
  }
  const float* w = a.w + block * k * k * W;
  if (k == 3) {
    s == 1 ? dw_block_compute<S, 3, 1>(a, rows_out, lp, strip, w, out)
           : dw_block_compute<S, 3, 2>(a, rows_out, lp, strip, w, out);
  } else {
    s == 1 ? dw_block_compute<S, 5, 1>(a, rows_out, lp, strip, w, out)
           : dw_block_compute<S, 5, 2>(a, rows_out, lp, strip, w, out);
  }
  // Back to NCHW: W pixels of W channels per transpose, then bias, residual and activation on
  // contiguous plane vectors.
  const int64_t count = rows_out * a.ow;
  with_activation<S>(a.activation, a.act_alpha, a.act_beta, [&](auto act) {
    for (int64_t p = 0; p < count; p += W) {
      const int n = count - p < W ? static_cast<int>(count - p) : W;
      // The scratch holds W pixels past `count` for the whole-vector loads (see scratch size).
      for (int q = 0; q < W; ++q) v[q] = S::load(out + (p + q) * W);
      S::transpose(v);
      for (int64_t l = 0; l < nc; ++l) {
        const int64_t at = (c0 + l) * ohw + oy0 * a.ow + p;
        V r = a.bias ? S::add(v[l], S::set1(a.bias[c0 + l])) : v[l];
        if (a.residual) r = S::add(r, S::load_n(a.residual + at, n));
        S::store_n(a.y + at, act(r), n);
      }
    }
  });
}

}  // namespace
}  // namespace kestrel::kernels::cpu::conv_detail
