// The int8 depthwise plane kernel, written for the compiler's vectorizer: the plane minus the
// zero point is laid out as floats in stride phases, so every tap of a row of outputs reads a
// contiguous run, and the taps of 3x3 / 5x5 windows are unrolled at compile time. Float sums of
// u8 x s8 products are exact here (at most 256 taps: 256 * 255 * 128 < 2^24). Included by the
// per-ISA units only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/qconv/qconv_dw.h"

namespace kestrel::kernels::cpu::qconv_detail {
namespace {

// Outputs computed per block: whole vectors on AVX-512, two on AVX2.
constexpr int kBlock = 16;

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

// dst[i] = src[i] - zp as floats, in fixed blocks of kBlock so the compiler emits whole vectors
// (a variable-length loop got a 64-byte main loop and a long scalar tail on 112-wide rows).
inline void u8_to_f32(const uint8_t* src, int64_t n, float zp, float* dst) {
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock)
    for (int j = 0; j < kBlock; ++j) dst[i + j] = static_cast<float>(src[i + j]) - zp;
  for (; i < n; ++i) dst[i] = static_cast<float>(src[i]) - zp;
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
      u8_to_f32(src, c1 - c0, zp, dst);
      for (int64_t c = c1; c < l.len; ++c) row[c] = 0.f;
    } else {
      // The contiguous padded row first (vectorized conversion), then its stride phases: phase
      // ph holds padded columns ph, ph + sw, ...
      const int64_t sw = p.sw, len = l.len, pw = l.pw;
      float* full = buf + l.ph * sw * len;  // one padded row of scratch past the plane
      const int64_t c0 = std::min<int64_t>(std::max<int64_t>(p.pad_left, 0), pw);
      const int64_t c1 = std::max<int64_t>(std::min<int64_t>(p.pad_left + p.iw, pw), c0);
      for (int64_t c = 0; c < c0; ++c) full[c] = 0.f;
      const uint8_t* src = xr + (c0 - p.pad_left);
      u8_to_f32(src, c1 - c0, zp, full + c0);
      for (int64_t c = c1; c < sw * len; ++c) full[c] = 0.f;
      if (sw == 2) {
        float* __restrict even = row;
        float* __restrict odd = row + len;
        for (int64_t j = 0; j < len; ++j) {
          even[j] = full[2 * j];
          odd[j] = full[2 * j + 1];
        }
      } else {
        for (int64_t ph = 0; ph < sw; ++ph)
          for (int64_t j = 0; j < len; ++j) row[ph * len + j] = full[j * sw + ph];
      }
    }
  }
}

// One output row: acc[ox] = sum over taps of w * plane; K > 0 unrolls a K x K window.
template <int K>
inline void dw_row(const QDwPlane& p, const DwLayout& l, const float* buf, int64_t oy, float* __restrict acc) {
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
    // Whole blocks of kBlock outputs (the scratch has slack for the last one), so no scalar tail.
    const int64_t ow = p.ow;
    for (int64_t ox0 = 0; ox0 < ow; ox0 += kBlock) {
      float s[kBlock];
      for (int i = 0; i < kBlock; ++i) s[i] = 0.f;
#pragma GCC unroll 25
      for (int t = 0; t < K * K; ++t) {
        const float* src = ptr[t] + ox0;
        const float wt = w[t];
        for (int i = 0; i < kBlock; ++i) s[i] += wt * src[i];
      }
      for (int i = 0; i < kBlock; ++i) acc[ox0 + i] = s[i];
    }
  } else {
    (void)ptr;
    for (int64_t ox = 0; ox < p.ow; ++ox) acc[ox] = 0.f;
    for (int ky = 0; ky < kh; ++ky)
      for (int kx = 0; kx < kw; ++kx) {
        const int64_t r = oy * p.sh + ky * p.dh, c = static_cast<int64_t>(kx) * p.dw;
        const float* src = buf + (r * p.sw + c % p.sw) * l.len + c / p.sw;
        const float w = p.w[ky * kw + kx];
        const int64_t ow = p.ow;
#pragma GCC ivdep
        for (int64_t ox = 0; ox < ow; ++ox) acc[ox] += w * src[ox];
      }
  }
}

