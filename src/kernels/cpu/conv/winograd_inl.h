// Winograd F(2x2, 3x3) input and output transforms written once over a vector-ops traits type S (included by the
// per-ISA depthwise_*.cc units after depthwise_blocked_inl.h). Vectors run over W consecutive tiles of one tile row:
// each input row is split into its even and odd columns first, so the four column taps of tile tx are the
// contiguous runs even[tx], odd[tx], even[tx + 1], odd[tx + 1].
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
  const int64_t tw = a.tw, nt = (a.ty1 - a.ty0) * tw, half = tw + 1 + W;
  float* ev = a.row_scratch;  // [4][half] even columns, then [4][half] odd columns
  float* od = ev + 4 * half;
  for (int64_t c = c0; c < c1; ++c) {
    const float* xc = a.x + c * a.ih * a.iw;
    for (int64_t ty = a.ty0; ty < a.ty1; ++ty) {
      for (int i = 0; i < 4; ++i) {
        const int64_t iy = 2 * ty + i - a.pad_top;
        float* e = ev + i * half;
        float* o = od + i * half;
        if (iy < 0 || iy >= a.ih) {
          std::fill(e, e + half, 0.f);
          std::fill(o, o + half, 0.f);
          continue;
        }
        const float* xr = xc + iy * a.iw;
        // Columns j with both 2j - pad_left and 2j + 1 - pad_left inside the row: [j0, j1).
        const int64_t j0 = std::min(half, (a.pad_left + 1) / 2);
        const int64_t j1 = std::clamp<int64_t>((a.iw - 1 + a.pad_left) / 2, j0, half);
        for (int64_t j = 0; j < j0; ++j) {
          const int64_t x0 = 2 * j - a.pad_left, x1 = x0 + 1;
          e[j] = x0 >= 0 && x0 < a.iw ? xr[x0] : 0.f;
          o[j] = x1 >= 0 && x1 < a.iw ? xr[x1] : 0.f;
        }
        const float* xp = xr - a.pad_left;
        for (int64_t j = j0; j < j1; ++j) {
          e[j] = xp[2 * j];
          o[j] = xp[2 * j + 1];
        }
        for (int64_t j = j1; j < half; ++j) {
          const int64_t x0 = 2 * j - a.pad_left, x1 = x0 + 1;
          e[j] = x0 >= 0 && x0 < a.iw ? xr[x0] : 0.f;
          o[j] = x1 >= 0 && x1 < a.iw ? xr[x1] : 0.f;
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
  alignas(64) float o[4][W];
  with_activation<S>(a.activation, a.act_alpha, a.act_beta, [&](auto act) {
    for (int64_t m = m0; m < m1; ++m) {
      const V bias = S::set1(a.bias ? a.bias[m] : 0.f);
      float* ym = a.y + m * a.oh * a.ow;
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
          S::store(o[0], S::add(S::add(S::add(s0[0], s0[1]), s0[2]), bias));
          S::store(o[1], S::add(S::add(S::add(s1[0], s1[1]), s1[2]), bias));
          S::store(o[2], S::add(S::sub(S::sub(s0[1], s0[2]), s0[3]), bias));
          S::store(o[3], S::add(S::sub(S::sub(s1[1], s1[2]), s1[3]), bias));
          for (int r = 0; r < 2; ++r) {
            const int64_t oy = 2 * ty + r;
            if (oy >= a.oh) break;
            float* yr = ym + oy * a.ow;
            for (int l = 0; l < n; ++l) {
              const int64_t ox = 2 * (tx + l);
              yr[ox] = o[2 * r][l];
              if (ox + 1 < a.ow) yr[ox + 1] = o[2 * r + 1][l];
            }
          }
        }
      }
      // Residual and activation over the chunk's output rows (contiguous in the plane).
      const int64_t r0 = 2 * a.ty0 * a.ow, r1 = std::min(a.oh, 2 * a.ty1) * a.ow;
      if (!a.residual && a.activation == GemmActivation::kNone) continue;
      const float* res = a.residual ? a.residual + m * a.oh * a.ow : nullptr;
      for (int64_t p = r0; p < r1; p += W) {
        const int n = r1 - p < W ? static_cast<int>(r1 - p) : W;
        V v = S::load_n(ym + p, n);
        if (res) v = S::add(v, S::load_n(res + p, n));
        S::store_n(ym + p, act(v), n);
      }
    }
  });
}

}  // namespace
}  // namespace kestrel::kernels::cpu::conv_detail
