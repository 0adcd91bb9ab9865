// The blocked small-plane int8 depthwise kernel of qconv_dw_blocked.h, compiled with AVX-512.
// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 headers (the self-initialized
// _mm512_undefined_*() placeholders once inlined); not our code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "kernels/cpu/qconv/qconv_dw_blocked.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/lane_masks.h"

namespace kestrel::kernels::cpu::qconv_detail {

namespace {

// In each 128-bit lane, the 16x16 byte matrix whose row i is lane-bytes of r[i] becomes its
// transpose: byte i of z[j] = byte j of r[i]. Four rounds of unpacks (64 instructions).
void transpose16(const __m512i* r, __m512i* z) {
  __m512i a[8], b[8], e[4][4], f[2][4], g[2][4];
  for (int i = 0; i < 8; ++i) {
    a[i] = _mm512_unpacklo_epi8(r[2 * i], r[2 * i + 1]);  // 16-bit j: rows 2i, 2i+1 of column j
    b[i] = _mm512_unpackhi_epi8(r[2 * i], r[2 * i + 1]);  // columns 8 + j
  }
  for (int q = 0; q < 4; ++q) {  // 32-bit t of e[q][h]: rows 4q..4q+3 of column 4h + t
    e[q][0] = _mm512_unpacklo_epi16(a[2 * q], a[2 * q + 1]);
    e[q][1] = _mm512_unpackhi_epi16(a[2 * q], a[2 * q + 1]);
    e[q][2] = _mm512_unpacklo_epi16(b[2 * q], b[2 * q + 1]);
    e[q][3] = _mm512_unpackhi_epi16(b[2 * q], b[2 * q + 1]);
  }
  for (int o = 0; o < 2; ++o)
    for (int h = 0; h < 4; ++h) {  // 64-bit t: rows 8o..8o+7 of column 4h + t (f) and 4h + 2 + t (g)
      f[o][h] = _mm512_unpacklo_epi32(e[2 * o][h], e[2 * o + 1][h]);
      g[o][h] = _mm512_unpackhi_epi32(e[2 * o][h], e[2 * o + 1][h]);
    }
  for (int h = 0; h < 4; ++h) {
    z[4 * h + 0] = _mm512_unpacklo_epi64(f[0][h], f[1][h]);
    z[4 * h + 1] = _mm512_unpackhi_epi64(f[0][h], f[1][h]);
    z[4 * h + 2] = _mm512_unpacklo_epi64(g[0][h], g[1][h]);
    z[4 * h + 3] = _mm512_unpackhi_epi64(g[0][h], g[1][h]);
  }
}

// Where pixel q (< 64) of a transposed chunk sits: z[q % 16], 128-bit lane q / 16.
inline int64_t chunk_offset(int64_t q) {
  return ((q % 16) * 4 + q / 16) * 16;
}

// Requantization of the exact sums, as the per-plane kernels do (round half to even).
struct Epilogue {
  __m512i bias, yzp;
  __m512 scale, lo, hi;
  explicit Epilogue(const QDwBlock& b)
      : bias(_mm512_loadu_si512(b.bias)),
        yzp(_mm512_set1_epi32(b.y_zp)),
        scale(_mm512_loadu_ps(b.scale)),
        lo(_mm512_set1_ps(static_cast<float>(b.lo - b.y_zp))),
        hi(_mm512_set1_ps(static_cast<float>(b.hi - b.y_zp))) {}
  __m128i operator()(__m512 acc) const {
    const __m512i s = _mm512_add_epi32(_mm512_cvtps_epi32(acc), bias);
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(s), scale);
    f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
    return _mm512_cvtusepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(f), yzp));
  }
};

// N output columns from `base` (the padded buffer at the first one's window), into the transposed
// output chunk at pixels q0 ..
template <int N>
void taps(const QDwBlock& b, int64_t pw, const float* base, const Epilogue& ep, int64_t q0, uint8_t* out) {
  __m512 acc[N];
  for (auto& a : acc) a = _mm512_setzero_ps();
  const int64_t col = static_cast<int64_t>(b.sw) * kQDwBlockChannels;
  const int64_t row = static_cast<int64_t>(b.dh) * pw * kQDwBlockChannels;
  const int64_t tap = static_cast<int64_t>(b.dw) * kQDwBlockChannels;
  const float* w = b.w;
  for (int ky = 0; ky < b.kh; ++ky, base += row)
    for (int kx = 0; kx < b.kw; ++kx, w += kQDwBlockChannels) {
      const __m512 wv = _mm512_loadu_ps(w);
      const float* src = base + kx * tap;
      for (int j = 0; j < N; ++j) acc[j] = _mm512_fmadd_ps(_mm512_load_ps(src + j * col), wv, acc[j]);
    }
  for (int j = 0; j < N; ++j) _mm_store_si128(reinterpret_cast<__m128i*>(out + chunk_offset(q0 + j)), ep(acc[j]));
}

