// Winograd F(2x2, 3x3) input and output transforms written once over a vector-ops traits type S (included by the
// per-ISA depthwise_*.cc units after depthwise_blocked_inl.h). Vectors run over W consecutive tiles of one tile row:
// each input row is split into its even and odd columns first, so the four column taps of tile tx are the
// contiguous runs even[tx], odd[tx], even[tx + 1], odd[tx + 1]. The output transform interleaves the even and odd
// output columns back into whole vectors of a row. Both were scalar loops over each column at first: vectorized,
// SqueezeNet's 27x27 32 -> 128 conv went 265-276 -> 206-214 us and its 13x13 ones 138-142 -> 113-117 and 213-222 ->
// 179-188 (AVX-512, kestrel_conv_bench, two alternating runs).
#pragma once

#include <algorithm>

#include "kernels/cpu/conv/depthwise.h"
#include "kernels/cpu/conv/depthwise_blocked_inl.h"

namespace kestrel::kernels::cpu::conv_detail {
namespace {

// V[xi][c][t] = (B^T d B)[xi] for channels [c0, c1), tiles of tile rows [ty0, ty1) (t counted from ty0).
template <class S>
void winograd_input(const WinogradArgs& a, int64_t c0, int64_t c1) {
  using V = typename S::V;
  constexpr int W = S::kWidth;
  const int64_t tw = a.tw, nt = (a.ty1 - a.ty0) * tw, half = winograd_half_row(tw, W);
  float* ev = a.row_scratch;  // [4][half] even columns, then [4][half] odd columns
  float* od = ev + 4 * half;
  for (int64_t c = c0; c < c1; ++c) {
    const float* xc = a.x + c * a.ih * a.iw;
    for (int64_t ty = a.ty0; ty < a.ty1; ++ty) {
      // Padded column 2j (2j + 1) of each input row into e[j] (o[j]), W columns of each per deinterleave.
      for (int i = 0; i < 4; ++i) {
        const int64_t iy = 2 * ty + i - a.pad_top;
        float* e = ev + i * half;
        float* o = od + i * half;
        if (iy < 0 || iy >= a.ih) {
          for (int64_t j = 0; j < half; j += W) S::store(e + j, S::zero()), S::store(o + j, S::zero());
          continue;
        }
        const float* xr = xc + iy * a.iw;
        for (int64_t j = 0; j < half; j += W) {
          V ve, vo;
          S::deinterleave(load_padded<S>(xr, a.iw, 2 * j - a.pad_left),
                          load_padded<S>(xr, a.iw, 2 * j + W - a.pad_left), ve, vo);
          S::store(e + j, ve);
          S::store(o + j, vo);
        }
      }
      for (int64_t tx = 0; tx < tw; tx += W) {
        const int n = tw - tx < W ? static_cast<int>(tw - tx) : W;
        V t[4][4];
        for (int i = 0; i < 4; ++i) {
          const V d0 = S::load(ev + i * half + tx), d1 = S::load(od + i * half + tx);
          const V d2 = S::load(ev + i * half + tx + 1), d3 = S::load(od + i * half + tx + 1);
          t[i][0] = S::sub(d0, d2);
          t[i][1] = S::add(d1, d2);
          t[i][2] = S::sub(d2, d1);
          t[i][3] = S::sub(d1, d3);
        }
        const int64_t at = c * nt + (ty - a.ty0) * tw + tx, plane = a.c * nt;
        for (int q = 0; q < 4; ++q) {
          S::store_n(a.v + (0 * 4 + q) * plane + at, S::sub(t[0][q], t[2][q]), n);
          S::store_n(a.v + (1 * 4 + q) * plane + at, S::add(t[1][q], t[2][q]), n);
          S::store_n(a.v + (2 * 4 + q) * plane + at, S::sub(t[2][q], t[1][q]), n);
          S::store_n(a.v + (3 * 4 + q) * plane + at, S::sub(t[1][q], t[3][q]), n);
        }
      }
    }
  }
}

// y = act(A^T M A + bias + residual) for output channels [m0, m1) and the chunk's tile rows.
template <class S>
void winograd_output(const WinogradArgs& a, int64_t m0, int64_t m1) {
  using V = typename S::V;
  constexpr int W = S::kWidth;
  const int64_t tw = a.tw, nt = (a.ty1 - a.ty0) * tw, plane = a.m * nt;
  with_activation<S>(a.activation, a.act_alpha, a.act_beta, [&](auto act) {
    for (int64_t m = m0; m < m1; ++m) {
      const V bias = S::set1(a.bias ? a.bias[m] : 0.f);
      float* ym = a.y + m * a.oh * a.ow;
      const float* res = a.residual ? a.residual + m * a.oh * a.ow : nullptr;
      for (int64_t ty = a.ty0; ty < a.ty1; ++ty) {
        for (int64_t tx = 0; tx < tw; tx += W) {
          const int n = tw - tx < W ? static_cast<int>(tw - tx) : W;
          const float* src = a.mt + m * nt + (ty - a.ty0) * tw + tx;
          V s0[4], s1[4];
          for (int i = 0; i < 4; ++i) {
            const V v0 = S::load_n(src + (i * 4 + 0) * plane, n), v1 = S::load_n(src + (i * 4 + 1) * plane, n);
            const V v2 = S::load_n(src + (i * 4 + 2) * plane, n), v3 = S::load_n(src + (i * 4 + 3) * plane, n);
            s0[i] = S::add(S::add(v0, v1), v2);
            s1[i] = S::sub(S::sub(v1, v2), v3);
          }
          // Output row 2ty + r, columns 2tx + 2l (even) and 2tx + 2l + 1 (odd) for tile l: interleaved into two
          // vectors of consecutive columns, then residual, activation and a store of the columns inside the row.
          const V even[2] = {S::add(S::add(S::add(s0[0], s0[1]), s0[2]), bias),
                             S::add(S::sub(S::sub(s0[1], s0[2]), s0[3]), bias)};
          const V odd[2] = {S::add(S::add(S::add(s1[0], s1[1]), s1[2]), bias),
                            S::add(S::sub(S::sub(s1[1], s1[2]), s1[3]), bias)};
          const int64_t cols = std::min<int64_t>(2 * n, a.ow - 2 * tx);
          const int n0 = static_cast<int>(std::min<int64_t>(cols, W)), n1 = static_cast<int>(cols - n0);
          for (int r = 0; r < 2; ++r) {
            const int64_t oy = 2 * ty + r;
            if (oy >= a.oh) break;
            const int64_t at = oy * a.ow + 2 * tx;
            V lo, hi;
            S::interleave(even[r], odd[r], lo, hi);
            if (res) lo = S::add(lo, S::load_n(res + at, n0));
            S::store_n(ym + at, act(lo), n0);
            if (n1 > 0) {
              if (res) hi = S::add(hi, S::load_n(res + at + W, n1));
              S::store_n(ym + at + W, act(hi), n1);
            }
          }
        }
      }
    }
  });
}

}  // namespace
}  // namespace kestrel::kernels::cpu::conv_detail
