// The direct int8 grouped convolution of qconv_grouped.h, compiled with AVX-512 VNNI.
// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 headers (the self-initialized
// _mm512_undefined_*() placeholders once inlined); not our code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/lane_masks.h"
#include "kernels/cpu/qconv/qconv_grouped.h"

namespace kestrel::kernels::cpu::qconv_detail {

namespace {

// The phase planes' geometry: phase (jy, jx) holds padded rows jy, jy + s, ... and columns jx,
// jx + s, ... of the window's reach; output (oy, ox) reads, for tap (ky, kx), phase (ky % s, kx % s)
// at word (oy + ky / s) * pws + ox + kx / s: the flat output f = oy * pws + ox plus a constant.
struct Geometry {
  int64_t phr, pws, nflat, ntmp, plane_words, tmp_bytes;
  Geometry(int64_t oh, int64_t ow, int k, int s, int64_t esize) {
    phr = ((oh - 1) * s + k + s - 1) / s;
    pws = ((ow - 1) * s + k + s - 1) / s;
    nflat = (oh - 1) * pws + ow;
    ntmp = (nflat + 15) / 16 * 16;
    plane_words = phr * pws;
    tmp_bytes = (kQgOutChannels * ntmp * esize + 63) / 64 * 64;
  }
  // Words of all phase planes plus 16 of slack (the last block's loads run past the last plane).
  int64_t words(int64_t cg, int s) const { return s * s * (cg / 4) * plane_words + 16; }
};

// 16 bytes of input row `row` (iw bytes) at columns ix0 + t * s (t < 16), the zero point outside
// the row. Lane t of the load reads row[ix0 + t]; masked-off lanes (outside the row, possibly
// before its start) are never accessed (AVX-512 masked loads do not fault on them).
inline __m128i row_bytes(const uint8_t* row, int64_t iw, int64_t ix0, int s, __m256i zp) {
  const uint8_t* at = reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(row) + static_cast<uintptr_t>(ix0));
  if (s == 1) {
    const int64_t lo = std::clamp<int64_t>(-ix0, 0, 16), hi = std::clamp<int64_t>(iw - ix0, 0, 16);
    const __m128i z = _mm256_castsi256_si128(zp);
    if (lo >= hi) return z;
    return _mm_mask_loadu_epi8(z, static_cast<__mmask16>(lanes_between(lo, hi)), at);
  }
  const int64_t lo = std::clamp<int64_t>(-ix0, 0, 32), hi = std::clamp<int64_t>(iw - ix0, 0, 32);
  const __m256i v = lo >= hi ? zp : _mm256_mask_loadu_epi8(zp, static_cast<__mmask32>(lanes_between(lo, hi)), at);
  return _mm256_cvtepi16_epi8(_mm256_and_si256(v, _mm256_set1_epi16(0x00ff)));  // bytes 0, 2, ..., 30
}

// The group's phase planes of channel quads: plane (jy, jx, q) word (rr, c) = the 4 bytes of
// channels 4q..4q+3 at input row rr * s + jy - pad_top, column c * s + jx - pad_left.
void build_planes(const QGroupedPlane& p, const Geometry& g, uint32_t* planes) {
  const int s = p.s;
  const int64_t cq = p.cg / 4, plane = p.ih * p.iw;
  const __m256i zp = _mm256_set1_epi8(static_cast<char>(p.x_zp));
  const __m512i zpw = _mm512_set1_epi8(static_cast<char>(p.x_zp));
  for (int jy = 0; jy < s; ++jy)
    for (int jx = 0; jx < s; ++jx)
      for (int64_t q = 0; q < cq; ++q) {
        uint32_t* dst = planes + ((jy * s + jx) * cq + q) * g.plane_words;
        const uint8_t* x0 = p.x + 4 * q * plane;
        for (int64_t rr = 0; rr < g.phr; ++rr, dst += g.pws) {
          const int64_t iy = rr * s + jy - p.pad_top;
          if (iy < 0 || iy >= p.ih) {
            for (int64_t c0 = 0; c0 < g.pws; c0 += 16)
              _mm512_mask_storeu_epi32(dst + c0, static_cast<__mmask16>(first_lanes(g.pws - c0)), zpw);
            continue;
          }
          const uint8_t* r0 = x0 + iy * p.iw;
          for (int64_t c0 = 0; c0 < g.pws; c0 += 16) {
            const int64_t ix0 = c0 * s + jx - p.pad_left;
            const __m128i a = row_bytes(r0, p.iw, ix0, s, zp), b = row_bytes(r0 + plane, p.iw, ix0, s, zp);
            const __m128i c = row_bytes(r0 + 2 * plane, p.iw, ix0, s, zp);
            const __m128i d = row_bytes(r0 + 3 * plane, p.iw, ix0, s, zp);
            const __m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
            const __m128i cd0 = _mm_unpacklo_epi8(c, d), cd1 = _mm_unpackhi_epi8(c, d);
            __m512i w = _mm512_castsi128_si512(_mm_unpacklo_epi16(ab0, cd0));
            w = _mm512_inserti32x4(w, _mm_unpackhi_epi16(ab0, cd0), 1);
            w = _mm512_inserti32x4(w, _mm_unpacklo_epi16(ab1, cd1), 2);
            w = _mm512_inserti32x4(w, _mm_unpackhi_epi16(ab1, cd1), 3);
            _mm512_mask_storeu_epi32(dst + c0, static_cast<__mmask16>(first_lanes(g.pws - c0)), w);
          }
        }
      }
}

void qgrouped(const QGroupedPlane& p) {
  const int s = p.s, k = p.k;
  const bool i32 = p.out == QOut::kI32;
  const int64_t esize = i32 ? 4 : 1, cq = p.cg / 4;
  const Geometry g(p.oh, p.ow, k, s, esize);
  uint32_t* planes = reinterpret_cast<uint32_t*>(p.scratch);
  uint8_t* tmp = p.scratch + g.words(p.cg, s) * 4;
  build_planes(p, g, planes);
  const float lo = static_cast<float>(p.lo - p.y_zp), hi = static_cast<float>(p.hi - p.y_zp);
  for (int64_t f0 = 0; f0 < g.nflat; f0 += 16) {
    __m512i acc[kQgOutChannels];
    for (auto& a : acc) a = _mm512_setzero_si512();
    const int32_t* wp = p.w;
    for (int64_t q = 0; q < cq; ++q)
      for (int ky = 0; ky < k; ++ky)
        for (int kx = 0; kx < k; ++kx, wp += kQgOutChannels) {
          const uint32_t* src = planes + ((ky % s * s + kx % s) * cq + q) * g.plane_words + (ky / s) * g.pws + kx / s;
          const __m512i v = _mm512_loadu_si512(src + f0);
#pragma GCC unroll 16
          for (int m = 0; m < kQgOutChannels; ++m) acc[m] = _mm512_dpbusd_epi32(acc[m], v, _mm512_set1_epi32(wp[m]));
        }
#pragma GCC unroll 16
    for (int m = 0; m < kQgOutChannels; ++m) {
      const __m512i sum = _mm512_add_epi32(acc[m], _mm512_set1_epi32(p.offset[m]));
      if (i32) {
        _mm512_storeu_si512(reinterpret_cast<int32_t*>(tmp) + m * g.ntmp + f0, sum);
        continue;
      }
      __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(sum), _mm512_set1_ps(p.scale[m]));
      f = _mm512_min_ps(_mm512_max_ps(f, _mm512_set1_ps(lo)), _mm512_set1_ps(hi));
      const __m512i q8 = _mm512_add_epi32(_mm512_cvtps_epi32(f), _mm512_set1_epi32(p.y_zp));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(tmp + m * g.ntmp + f0), _mm512_cvtusepi32_epi8(q8));
    }
  }
  // Rows of ow outputs out of the flat buffer (row pitch pws).
  const int64_t row_bytes_out = p.ow * esize;
  uint8_t* y = static_cast<uint8_t*>(p.y);
  for (int64_t m = 0; m < kQgOutChannels; ++m)
    for (int64_t oy = 0; oy < p.oh; ++oy) {
      const uint8_t* src = tmp + (m * g.ntmp + oy * g.pws) * esize;
      uint8_t* dst = y + (m * p.oh + oy) * row_bytes_out;
      for (int64_t j = 0; j < row_bytes_out; j += 64) {
        const __mmask64 mk = first_lanes(row_bytes_out - j);
        _mm512_mask_storeu_epi8(dst + j, mk, _mm512_maskz_loadu_epi8(mk, src + j));
      }
    }
}

}  // namespace

int64_t qgrouped_scratch_bytes(int64_t cg, int64_t oh, int64_t ow, int k, int s) {
  const Geometry g(oh, ow, k, s, 4);
  return g.words(cg, s) * 4 + g.tmp_bytes;
}

void qgrouped_pack_weights(const int8_t* w, int64_t cg, int k, int32_t* dst) {
  const int64_t taps = static_cast<int64_t>(k) * k;
  for (int64_t q = 0; q < cg / 4; ++q)
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t m = 0; m < kQgOutChannels; ++m) {
        uint32_t word = 0;
        for (int64_t i = 0; i < 4; ++i)
          word |= static_cast<uint32_t>(static_cast<uint8_t>(w[(m * cg + 4 * q + i) * taps + t])) << (8 * i);
        dst[(q * taps + t) * kQgOutChannels + m] = static_cast<int32_t>(word);
      }
}

QGroupedFn qgrouped_fn_avx512vnni() {
  return &qgrouped;
}

}  // namespace kestrel::kernels::cpu::qconv_detail
