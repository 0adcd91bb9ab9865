// The int8 depthwise plane kernel, written for the compiler's vectorizer: the plane minus the
// zero point is laid out as floats in stride phases, so every tap of a row of outputs reads a
// contiguous run, and the taps of 3x3 / 5x5 windows are unrolled at compile time. Float sums of
// u8 x s8 products are exact here (at most 256 taps: 256 * 255 * 128 < 2^24). Included by the
// per-ISA units only.
#pragma once

#include <cmath>
#include <cstring>

#include "kernels/cpu/qconv/qconv_dw.h"

namespace kestrel::kernels::cpu::qconv_detail {
namespace {

struct DwLayout {
  int64_t ph, pw, len;  // padded rows, padded columns, length of one phase row
};

inline DwLayout dw_layout(int64_t oh, int64_t ow, int kh, int kw, int sh, int sw, int dh, int dw) {
  DwLayout l;
  l.ph = (oh - 1) * sh + (kh - 1) * dh + 1;
  l.pw = (ow - 1) * sw + (kw - 1) * dw + 1;
  l.len = (l.pw + sw - 1) / sw;
  return l;
}

// Fills the padded, zero-point-shifted plane: row r, column c at buf[(r * sw + c % sw) * len + c / sw].
inline void fill_plane(const QDwPlane& p, const DwLayout& l, float* buf) {
  const float zp = static_cast<float>(p.x_zp);
  for (int64_t r = 0; r < l.ph; ++r) {
    float* row = buf + r * p.sw * l.len;
    const int64_t iy = r - p.pad_top;
    if (iy < 0 || iy >= p.ih) {
      std::memset(row, 0, sizeof(float) * static_cast<size_t>(p.sw * l.len));
      continue;
    }
    const uint8_t* xr = p.x + iy * p.iw;
    if (p.sw == 1) {
      const int64_t c0 = std::min<int64_t>(std::max<int64_t>(p.pad_left, 0), l.pw);
      const int64_t c1 = std::max<int64_t>(std::min<int64_t>(p.pad_left + p.iw, l.pw), c0);
      for (int64_t c = 0; c < c0; ++c) row[c] = 0.f;
      const uint8_t* src = xr + (c0 - p.pad_left);
      float* dst = row + c0;
      const int64_t n = c1 - c0;
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]) - zp;
      for (int64_t c = c1; c < l.len; ++c) row[c] = 0.f;
    } else {
      for (int64_t i = 0; i < p.sw * l.len; ++i) row[i] = 0.f;
      for (int64_t c = 0; c < l.pw; ++c) {
        const int64_t ix = c - p.pad_left;
        if (ix < 0 || ix >= p.iw) continue;
        row[(c % p.sw) * l.len + c / p.sw] = static_cast<float>(xr[ix]) - zp;
      }
    }
  }
}

// One output row: acc[ox] = sum over taps of w * plane; K > 0 unrolls a K x K window.
template <int K>
inline void dw_row(const QDwPlane& p, const DwLayout& l, const float* buf, int64_t oy, float* acc) {
  const int kh = K > 0 ? K : p.kh, kw = K > 0 ? K : p.kw;
  const float* ptr[K > 0 ? K * K : 1];
  if constexpr (K > 0) {
    for (int ky = 0; ky < K; ++ky)
      for (int kx = 0; kx < K; ++kx) {
        const int64_t r = oy * p.sh + ky * p.dh, c = static_cast<int64_t>(kx) * p.dw;
        ptr[ky * K + kx] = buf + (r * p.sw + c % p.sw) * l.len + c / p.sw;
      }
    float w[K * K];
    for (int t = 0; t < K * K; ++t) w[t] = p.w[t];
    for (int64_t ox = 0; ox < p.ow; ++ox) {
      float s = 0.f;
      for (int t = 0; t < K * K; ++t) s += w[t] * ptr[t][ox];
      acc[ox] = s;
    }
  } else {
    (void)ptr;
    for (int64_t ox = 0; ox < p.ow; ++ox) acc[ox] = 0.f;
    for (int ky = 0; ky < kh; ++ky)
      for (int kx = 0; kx < kw; ++kx) {
        const int64_t r = oy * p.sh + ky * p.dh, c = static_cast<int64_t>(kx) * p.dw;
        const float* src = buf + (r * p.sw + c % p.sw) * l.len + c / p.sw;
        const float w = p.w[ky * kw + kx];
        for (int64_t ox = 0; ox < p.ow; ++ox) acc[ox] += w * src[ox];
      }
  }
}

// Requantizes one row like the qgemm epilogue: round_half_even(float(acc + bias) * scale),
// clamped, plus the zero point.
inline void dw_store(const QDwPlane& p, const float* acc, int64_t oy) {
  if (p.out == QOut::kI32) {
    int32_t* y = static_cast<int32_t*>(p.y) + oy * p.ow;
    for (int64_t ox = 0; ox < p.ow; ++ox) y[ox] = static_cast<int32_t>(acc[ox]) + p.bias;
    return;
  }
  uint8_t* y = static_cast<uint8_t*>(p.y) + oy * p.ow;
  const float lo = static_cast<float>(p.lo - p.y_zp), hi = static_cast<float>(p.hi - p.y_zp);
  const float scale = p.scale;
  const int32_t bias = p.bias, zp = p.y_zp;
  for (int64_t ox = 0; ox < p.ow; ++ox) {
    float f = static_cast<float>(static_cast<int32_t>(acc[ox]) + bias) * scale;
    f = f > lo ? f : lo;
    f = f < hi ? f : hi;
    y[ox] = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(f)) + zp);
  }
}

void qdw_plane(const QDwPlane& p) {
  const DwLayout l = dw_layout(p.oh, p.ow, p.kh, p.kw, p.sh, p.sw, p.dh, p.dw);
  float* buf = p.scratch;
  float* acc = buf + l.ph * p.sw * l.len;
  fill_plane(p, l, buf);
  const int k = p.kh == p.kw ? p.kh : 0;
  for (int64_t oy = 0; oy < p.oh; ++oy) {
    if (k == 3)
      dw_row<3>(p, l, buf, oy, acc);
    else if (k == 5)
      dw_row<5>(p, l, buf, oy, acc);
    else
      dw_row<0>(p, l, buf, oy, acc);
    dw_store(p, acc, oy);
  }
}

}  // namespace
}  // namespace kestrel::kernels::cpu::qconv_detail
