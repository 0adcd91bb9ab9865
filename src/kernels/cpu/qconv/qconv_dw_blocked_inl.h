// The blocked small-plane int8 depthwise kernel of qconv_dw_blocked.h, written once for two vector
// widths: T512 (AVX-512: one 16-lane vector per pixel) and T256 (AVX2: the 16 channels as two
// 8-lane halves, each half a pass of its own over its own buffer). Included by
// qconv_dw_blocked_avx512.cc and qconv_dw_blocked_avx2.cc, compiled with their flags.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/lane_masks.h"
#include "kernels/cpu/qconv/qconv_dw_blocked.h"

namespace kestrel::kernels::cpu::qconv_detail {
namespace {

// Where pixel q (< 64) of a transposed chunk sits: row q % 16 of 64 bytes, 16-byte lane q / 16.
inline int64_t chunk_offset(int64_t q) {
  return ((q % 16) * 4 + q / 16) * 16;
}

// In each 128-bit lane, the 16x16 byte matrix whose row i is lane-bytes of r[i] becomes its
// transpose: byte i of z[j] = byte j of r[i]. Four rounds of unpacks (64 instructions).
template <class T>
void transpose16(const typename T::I* r, typename T::I* z) {
  typename T::I a[8], b[8], e[4][4], f[2][4], g[2][4];
  for (int i = 0; i < 8; ++i) {
    a[i] = T::unpacklo8(r[2 * i], r[2 * i + 1]);  // 16-bit j: rows 2i, 2i+1 of column j
    b[i] = T::unpackhi8(r[2 * i], r[2 * i + 1]);  // columns 8 + j
  }
  for (int q = 0; q < 4; ++q) {  // 32-bit t of e[q][h]: rows 4q..4q+3 of column 4h + t
    e[q][0] = T::unpacklo16(a[2 * q], a[2 * q + 1]);
    e[q][1] = T::unpackhi16(a[2 * q], a[2 * q + 1]);
    e[q][2] = T::unpacklo16(b[2 * q], b[2 * q + 1]);
    e[q][3] = T::unpackhi16(b[2 * q], b[2 * q + 1]);
  }
  for (int o = 0; o < 2; ++o)
    for (int h = 0; h < 4; ++h) {  // 64-bit t: rows 8o..8o+7 of column 4h + t (f) and 4h + 2 + t (g)
      f[o][h] = T::unpacklo32(e[2 * o][h], e[2 * o + 1][h]);
      g[o][h] = T::unpackhi32(e[2 * o][h], e[2 * o + 1][h]);
    }
  for (int h = 0; h < 4; ++h) {
    z[4 * h + 0] = T::unpacklo64(f[0][h], f[1][h]);
    z[4 * h + 1] = T::unpackhi64(f[0][h], f[1][h]);
    z[4 * h + 2] = T::unpacklo64(g[0][h], g[1][h]);
    z[4 * h + 3] = T::unpackhi64(g[0][h], g[1][h]);
  }
}

// Requantization of the exact sums, as the per-plane kernels do (round half to even), for the
// channels of one pass (kLanes of them from `first`).
template <class T>
struct Epilogue {
  typename T::I bias, yzp;
  typename T::F scale, lo, hi;
  Epilogue(const QDwBlock& b, int first)
      : bias(T::loadu_i(b.bias + first)),
        yzp(T::set1_i(b.y_zp)),
        scale(T::loadu(b.scale + first)),
        lo(T::set1(static_cast<float>(b.lo - b.y_zp))),
        hi(T::set1(static_cast<float>(b.hi - b.y_zp))) {}
  // The kLanes output bytes of one pixel to dst.
  void operator()(typename T::F acc, uint8_t* dst) const {
    const typename T::I s = T::add_i(T::cvt_i(acc), bias);
    typename T::F f = T::mul(T::cvt_f(s), scale);
    f = T::min(T::max(f, lo), hi);
    T::store_bytes(dst, T::add_i(T::cvt_i(f), yzp));
  }
};

// N output columns of one pass from `base` (the padded buffer at the first one's window), into
// the transposed output chunk at pixels q0 .. (bytes first .. of each pixel).
template <class T, int N>
void taps(const QDwBlock& b, int64_t pw, const float* base, const float* w, const Epilogue<T>& ep, int64_t q0,
          uint8_t* out) {
  constexpr int L = T::kLanes;
  typename T::F acc[N];
  for (auto& a : acc) a = T::zero();
  const int64_t col = static_cast<int64_t>(b.sw) * L, row = static_cast<int64_t>(b.dh) * pw * L;
  const int64_t tap = static_cast<int64_t>(b.dw) * L;
  for (int ky = 0; ky < b.kh; ++ky, base += row)
    for (int kx = 0; kx < b.kw; ++kx, w += kQDwBlockChannels) {
      const typename T::F wv = T::loadu(w);
      const float* src = base + kx * tap;
      for (int j = 0; j < N; ++j) acc[j] = T::fmadd(T::load(src + j * col), wv, acc[j]);
    }
  for (int j = 0; j < N; ++j) ep(acc[j], out + chunk_offset(q0 + j));
}

// The same for stride 1, no dilation and KW columns: each input pixel of a window row is loaded once
// and feeds the (up to KW) outputs it is a tap of, with the row's KW weights in registers (the
// generic loop loads an input for every FMA, and the loads bound it).
template <class T, int N, int KW>
void taps_s1(const QDwBlock& b, int64_t pw, const float* base, const float* w, const Epilogue<T>& ep, int64_t q0,
             uint8_t* out) {
  constexpr int L = T::kLanes;
  typename T::F acc[N];
  for (auto& a : acc) a = T::zero();
  const int64_t row = static_cast<int64_t>(b.dh) * pw * L;
  for (int ky = 0; ky < b.kh; ++ky, base += row, w += KW * kQDwBlockChannels) {
    typename T::F wv[KW];
    for (int kx = 0; kx < KW; ++kx) wv[kx] = T::loadu(w + kx * kQDwBlockChannels);
    for (int i = 0; i < N + KW - 1; ++i) {
      const typename T::F v = T::load(base + i * L);
      for (int kx = 0; kx < KW; ++kx)
        if (i - kx >= 0 && i - kx < N) acc[i - kx] = T::fmadd(v, wv[kx], acc[i - kx]);
    }
  }
  for (int j = 0; j < N; ++j) ep(acc[j], out + chunk_offset(q0 + j));
}

template <class T, int N>
void columns(const QDwBlock& b, int64_t pw, const float* base, const float* w, const Epilogue<T>& ep, int64_t q0,
             uint8_t* out) {
  if (b.sw == 1 && b.dw == 1 && b.kw == 3) return taps_s1<T, N, 3>(b, pw, base, w, ep, q0, out);
  if (b.sw == 1 && b.dw == 1 && b.kw == 5) return taps_s1<T, N, 5>(b, pw, base, w, ep, q0, out);
  taps<T, N>(b, pw, base, w, ep, q0, out);
}

// columns<T, n> for a run-time n in [1, N]: a chain of compile-time cases that inlines like a switch
// (a table of function pointers indexed by n was 1.1-1.3x slower: the calls did not inline and the
// epilogue constants were reloaded per call; BM_QConvDw 960 ch 7x7).
template <class T, int N>
inline __attribute__((always_inline)) void columns_upto(int64_t n, const QDwBlock& b, int64_t pw, const float* base,
                                                        const float* w, const Epilogue<T>& ep, int64_t q0,
                                                        uint8_t* out) {
  if constexpr (N > 1) {
    if (n < N) return columns_upto<T, N - 1>(n, b, pw, base, w, ep, q0, out);
  }
  columns<T, N>(b, pw, base, w, ep, q0, out);
}

template <class T>
void qdw_block(const QDwBlock& b) {
  constexpr int L = T::kLanes, kPasses = kQDwBlockChannels / L, kRegs = 64 / T::kBytes;
  const QDwBlockGeometry geo(b.oh, b.ow, b.kh, b.kw, b.sh, b.sw, b.dh, b.dw);
  const int64_t pw = geo.pw, hw = b.ih * b.iw, p_out = b.oh * b.ow, pass_floats = geo.ph * pw * L;
  float* buf = b.scratch;  // kPasses buffers of [ph][pw][L]
  uint8_t* tin = reinterpret_cast<uint8_t*>(buf + geo.ph * pw * kQDwBlockChannels);
  uint8_t* tout = tin + 1024;
  // Zeros where the input does not land (the pads, and the columns past it the last pass reads).
  const typename T::F zero = T::zero();
  const auto clear = [&](int64_t y, int64_t x0, int64_t x1) {
    for (int h = 0; h < kPasses; ++h)
      for (int64_t x = x0; x < x1; ++x) T::store(buf + h * pass_floats + (y * pw + x) * L, zero);
  };
  const int64_t r0 = std::min(b.pad_top, geo.ph), r1 = std::min(b.pad_top + b.ih, geo.ph);
  const int64_t c0 = std::min(b.pad_left, pw), c1 = std::min(b.pad_left + b.iw, pw);
  for (int64_t y = 0; y < geo.ph; ++y) {
    if (y < r0 || y >= r1) {
      clear(y, 0, pw);
    } else {
      clear(y, 0, c0);
      clear(y, c1, pw);
    }
  }

  // Input: 64 pixels of every channel at a time, transposed, shifted by the zero point, to floats.
  typename T::I r[16 * kRegs], z[16];
  int64_t iy = 0, ix = 0;
  for (int64_t p0 = 0; p0 < hw; p0 += 64) {
    const int64_t n = std::min<int64_t>(64, hw - p0);
    T::load_rows(b.x + p0, hw, n, b.channels, r);  // r[c * kRegs + k]: bytes 64/kRegs * k.. of channel c
    for (int k = 0; k < kRegs; ++k) {
      typename T::I rk[16];
      for (int c = 0; c < 16; ++c) rk[c] = r[c * kRegs + k];
      transpose16<T>(rk, z);
      for (int j = 0; j < 16; ++j) T::store_i(tin + j * 64 + k * T::kBytes, z[j]);
    }
    for (int64_t q = 0; q < n; ++q) {
      const int64_t by = iy + b.pad_top, bx = ix + b.pad_left;
      if (by < geo.ph && bx < pw)
        for (int h = 0; h < kPasses; ++h)
          T::store(buf + h * pass_floats + (by * pw + bx) * L, T::pixel(tin + chunk_offset(q) + h * L, b.x_zp));
      if (++ix == b.iw) ix = 0, ++iy;
    }
  }

  // Taps: per pass, up to 8 output columns x L channels at a time, one FMA per tap and column.
  for (int h = 0; h < kPasses; ++h) {
    const Epilogue<T> ep(b, h * L);
    const float* hbuf = buf + h * pass_floats;
    const float* w = b.w + h * L;
    for (int64_t oy = 0; oy < b.oh; ++oy)
      for (int64_t ox0 = 0; ox0 < b.ow; ox0 += kQDwBlockCols) {
        const float* base = hbuf + (oy * b.sh * pw + ox0 * b.sw) * L;
        uint8_t* out = tout + h * L;
        const int64_t q0 = oy * b.ow + ox0;
        columns_upto<T, kQDwBlockCols>(std::min<int64_t>(kQDwBlockCols, b.ow - ox0), b, pw, base, w, ep, q0, out);
      }
  }

  // Output: the pixel-major bytes transposed back to one row of oh * ow bytes per channel.
  for (int k = 0; k < kRegs; ++k) {
    typename T::I rk[16];
    for (int j = 0; j < 16; ++j) rk[j] = T::load_i(tout + j * 64 + k * T::kBytes);
    transpose16<T>(rk, z);
    for (int c = 0; c < 16; ++c) r[c * kRegs + k] = z[c];
  }
  T::store_rows(r, b.y, p_out, b.channels);
}

}  // namespace
}  // namespace kestrel::kernels::cpu::qconv_detail
