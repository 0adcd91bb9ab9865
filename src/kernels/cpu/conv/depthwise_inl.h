// Depthwise plane kernel written once over a vector-ops traits type S (the same contract as
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

// Phase planes: R rows x L columns each, s*s of them; phase (qy, qx) holds padded input element
// (i*s + qy, j*s + qx) at [i, j]. Output (oy, ox) tap (ky, kx) then reads phase (ky%s, kx%s) at
// [oy + ky/s, ox + kx/s]: with the output flattened at pitch L, tap t is a constant offset.
template <class S, int s>
inline void fill_phases(const DepthwisePlane& p, int64_t R, int64_t L, float* planes) {
  for (int qy = 0; qy < s; ++qy)
    for (int qx = 0; qx < s; ++qx) {
      float* plane = planes + (qy * s + qx) * R * L;
      for (int64_t i = 0; i < R; ++i) {
        float* row = plane + i * L;
        const int64_t iy = i * s + qy - p.pad_top;
        if (iy < 0 || iy >= p.ih) {
          copy_zero_padded<S>(nullptr, 0, row, 0, 0, L);
          continue;
        }
        const float* xr = p.x + iy * p.iw;
        if (s == 1) {
          // ix = j - pad_left is inside for j in [pad_left, pad_left + iw).
          const int64_t j0 = std::min(p.pad_left, L), j1 = std::clamp(p.pad_left + p.iw, j0, L);
          copy_zero_padded<S>(xr, -p.pad_left, row, j0, j1, L);
        } else {
          // ix = j * s + base is inside for j in [j0, j1); the interior loop has no branches so
          // the compiler turns it into strided vector loads in each ISA's translation unit.
          const int64_t base = qx - p.pad_left;
          const int64_t j0 = std::min(L, base >= 0 ? 0 : (-base + s - 1) / s);
          const int64_t j1 = std::clamp<int64_t>(p.iw - base > 0 ? (p.iw - base + s - 1) / s : 0, j0, L);
          for (int64_t j = 0; j < j0; ++j) row[j] = 0.f;
          for (int64_t j = j0; j < j1; ++j) row[j] = xr[base + j * s];
          for (int64_t j = j1; j < L; ++j) row[j] = 0.f;
        }
      }
    }
}

template <class S, int K, int s>
void depthwise_compute(const DepthwisePlane& p, int64_t R, int64_t L, const float* planes, float* out) {
  using V = typename S::V;
  constexpr int W = S::kWidth;
  constexpr int T = K * K;
  int64_t off[T];
  V wv[T];
  for (int ky = 0; ky < K; ++ky)
    for (int kx = 0; kx < K; ++kx) {
      const int t = ky * K + kx;
      off[t] = ((ky % s) * s + (kx % s)) * R * L + (ky / s) * L + kx / s;
      wv[t] = S::set1(p.w[t]);
    }
  const V bias = S::set1(p.bias);
  const int64_t total = p.oh * L;
  int64_t f = 0;
  for (; f + 2 * W <= total; f += 2 * W) {
    V a0 = bias, a1 = bias;
    for (int t = 0; t < T; ++t) {
      const float* src = planes + off[t] + f;
      a0 = S::fmadd(wv[t], S::load(src), a0);
      a1 = S::fmadd(wv[t], S::load(src + W), a1);
    }
    S::store(out + f, a0);
    S::store(out + f + W, a1);
  }
  // Whole vectors past the end read the scratch slack and write the output slack.
  for (; f < total; f += W) {
    V a0 = bias;
    for (int t = 0; t < T; ++t) a0 = S::fmadd(wv[t], S::load(planes + off[t] + f), a0);
    S::store(out + f, a0);
  }
}