// The same for stride 1, no dilation and KW columns: each input pixel of a window row is loaded once
// and feeds the (up to KW) outputs it is a tap of, with the row's KW weights in registers (the
// generic loop loads an input for every FMA, and the loads bound it).
template <int N, int KW>
void taps_s1(const QDwBlock& b, int64_t pw, const float* base, const Epilogue& ep, int64_t q0, uint8_t* out) {
  __m512 acc[N];
  for (auto& a : acc) a = _mm512_setzero_ps();
  const int64_t row = static_cast<int64_t>(b.dh) * pw * kQDwBlockChannels;
  const float* w = b.w;
  for (int ky = 0; ky < b.kh; ++ky, base += row, w += KW * kQDwBlockChannels) {
    __m512 wv[KW];
    for (int kx = 0; kx < KW; ++kx) wv[kx] = _mm512_loadu_ps(w + kx * kQDwBlockChannels);
    for (int i = 0; i < N + KW - 1; ++i) {
      const __m512 v = _mm512_load_ps(base + i * kQDwBlockChannels);
      for (int kx = 0; kx < KW; ++kx)
        if (i - kx >= 0 && i - kx < N) acc[i - kx] = _mm512_fmadd_ps(v, wv[kx], acc[i - kx]);
    }
  }
  for (int j = 0; j < N; ++j) _mm_store_si128(reinterpret_cast<__m128i*>(out + chunk_offset(q0 + j)), ep(acc[j]));
}

template <int N>
void columns(const QDwBlock& b, int64_t pw, const float* base, const Epilogue& ep, int64_t q0, uint8_t* out) {
  if (b.sw == 1 && b.dw == 1 && b.kw == 3) return taps_s1<N, 3>(b, pw, base, ep, q0, out);
  if (b.sw == 1 && b.dw == 1 && b.kw == 5) return taps_s1<N, 5>(b, pw, base, ep, q0, out);
  taps<N>(b, pw, base, ep, q0, out);
}

void qdw_block_avx512(const QDwBlock& b) {
  const QDwBlockGeometry geo(b.oh, b.ow, b.kh, b.kw, b.sh, b.sw, b.dh, b.dw);
  const int64_t pw = geo.pw, hw = b.ih * b.iw, p_out = b.oh * b.ow;
  float* buf = b.scratch;
  uint8_t* tin = reinterpret_cast<uint8_t*>(buf + geo.ph * pw * kQDwBlockChannels);
  uint8_t* tout = tin + 1024;
  // Zeros where the input does not land (the pads, and the columns past it the last pass reads).
  const __m512 zero = _mm512_setzero_ps();
  const auto clear = [&](int64_t y, int64_t x0, int64_t x1) {
    for (int64_t x = x0; x < x1; ++x) _mm512_store_ps(buf + (y * pw + x) * kQDwBlockChannels, zero);
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
  const __m512i zp = _mm512_set1_epi32(b.x_zp);
  __m512i r[16], z[16];
  int64_t iy = 0, ix = 0;
  for (int64_t p0 = 0; p0 < hw; p0 += 64) {
    const int64_t n = std::min<int64_t>(64, hw - p0);
    const __mmask64 m = first_lanes(n);
    for (int c = 0; c < 16; ++c)
      r[c] = c < b.channels ? _mm512_maskz_loadu_epi8(m, b.x + c * hw + p0) : _mm512_setzero_si512();
    transpose16(r, z);
    for (int j = 0; j < 16; ++j) _mm512_store_si512(tin + j * 64, z[j]);
    for (int64_t q = 0; q < n; ++q) {
      const int64_t by = iy + b.pad_top, bx = ix + b.pad_left;
      if (by < geo.ph && bx < pw) {
        const __m512i v = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(tin + chunk_offset(q))));
        _mm512_store_ps(buf + (by * pw + bx) * kQDwBlockChannels, _mm512_cvtepi32_ps(_mm512_sub_epi32(v, zp)));
      }
      if (++ix == b.iw) ix = 0, ++iy;
    }
  }

  // Taps: up to 8 output columns x 16 channels per pass, one FMA per tap and column.
  const Epilogue ep(b);
  for (int64_t oy = 0; oy < b.oh; ++oy)
    for (int64_t ox0 = 0; ox0 < b.ow; ox0 += kQDwBlockCols) {
      const float* base = buf + (oy * b.sh * pw + ox0 * b.sw) * kQDwBlockChannels;
      uint8_t* out = tout;
      const int64_t q0 = oy * b.ow + ox0;
      switch (std::min<int64_t>(kQDwBlockCols, b.ow - ox0)) {
        case 1:
          columns<1>(b, pw, base, ep, q0, out);
          break;
        case 2:
          columns<2>(b, pw, base, ep, q0, out);
          break;
        case 3:
          columns<3>(b, pw, base, ep, q0, out);
          break;
        case 4:
          columns<4>(b, pw, base, ep, q0, out);
          break;
        case 5:
          columns<5>(b, pw, base, ep, q0, out);
          break;
        case 6:
          columns<6>(b, pw, base, ep, q0, out);
          break;
        case 7:
          columns<7>(b, pw, base, ep, q0, out);
          break;
        default:
          columns<8>(b, pw, base, ep, q0, out);
          break;
      }
    }

  // Output: the pixel-major bytes transposed back to one row of oh * ow bytes per channel.
  for (int j = 0; j < 16; ++j) r[j] = _mm512_load_si512(tout + j * 64);
  transpose16(r, z);
  const __mmask64 m = first_lanes(p_out);
  for (int c = 0; c < b.channels; ++c) _mm512_mask_storeu_epi8(b.y + c * p_out, m, z[c]);
}

}  // namespace

QDwBlockFn qdw_block_fn_avx512() {
  return qdw_block_avx512;
}

}  // namespace kestrel::kernels::cpu::qconv_detail
#endif
