// The 2-D pooling plane function, written once over VecOps and instantiated by each pool_<isa>.cc.
// Include only from those files, after the VecOps header.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/cpu/pool/pool.h"

namespace kestrel::kernels::cpu {
namespace {

using S = VecOps;
using V = S::V;
constexpr int kW = S::kWidth;

// row[0, w) = max / sum over rows src[0, n) (first), or row combined with them (!first), in
// registers, one store per vector. N: int, or std::integral_constant for a fixed window height
// (then the row loop unrolls).
template <bool kMax, class N>
void reduce_rows(const float* const* src, N n, bool first, float* row, int64_t w) {
  const int tail = static_cast<int>(w % kW);
  const int k0 = first ? 1 : 0;
  int64_t i = 0;
  for (; i + kW <= w; i += kW) {
    V acc = first ? S::load(src[0] + i) : S::load(row + i);
    for (int k = k0; k < static_cast<int>(n); ++k)
      acc = kMax ? S::max(S::load(src[k] + i), acc) : S::add(acc, S::load(src[k] + i));
    S::store(row + i, acc);
  }
  if (tail) {
    V acc = first ? S::load_n(src[0] + i, tail) : S::load_n(row + i, tail);
    for (int k = k0; k < static_cast<int>(n); ++k)
      acc = kMax ? S::max(S::load_n(src[k] + i, tail), acc) : S::add(acc, S::load_n(src[k] + i, tail));
    S::store_n(row + i, acc, tail);
  }
}

// Vertical pass of output row r into row (row[iw] for iw in [0, w)): the window's valid input rows
// reduced up to 8 at a time. KH > 0: the window height, fixed at compile time. Returns the number
// of valid rows (0: the row is left as it was, neutral).
template <bool kMax, int KH>
int64_t vertical(const Pool2dParams& p, const float* x, int64_t h, int64_t w, int64_t r, float* row) {
  constexpr int kRows = 8;
  const float* src[kRows];
  if constexpr (KH > 0 && KH <= kRows) {
    const int64_t ih0 = r * p.sh - p.pad_top;
    if (ih0 >= 0 && ih0 + KH <= h) {  // the whole window inside: one pass, unrolled
      for (int k = 0; k < KH; ++k) src[k] = x + (ih0 + k) * w;
      reduce_rows<kMax>(src, std::integral_constant<int, KH>{}, true, row, w);
      return KH;
    }
  }
  const int64_t kh = KH > 0 ? KH : p.kh, dh = KH > 0 ? 1 : p.dh;
  int64_t rows_in = 0;
  int n = 0;
  for (int64_t k = 0; k < kh; ++k) {
    const int64_t ih = r * p.sh - p.pad_top + k * dh;
    if (ih < 0 || ih >= h) continue;
    src[n++] = x + ih * w;
    if (n == kRows) {
      reduce_rows<kMax>(src, n, rows_in == 0, row, w);
      rows_in += n;
      n = 0;
    }
  }
  if (n > 0) {
    reduce_rows<kMax>(src, n, rows_in == 0, row, w);
    rows_in += n;
  }
  return rows_in;
}

// Horizontal pass: output row `out` from the reduced row buffer `buf` (window start of output c is
// buf[c * sw]; the buffer has two vectors of slack past the last window, so the last, partial
// vector of outputs loads whole vectors too and stores masked).
template <bool kMax, int SW, int KW>
void horizontal_vec(const float* buf, float* out, int64_t ow, int64_t kw_any, int64_t dw_any) {
  const int64_t kw = KW > 0 ? KW : kw_any, dw = KW > 0 ? 1 : dw_any;
  // Stride 2: window start of output c + i is buf[2 (c + i)], the even elements of two loads.
  auto tap = [](const float* b) { return SW == 2 ? S::even(S::load(b), S::load(b + kW)) : S::load(b); };
  for (int64_t c = 0; c < ow; c += kW) {
    const float* b = buf + SW * c;
    V acc = tap(b);
    for (int64_t k = 1; k < kw; ++k) {
      V v = tap(b + k * dw);
      acc = kMax ? S::max(v, acc) : S::add(acc, v);
    }
    if (c + kW <= ow) {
      S::store(out + c, acc);
    } else {
      S::store_n(out + c, acc, static_cast<int>(ow - c));
    }
  }
}

template <bool kMax, int KW>
void horizontal(const Pool2dParams& p, const float* buf, float* out, int64_t ow) {
  int64_t c = 0;
  const int64_t kw = KW > 0 ? KW : p.kw, dw = KW > 0 ? 1 : p.dw;
  if (p.sw == 2) return horizontal_vec<kMax, 2, KW>(buf, out, ow, p.kw, p.dw);
  if (p.sw == 1) return horizontal_vec<kMax, 1, KW>(buf, out, ow, p.kw, p.dw);
  for (; c < ow; ++c) {
    const float* b = buf + c * p.sw;
    float acc = b[0];
    for (int64_t k = 1; k < kw; ++k) {
      float v = b[k * dw];
      acc = kMax ? (v > acc ? v : acc) : acc + v;
    }
    out[c] = acc;
  }
}

// Output rows [r0, r1) of one plane: first every row's vertical pass into its own buffer row
// (rows row_len apart, padding neutral), then the horizontal passes, so no load waits on a store
// just made at another offset (measured: no difference on the shared models' pools; what made
// SqueezeNet's 3x3 pools 1.3-2.2x faster was unrolling the fixed window and the masked tails).
template <bool kMax, int K>
void pool_rows(const Pool2dParams& p, const float* x, int64_t h, int64_t w, float* y, int64_t ow, int64_t r0,
               int64_t r1, float* buf, int64_t row_len) {
  const float neutral = kMax ? -std::numeric_limits<float>::infinity() : 0.f;
  const V vneutral = S::set1(neutral);
  for (int64_t r = r0; r < r1; ++r) {
    float* b = buf + (r - r0) * row_len;
    int64_t i = 0;
    for (; i + kW <= row_len; i += kW) S::store(b + i, vneutral);
    for (; i < row_len; ++i) b[i] = neutral;
    vertical<kMax, K>(p, x, h, w, r, b + p.pad_left);
  }
  for (int64_t r = r0; r < r1; ++r) {
    float* out = y + r * ow;
    horizontal<kMax, K>(p, buf + (r - r0) * row_len, out, ow);
    if (!kMax) {
      // Divide by the taps counted: rows x columns (validity is separable).
      int64_t rows_in = 0, rows_padded = 0;
      for (int64_t k = 0; k < p.kh; ++k) {
        const int64_t ih = r * p.sh - p.pad_top + k * p.dh;
        if (ih >= -p.pad_top && ih < h + p.pad_bottom) ++rows_padded;
        if (ih >= 0 && ih < h) ++rows_in;
      }
      for (int64_t c = 0; c < ow; ++c) {
        int64_t cols = 0;
        for (int64_t k = 0; k < p.kw; ++k) {
          const int64_t iw = c * p.sw - p.pad_left + k * p.dw;
          if (p.count_include_pad ? (iw >= -p.pad_left && iw < w + p.pad_right) : (iw >= 0 && iw < w)) ++cols;
        }
        const int64_t n = (p.count_include_pad ? rows_padded : rows_in) * cols;
        out[c] = n > 0 ? out[c] / static_cast<float>(n) : std::numeric_limits<float>::quiet_NaN();
      }
    }
  }
}

// MaxPool 3x3 stride 2, one output row whose window rows r0..r2 and columns [0, 2 ow + 1) lie inside the plane
// (w wide), in registers: the vertical maxima V of input columns [2c, 2c + 2W) give taps 0 and 1 of outputs
// [c, c + W) as their even and odd elements (E, O), and tap 2 is E shifted by one lane with the next vector's
// first even element. Loads past w are masked (those lanes feed only outputs past ow).
void max3x3s2_row(const float* r0, const float* r1, const float* r2, int64_t w, float* out, int64_t ow) {
  auto vmax = [&](int64_t col) {
    if (col + kW <= w) return S::max(S::max(S::load(r0 + col), S::load(r1 + col)), S::load(r2 + col));
    const int n = static_cast<int>(std::clamp<int64_t>(w - col, 0, kW));
    return S::max(S::max(S::load_n(r0 + col, n), S::load_n(r1 + col, n)), S::load_n(r2 + col, n));
  };
  V v0 = vmax(0), v1 = vmax(kW);
  V e = S::even(v0, v1), o = S::odd(v0, v1);
  for (int64_t c = 0; c < ow; c += kW) {
    const int64_t next = 2 * (c + kW);
    v0 = vmax(next);
    v1 = vmax(next + kW);
    const V en = S::even(v0, v1), on = S::odd(v0, v1);
    const V m = S::max(S::max(e, o), S::next_lane(e, en));
    if (c + kW <= ow) {
      S::store(out + c, m);
    } else {
      S::store_n(out + c, m, static_cast<int>(ow - c));
    }
    e = en;
    o = on;
  }
}

void pool_plane(const Pool2dParams& p, const float* x, int64_t h, int64_t w, float* y, int64_t oh, int64_t ow,
                float* buf, int64_t row_len, int64_t chunk_rows) {
  // 3x3 stride-2 MaxPool without left padding (SqueezeNet's, and the pooled stem's): the rows whose windows lie
  // inside the plane in registers, about a third of the buffered path's instructions per output vector (the
  // rest, e.g. a ceil_mode row past the bottom, through the buffered path below).
  if (p.is_max && p.kh == 3 && p.kw == 3 && p.sh == 2 && p.sw == 2 && p.dh == 1 && p.dw == 1 && p.pad_left == 0 &&
      2 * (ow - 1) + 3 <= w) {
    for (int64_t r = 0; r < oh; ++r) {
      const int64_t ih0 = 2 * r - p.pad_top;
      if (ih0 >= 0 && ih0 + 3 <= h) {
        max3x3s2_row(x + ih0 * w, x + (ih0 + 1) * w, x + (ih0 + 2) * w, w, y + r * ow, ow);
      } else {
        pool_rows<true, 3>(p, x, h, w, y, ow, r, r + 1, buf, row_len);
      }
    }
    return;
  }
  for (int64_t r0 = 0; r0 < oh; r0 += chunk_rows) {
    const int64_t r1 = std::min(oh, r0 + chunk_rows);
    // 3x3 windows without dilation (the CNNs' pools): window loops unrolled.
    const bool k3 = p.kh == 3 && p.kw == 3 && p.dh == 1 && p.dw == 1;
    if (p.is_max) {
      k3 ? pool_rows<true, 3>(p, x, h, w, y, ow, r0, r1, buf, row_len)
         : pool_rows<true, 0>(p, x, h, w, y, ow, r0, r1, buf, row_len);
    } else {
      k3 ? pool_rows<false, 3>(p, x, h, w, y, ow, r0, r1, buf, row_len)
         : pool_rows<false, 0>(p, x, h, w, y, ow, r0, r1, buf, row_len);
    }
  }
}

const PoolTable* make_table(core::Isa isa, const char* name) {
  static const PoolTable t{isa, name, &pool_plane};
  return &t;
}

}  // namespace
}  // namespace kestrel::kernels::cpu
