// im2col and softmax rows written once over a vector-ops traits type S (the same contract as
// kernels/cpu/gemm/vec_math_inl.h); each ISA translation unit instantiates it with its own S and
// compile flags. Everything sits in an unnamed namespace so the copies never merge at link time.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/conv/depthwise.h"
#include "kernels/cpu/gemm/vec_math_inl.h"

namespace kestrel::kernels::cpu::conv_detail {
namespace {

// d[j] = xr[x0 + j] for j in [o0, o1), 0 elsewhere in [0, n); whole vectors, no library calls.
template <class S>
inline void copy_zero_padded(const float* xr, int64_t x0, float* d, int64_t o0, int64_t o1, int64_t n) {
  constexpr int W = S::kWidth;
  int64_t j = 0;
  for (; j + W <= o0; j += W) S::store(d + j, S::zero());
  for (; j < o0; ++j) d[j] = 0.f;
  for (; j + W <= o1; j += W) S::store(d + j, S::load(xr + (x0 + j)));
  if (j < o1) {
    const int m = static_cast<int>(o1 - j);
    S::store_n(d + j, S::load_n(xr + (x0 + j), m), m);
    j = o1;
  }
  for (; j + W <= n; j += W) S::store(d + j, S::zero());
  if (j < n) S::store_n(d + j, S::zero(), static_cast<int>(n - j));
}

template <class S>
void im2col_rows(const Im2colArgs& a, int64_t r0, int64_t r1) {
  constexpr int W = S::kWidth;
  const int64_t ihw = a.ih * a.iw, ohw = a.oh * a.ow;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t c = r / (a.kh * a.kw), ky = r / a.kw % a.kh, kx = r % a.kw;
    const float* xc = a.x + c * ihw;
    float* dst = a.col + r * ohw;
    const int64_t x0 = kx * a.dw - a.pl;  // input column of output column 0
    // Output columns whose tap is inside the row: ix = x0 + ox * sw in [0, iw).
    const int64_t o0 = std::min<int64_t>(a.ow, x0 >= 0 ? 0 : (-x0 + a.sw - 1) / a.sw);
    const int64_t o1 = std::clamp<int64_t>(a.iw - x0 > 0 ? (a.iw - x0 + a.sw - 1) / a.sw : 0, o0, a.ow);
    for (int64_t oy = 0; oy < a.oh; ++oy) {
      float* d = dst + oy * a.ow;
      const int64_t iy = oy * a.sh - a.pt + ky * a.dh;
      if (iy < 0 || iy >= a.ih) {
        copy_zero_padded<S>(nullptr, 0, d, 0, 0, a.ow);
        continue;
      }
      const float* xr = xc + iy * a.iw;
      if (a.sw == 1) {
        copy_zero_padded<S>(xr, x0, d, o0, o1, a.ow);
      } else {
        for (int64_t ox = 0; ox < o0; ++ox) d[ox] = 0.f;
        if (a.sw == 2) {  // whole vectors while both loads stay in the row, then masked loads up to its end
          int64_t ox = o0;
          typename S::V even, odd;
          for (; ox + W <= o1 && x0 + 2 * (ox + W) <= a.iw; ox += W) {
            S::deinterleave(S::load(xr + x0 + 2 * ox), S::load(xr + x0 + 2 * ox + W), even, odd);
            S::store(d + ox, even);
          }
          if (ox < o1) {  // at most W columns left: the loop stops only when 2 W floats do not fit
            const int64_t avail = a.iw - (x0 + 2 * ox);
            const int lo = static_cast<int>(std::min<int64_t>(avail, W));
            const int hi = static_cast<int>(std::clamp<int64_t>(avail - W, 0, W));
            S::deinterleave(S::load_n(xr + x0 + 2 * ox, lo), S::load_n(xr + x0 + 2 * ox + W, hi), even, odd);
            S::store_n(d + ox, even, static_cast<int>(o1 - ox));
          }
        } else {
          for (int64_t ox = o0; ox < o1; ++ox) d[ox] = xr[x0 + ox * a.sw];
        }
        for (int64_t ox = o1; ox < a.ow; ++ox) d[ox] = 0.f;
      }
    }
  }
}

template <class S>
void softmax_rows(float* s, int64_t rows, int64_t n, int64_t ld) {
  using V = typename S::V;
  constexpr int W = S::kWidth;
  for (int64_t r = 0; r < rows; ++r) {
    float* x = s + r * ld;
    V vmax = S::set1(-INFINITY);
    int64_t j = 0;
    for (; j + W <= n; j += W) vmax = S::max(vmax, S::load(x + j));
    float mx = -INFINITY;
    {
      alignas(64) float lanes[W];
      S::store(lanes, vmax);
      for (int l = 0; l < W; ++l) mx = lanes[l] > mx ? lanes[l] : mx;
    }
    for (; j < n; ++j) mx = x[j] > mx ? x[j] : mx;
    if (mx == -INFINITY || mx != mx) {
      for (j = 0; j < n; ++j) x[j] = NAN;
      continue;
    }
    const V vm = S::set1(mx);
    V vsum = S::zero();
    for (j = 0; j + W <= n; j += W) {
      const V e = vexp<S>(S::sub(S::load(x + j), vm));
      S::store(x + j, e);
      vsum = S::add(vsum, e);
    }
    if (j < n) {
      const int m = static_cast<int>(n - j);
      // Masked-off lanes load 0; exp(0 - max) must not enter the sum, so they are zeroed.
      V e = vexp<S>(S::sub(S::load_n(x + j, m), vm));
      S::store_n(x + j, e, m);
      alignas(64) float t[W];
      S::store(t, e);
      for (int l = m; l < W; ++l) t[l] = 0.f;
      vsum = S::add(vsum, S::load(t));
    }
    float sum = 0.f;
    {
      alignas(64) float lanes[W];
      S::store(lanes, vsum);
      for (int l = 0; l < W; ++l) sum += lanes[l];
    }
    const V inv = S::set1(1.f / sum);
    for (j = 0; j + W <= n; j += W) S::store(x + j, S::mul(S::load(x + j), inv));
    if (j < n) {
      const int m = static_cast<int>(n - j);
      S::store_n(x + j, S::mul(S::load_n(x + j, m), inv), m);
    }
  }
}

}  // namespace
}  // namespace kestrel::kernels::cpu::conv_detail