// Requantizes the whole plane's sums (contiguous [oh * ow]) like the qgemm epilogue:
// round_half_even(float(acc + bias) * scale), clamped, plus the zero point. One pass over the
// plane, so only its last block is partial (per-row stores left 7- and 14-wide rows scalar).
inline void dw_store_plane(const QDwPlane& p, const float* acc) {
  const int64_t n = p.oh * p.ow;
  const int32_t bias = p.bias;
  if (p.out == QOut::kI32) {
    int32_t* y = static_cast<int32_t*>(p.y);
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<int32_t>(acc[i]) + bias;
    return;
  }
  uint8_t* y = static_cast<uint8_t*>(p.y);
  const float lo = static_cast<float>(p.lo - p.y_zp), hi = static_cast<float>(p.hi - p.y_zp);
  const float scale = p.scale;
  const int32_t zp = p.y_zp;
  // |f| <= 255 after the clamp, so adding and subtracting 1.5 * 2^23 rounds half to even exactly
  // like nearbyint. acc is an exact integer below 2^24; acc + bias is exact too unless it passes
  // 2^24, where it is off by at most one float ulp (the qgemm epilogue adds in int32 first).
  constexpr float kMagic = 12582912.f;
  const float biasf = static_cast<float>(bias);
  auto q = [=](float a) {
    float f = (a + biasf) * scale;
    f = f > lo ? f : lo;
    f = f < hi ? f : hi;
    f = (f + kMagic) - kMagic;
    return static_cast<uint8_t>(static_cast<int32_t>(f) + zp);
  };
  int64_t i0 = 0;
  for (; i0 + kBlock <= n; i0 += kBlock)
    for (int i = 0; i < kBlock; ++i) y[i0 + i] = q(acc[i0 + i]);
  for (; i0 < n; ++i0) y[i0] = q(acc[i0]);
}

// Stride 1, K x K taps: all output rows at once over the flattened plane (output (oy, ox) at
// oy * len + ox reads the plane at a constant offset per tap), so small planes (7 x 7, 14 x 14)
// fill whole vectors instead of a part of one per row. Columns ox >= ow are computed and dropped.
template <int K>
void dw_flat(const QDwPlane& p, const DwLayout& l, const float* buf, float* __restrict acc) {
  int64_t off[K * K];
  float w[K * K];
  for (int ky = 0; ky < K; ++ky)
    for (int kx = 0; kx < K; ++kx) {
      off[ky * K + kx] = static_cast<int64_t>(ky) * p.dh * l.len + static_cast<int64_t>(kx) * p.dw;
      w[ky * K + kx] = p.w[ky * K + kx];
    }
  const int64_t n = (p.oh - 1) * l.len + p.ow;
  for (int64_t f0 = 0; f0 < n; f0 += kBlock) {
    float s[kBlock];
    for (int i = 0; i < kBlock; ++i) s[i] = 0.f;
#pragma GCC unroll 25
    for (int t = 0; t < K * K; ++t) {
      const float* src = buf + f0 + off[t];
      const float wt = w[t];
      for (int i = 0; i < kBlock; ++i) s[i] += wt * src[i];
    }
    for (int i = 0; i < kBlock; ++i) acc[f0 + i] = s[i];
  }
}

void qdw_plane(const QDwPlane& p) {
  const DwLayout l = dw_layout(p.oh, p.ow, p.kh, p.kw, p.sh, p.sw, p.dh, p.dw);
  // Scratch: acc (max(ow, oh * len) + kBlock), the plane, one padded row, slack for the last
  // block's reads.
  const int64_t acc_len = std::max(p.ow, p.oh * l.len) + kBlock;
  float* acc = p.scratch;
  float* buf = acc + acc_len;
  for (int64_t i = acc_len - kBlock; i < acc_len; ++i) acc[i] = 0.f;
  fill_plane(p, l, buf);
  // Reads of the last block run past the plane: keep them finite (no NaN / denormal slow paths).
  float* tail = buf + l.ph * p.sw * l.len + (p.sw == 1 ? 0 : p.sw * l.len);
  for (int64_t i = 0, n = (p.sw == 1 ? l.len : 0) + 64; i < n; ++i) tail[i] = 0.f;
  const int k = p.kh == p.kw ? p.kh : 0;
  if (p.sh == 1 && p.sw == 1 && (k == 3 || k == 5)) {
    if (k == 3)
      dw_flat<3>(p, l, buf, acc);
    else
      dw_flat<5>(p, l, buf, acc);
    // Rows at pitch len -> pitch ow (in place, ascending: destinations never pass sources).
    for (int64_t oy = 1; oy < p.oh; ++oy) std::memmove(acc + oy * p.ow, acc + oy * l.len, sizeof(float) * p.ow);
  } else {
    // Row oy's sums at acc + oy * ow; a row's last block spills into the next row, computed after.
    for (int64_t oy = 0; oy < p.oh; ++oy) {
      if (k == 3)
        dw_row<3>(p, l, buf, oy, acc + oy * p.ow);
      else if (k == 5)
        dw_row<5>(p, l, buf, oy, acc + oy * p.ow);
      else
        dw_row<0>(p, l, buf, oy, acc + oy * p.ow);
    }
  }
  dw_store_plane(p, acc);
}

}  // namespace
}  // namespace kestrel::kernels::cpu::qconv_detail
