// The 2-D pooling plane function, written once over VecOps and instantiated by each pool_<isa>.cc.
// Include only from those files, after the VecOps header.
#pragma once

#include <cstdint>
#include <limits>

#include "kernels/cpu/pool/pool.h"

namespace kestrel::kernels::cpu {
namespace {

using S = VecOps;
using V = S::V;
constexpr int kW = S::kWidth;

template <bool kMax>
void pool_plane_impl(const Pool2dParams& p, const float* x, int64_t h, int64_t w, float* y, int64_t oh, int64_t ow,
                     float* buf) {
  const float neutral = kMax ? -std::numeric_limits<float>::infinity() : 0.f;
  const V vneutral = S::set1(neutral);
  float* row = buf + p.pad_left;  // row[iw] for iw in [0, w); the padding around it stays neutral
  for (int64_t r = 0; r < oh; ++r) {
    // Vertical pass: the window's valid input rows.
    int64_t rows_in = 0, rows_padded = 0;
    for (int64_t k = 0; k < p.kh; ++k) {
      const int64_t ih = r * p.sh - p.pad_top + k * p.dh;
      if (ih >= -p.pad_top && ih < h + p.pad_bottom) ++rows_padded;
      if (ih < 0 || ih >= h) continue;
      const float* src = x + ih * w;
      int64_t i = 0;
      if (rows_in == 0) {
        for (; i + kW <= w; i += kW) S::store(row + i, S::load(src + i));
        for (; i < w; ++i) row[i] = src[i];
      } else {
        for (; i + kW <= w; i += kW) {
          V a = S::load(row + i), b = S::load(src + i);
          S::store(row + i, kMax ? S::max(b, a) : S::add(a, b));
        }
        for (; i < w; ++i) row[i] = kMax ? (src[i] > row[i] ? src[i] : row[i]) : row[i] + src[i];
      }
      ++rows_in;
    }
    if (rows_in == 0) {
      int64_t i = 0;
      for (; i + kW <= w; i += kW) S::store(row + i, vneutral);
      for (; i < w; ++i) row[i] = neutral;
    }
    // Horizontal pass over buf (window start of output c is buf[c * sw]).
    float* out = y + r * ow;
    int64_t c = 0;
    if (p.sw == 2) {
      // Window start of output c + i is buf[2 (c + i)]: the even elements of two loads per tap (the buffer has a
      // vector of slack past the last window).
      for (; c + kW <= ow; c += kW) {
        const float* b = buf + 2 * c;
        V acc = S::even(S::load(b), S::load(b + kW));
        for (int64_t k = 1; k < p.kw; ++k) {
          const float* bk = b + k * p.dw;
          V v = S::even(S::load(bk), S::load(bk + kW));
          acc = kMax ? S::max(v, acc) : S::add(acc, v);
        }
        S::store(out + c, acc);
      }
    } else if (p.sw == 1) {
      for (; c + kW <= ow; c += kW) {
        V acc = S::load(buf + c);
        for (int64_t k = 1; k < p.kw; ++k) {
          V v = S::load(buf + c + k * p.dw);
          acc = kMax ? S::max(v, acc) : S::add(acc, v);
        }
        S::store(out + c, acc);
      }
    }
    for (; c < ow; ++c) {
      const float* b = buf + c * p.sw;
      float acc = b[0];
      for (int64_t k = 1; k < p.kw; ++k) {
        float v = b[k * p.dw];
        acc = kMax ? (v > acc ? v : acc) : acc + v;
      }
      out[c] = acc;
    }
    if (!kMax) {
      // Divide by the taps counted: rows x columns (validity is separable).
      for (c = 0; c < ow; ++c) {
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

void pool_plane(const Pool2dParams& p, const float* x, int64_t h, int64_t w, float* y, int64_t oh, int64_t ow,
                float* buf, int64_t buf_len) {
  const float neutral = p.is_max ? -std::numeric_limits<float>::infinity() : 0.f;
  for (int64_t i = 0; i < buf_len; ++i) buf[i] = neutral;
  if (p.is_max) {
    pool_plane_impl<true>(p, x, h, w, y, oh, ow, buf);
  } else {
    pool_plane_impl<false>(p, x, h, w, y, oh, ow, buf);
  }
}

const PoolTable* make_table(core::Isa isa, const char* name) {
  static const PoolTable t{isa, name, &pool_plane};
  return &t;
}

}  // namespace
}  // namespace kestrel::kernels::cpu