// y[oy, :] = act(out[oy, :ow] + residual[oy, :]).
template <class S, class F>
void depthwise_epilogue_with(const DepthwisePlane& p, int64_t L, const float* out, F act) {
  constexpr int W = S::kWidth;
  for (int64_t oy = 0; oy < p.oh; ++oy) {
    const float* src = out + oy * L;
    const float* res = p.residual ? p.residual + oy * p.ow : nullptr;
    float* dst = p.y + oy * p.ow;
    for (int64_t j = 0; j < p.ow; j += W) {
      const int n = p.ow - j < W ? static_cast<int>(p.ow - j) : W;
      typename S::V v = S::load(src + j);
      if (res) v = S::add(v, S::load_n(res + j, n));
      v = act(v);
      if (n == W) {
        S::store(dst + j, v);
      } else {
        S::store_n(dst + j, v, n);
      }
    }
  }
}

template <class S>
void depthwise_epilogue(const DepthwisePlane& p, int64_t L, const float* out) {
  using V = typename S::V;
  const V va = S::set1(p.act_alpha), vb = S::set1(p.act_beta), zero = S::zero(), one = S::set1(1.f);
  switch (p.activation) {
    case GemmActivation::kNone:
      return depthwise_epilogue_with<S>(p, L, out, [](V x) { return x; });
    case GemmActivation::kRelu:
      return depthwise_epilogue_with<S>(p, L, out, [&](V x) { return S::max(x, zero); });
    case GemmActivation::kClip:
      return depthwise_epilogue_with<S>(p, L, out, [&](V x) { return S::min(S::max(x, va), vb); });
    case GemmActivation::kLeakyRelu:
      return depthwise_epilogue_with<S>(p, L, out, [&](V x) { return S::fmadd(S::min(x, zero), va, S::max(x, zero)); });
    case GemmActivation::kSigmoid:
      return depthwise_epilogue_with<S>(p, L, out, [](V x) { return vsigmoid<S>(x); });
    case GemmActivation::kHardSigmoid:
      return depthwise_epilogue_with<S>(p, L, out, [&](V x) { return S::min(S::max(S::fmadd(x, va, vb), zero), one); });
    case GemmActivation::kHardSwish: {
      const V sixth = S::set1(1.f / 6.f), half = S::set1(0.5f);
      return depthwise_epilogue_with<S>(
          p, L, out, [&](V x) { return S::mul(x, S::min(S::max(S::fmadd(x, sixth, half), zero), one)); });
    }
    case GemmActivation::kSilu:
      return depthwise_epilogue_with<S>(p, L, out, [](V x) { return S::mul(x, vsigmoid<S>(x)); });
    case GemmActivation::kGelu:
      return depthwise_epilogue_with<S>(p, L, out, [](V x) { return vgelu<S>(x); });
    case GemmActivation::kTanh:
      return depthwise_epilogue_with<S>(p, L, out, [](V x) { return vtanh<S>(x); });
  }
}

template <class S>
void depthwise_plane(const DepthwisePlane& p) {
  const int64_t reach = (p.k - 1) / p.stride;
  const int64_t R = p.oh + reach, L = p.ow + reach;
  float* planes = p.scratch;
  const int64_t planes_floats = int64_t{p.stride} * p.stride * R * L;
  float* out = planes + planes_floats + 64;
  if (p.stride == 1) {
    fill_phases<S, 1>(p, R, L, planes);
  } else {
    fill_phases<S, 2>(p, R, L, planes);
  }
  // Slack read by whole vectors past the ends (those lanes are never stored to y).
  std::memset(planes + planes_floats, 0, 64 * sizeof(float));
  std::memset(out + p.oh * L, 0, 64 * sizeof(float));
  // Stride and kernel size as constants: the tap offsets fold and the strided fill vectorizes.
  if (p.k == 3) {
    p.stride == 1 ? depthwise_compute<S, 3, 1>(p, R, L, planes, out) : depthwise_compute<S, 3, 2>(p, R, L, planes, out);
  } else {
    p.stride == 1 ? depthwise_compute<S, 5, 1>(p, R, L, planes, out) : depthwise_compute<S, 5, 2>(p, R, L, planes, out);
  }
  depthwise_epilogue<S>(p, L, out);
}

template <class S>
void im2col_rows(const Im2colArgs& a, int64_t r0, int64_t r1) {
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
        if (a.sw == 2) {
          for (int64_t ox = o0; ox < o1; ++ox) d[ox] = xr[x0 + 2 * ox];
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
