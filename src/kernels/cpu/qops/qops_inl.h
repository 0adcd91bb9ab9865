// Per-ISA row kernels of the u8 element-wise and pooling ops (qops.h), written for the compiler's
// vectorizer; instantiated by qops_{scalar,avx2,avx512}.cc with their ISA's flags.
#pragma once

#include <algorithm>
#include <cstring>

#if defined(__AVX2__) || defined(__AVX512BW__)
#include <immintrin.h>
#endif

#include "kernels/cpu/qops/qops_table.h"

namespace kestrel::kernels::cpu::qops_detail {
namespace {

// round_half_even for |f| < 2^22 without a rounding instruction (every ISA vectorizes it).
inline float round_even(float f) {
  constexpr float kMagic = 12582912.f;  // 1.5 * 2^23
  return (f + kMagic) - kMagic;
}

template <int SA, int SB>
void binary_row(const QBinaryParams& p, const uint8_t* a, const uint8_t* b, uint8_t* y, int64_t n) {
  const float lo = static_cast<float>(p.lo - p.y_zp), hi = static_cast<float>(p.hi - p.y_zp);
  const int32_t zy = p.y_zp;
  if (p.op == QBinaryOp::kAdd) {
    const float ka = p.a_scale / p.y_scale, kb = p.b_scale / p.y_scale;
    const float c0 = -(static_cast<float>(p.a_zp) * ka + static_cast<float>(p.b_zp) * kb);
    for (int64_t i = 0; i < n; ++i) {
      float f = static_cast<float>(a[i * SA]) * ka + static_cast<float>(b[i * SB]) * kb + c0;
      f = f > lo ? f : lo;
      f = f < hi ? f : hi;
      y[i] = static_cast<uint8_t>(static_cast<int32_t>(round_even(f)) + zy);
    }
  } else {
    const float k = p.a_scale * p.b_scale / p.y_scale;
    const float za = static_cast<float>(p.a_zp), zb = static_cast<float>(p.b_zp);
    for (int64_t i = 0; i < n; ++i) {
      float f = (static_cast<float>(a[i * SA]) - za) * (static_cast<float>(b[i * SB]) - zb) * k;
      f = f > lo ? f : lo;
      f = f < hi ? f : hi;
      y[i] = static_cast<uint8_t>(static_cast<int32_t>(round_even(f)) + zy);
    }
  }
}

void binary_impl(const QBinaryParams& p, const uint8_t* a, const uint8_t* b, uint8_t* y, int64_t n, int sa, int sb) {
  if (sa == 1 && sb == 1)
    binary_row<1, 1>(p, a, b, y, n);
  else if (sa == 1)
    binary_row<1, 0>(p, a, b, y, n);
  else if (sb == 1)
    binary_row<0, 1>(p, a, b, y, n);
  else
    binary_row<0, 0>(p, a, b, y, n);
}

void quantize_impl(const float* x, int64_t n, float scale, int32_t zp, uint8_t* y) {
  const float lo = static_cast<float>(-zp), hi = static_cast<float>(255 - zp);
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] / scale;
    v = v == v ? v : 0.f;  // NaN -> the zero point
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    y[i] = static_cast<uint8_t>(static_cast<int32_t>(round_even(v)) + zp);
  }
}

// y[i] = x[2 * i] for i < n_out; x holds n_in >= 2 * n_out - 1 readable bytes.
inline void even_bytes(const uint8_t* x, int64_t n_in, uint8_t* y, int64_t n_out) {
  int64_t i = 0;
#if defined(__AVX512BW__)
  for (; 2 * i + 64 <= n_in && i + 32 <= n_out; i += 32)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        _mm512_maskz_cvtepi16_epi8(~__mmask32{0}, _mm512_loadu_si512(x + 2 * i)));  // low byte of each word
#elif defined(__AVX2__)
  const __m256i lo = _mm256_set1_epi16(0x00ff);
  for (; 2 * i + 64 <= n_in && i + 32 <= n_out; i += 32) {
    const __m256i a = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 2 * i)), lo);
    const __m256i b = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 2 * i + 32)), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        _mm256_permute4x64_epi64(_mm256_packus_epi16(a, b), 0xd8));  // undo the lane split
  }
#endif
  for (; i < n_out; ++i) y[i] = x[2 * i];
  (void)n_in;  // only the vector loops read whole blocks
}

// Planes [p0, p1): vertical max of the window rows into a padded row (column c holds input
// column c - pad_left; 0, the identity of max on u8, outside), then the horizontal window.
void maxpool_impl(const QMaxPoolShape& s, const uint8_t* x, uint8_t* y, int64_t p0, int64_t p1, uint8_t* row) {
  const int64_t plane_in = s.ih * s.iw, plane_out = s.oh * s.ow;
  const int64_t width = (s.ow - 1) * s.sw + (s.kw - 1) * s.dw + 1;
  const int64_t c0 = std::min(s.pad_left, width), c1 = std::max(c0, std::min(width, s.pad_left + s.iw));
  // u8 stores may alias anything: keep every bound in a local so loops vectorize.
  const int64_t ih = s.ih, iw = s.iw, oh = s.oh, ow = s.ow, kh = s.kh, kw = s.kw, sh = s.sh, sw = s.sw, dh = s.dh,
                dw = s.dw, pt = s.pad_top, run = c1 - c0, lead = c0 - s.pad_left, w = width;
  uint8_t* tmp = row;
  for (int64_t pl = p0; pl < p1; ++pl) {
    const uint8_t* xp = x + pl * plane_in;
    uint8_t* yp = y + pl * plane_out;
    for (int64_t oy = 0; oy < oh; ++oy) {
      std::memset(tmp, 0, static_cast<size_t>(w));
      const int64_t iy0 = oy * sh - pt;
      uint8_t* dst = tmp + c0;
      for (int64_t ky = 0; ky < kh; ++ky) {
        const int64_t iy = iy0 + ky * dh;
        if (iy < 0 || iy >= ih) continue;
        const uint8_t* src = xp + iy * iw + lead;
        for (int64_t c = 0; c < run; ++c) dst[c] = std::max(dst[c], src[c]);
      }
      uint8_t* yr = yp + oy * ow;
      if (sw == 1 && dw == 1) {
        for (int64_t ox = 0; ox < ow; ++ox) yr[ox] = tmp[ox];
        for (int64_t kx = 1; kx < kw; ++kx)
          for (int64_t ox = 0; ox < ow; ++ox) yr[ox] = std::max(yr[ox], tmp[ox + kx]);
      } else if (sw == 2 && dw == 1) {
        // Window maxima at every column (kw - 1 forward passes, each widening the window by one;
        // reading i + 1 before writing it vectorizes), then the even columns.
        const int64_t n = 2 * (ow - 1) + 1;
        for (int64_t kx = 1; kx < kw; ++kx) {
          const int64_t len = n + kw - 1 - kx;  // the next pass reads one column further
          for (int64_t i = 0; i < len; ++i) tmp[i] = std::max(tmp[i], tmp[i + 1]);
        }
        even_bytes(tmp, n, yr, ow);
      } else if (kw == 3 && dw == 1) {
        for (int64_t ox = 0; ox < ow; ++ox) {
          const uint8_t* t = tmp + ox * sw;
          yr[ox] = std::max(std::max(t[0], t[1]), t[2]);
        }
      } else {
        for (int64_t ox = 0; ox < ow; ++ox) {
          const uint8_t* t = tmp + ox * sw;
          uint8_t m = t[0];
          for (int64_t kx = 1; kx < kw; ++kx) m = std::max(m, t[kx * dw]);
          yr[ox] = m;
        }
      }
    }
  }
}

inline QopsFns make_fns() {
  return {&quantize_impl, &maxpool_impl, &binary_impl};
}

}  // namespace
}  // namespace kestrel::kernels::cpu::qops_detail
