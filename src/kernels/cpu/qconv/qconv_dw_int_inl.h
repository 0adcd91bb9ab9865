// The exact integer int8 depthwise kernel for 3x3 and 5x5 windows at stride 1 or 2 (dilation 1):
// per output row and block of L outputs, each kernel row's input bytes are gathered so that int32
// lane p holds the 4 bytes x[p * s + 0..3] (a 32-bit-lane permute, then an in-lane byte shuffle),
// and one u8 x s8 dot product of 4 (vpdpbusd, or two vpmaddwd without VNNI: never saturates) adds
// 4 taps of all L outputs. Other windows fall back to the float kernel of qconv_dw_inl.h. Included
// by the x86 per-ISA units only; the vector traits at the end match the unit's flags.
#pragma once

// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 headers (the self-initialized
// _mm512_undefined_*() placeholders once inlined); not our code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/qconv/qconv_dw.h"
#include "kernels/cpu/qconv/qconv_dw_inl.h"

namespace kestrel::kernels::cpu::qconv_detail {
namespace {

// The zero-point-padded plane: rows [0, ph) x columns [0, pw) of the windows' reach, the input at
// (r - pad_top, c - pad_left) or x_zp outside it (so padded taps cancel against x_zp * sum(w)).
// Rows are contiguous at pitch pw; kDwIntSlack bytes past the end keep the last block's loads in
// bounds (the lanes they feed are never stored).
constexpr int64_t kDwIntSlack = 128;

inline void fill_plane_u8(const QDwPlane& p, int64_t ph, int64_t pw, uint8_t* buf) {
  const uint8_t zp = p.x_zp;
  const int64_t c0 = std::min<int64_t>(std::max<int64_t>(p.pad_left, 0), pw);
  const int64_t c1 = std::max<int64_t>(std::min<int64_t>(p.pad_left + p.iw, pw), c0);
  for (int64_t r = 0; r < ph; ++r) {
    uint8_t* row = buf + r * pw;
    const int64_t iy = r - p.pad_top;
    if (iy < 0 || iy >= p.ih) {
      std::memset(row, zp, static_cast<size_t>(pw));
      continue;
    }
    std::memset(row, zp, static_cast<size_t>(c0));
    std::memcpy(row + c0, p.x + iy * p.iw + (c0 - p.pad_left), static_cast<size_t>(c1 - c0));
    std::memset(row + c1, zp, static_cast<size_t>(pw - c1));
  }
  std::memset(buf + ph * pw, zp, kDwIntSlack);
}

// V: the vector traits (kLanes int32 outputs per block). K: window size, S: stride.
template <class V, int K, int S>
void dw_int_plane(const QDwPlane& p) {
  constexpr int kQuads = (K + 3) / 4;
  constexpr int L = V::kLanes;
  const int64_t ph = (p.oh - 1) * S + K, pw = (p.ow - 1) * S + K;
  uint8_t* buf = reinterpret_cast<uint8_t*>(p.scratch);
  fill_plane_u8(p, ph, pw, buf);
  // Lane k of 128 bits holds outputs 4k..4k+3, which read bytes from 4k * S: 32-bit words
  // k * S + 0..3 of the load, then in-lane bytes j * S + b (+ 4 for the second quad).
  const typename V::Vec perm = V::perm_index(S);
  typename V::Vec shuf[kQuads];
  for (int q = 0; q < kQuads; ++q) shuf[q] = V::shuffle_index(S, 4 * q);
  typename V::W w[K][kQuads];
  for (int ky = 0; ky < K; ++ky)
    for (int q = 0; q < kQuads; ++q) w[ky][q] = V::weight(p.wq[ky * 2 + q]);
  // sum((x - x_zp) * w) + bias = sum(x * w) + (bias - x_zp * sum(w)); wrapping arithmetic, as the
  // sum itself wraps only when the true result does not fit int32.
  const int32_t bias = static_cast<int32_t>(static_cast<uint32_t>(p.bias) -
                                            static_cast<uint32_t>(p.x_zp) * static_cast<uint32_t>(p.wsum));
  const typename V::Vec vbias = V::set1(bias);
  const typename V::Out out = V::out_params(p);
  const int64_t ow = p.ow;
  for (int64_t oy = 0; oy < p.oh; ++oy) {
    const uint8_t* rows = buf + oy * S * pw;
    for (int64_t ox0 = 0; ox0 < ow; ox0 += L) {
      typename V::Vec acc = vbias;
      const uint8_t* src = rows + ox0 * S;
#pragma GCC unroll 5
      for (int ky = 0; ky < K; ++ky) {
        const typename V::Vec g = V::gather_words(src + ky * pw, perm);
#pragma GCC unroll 2
        for (int q = 0; q < kQuads; ++q) acc = V::dot(acc, V::shuffle(g, shuf[q]), w[ky][q]);
      }
      V::store(acc, out, p, oy * ow + ox0, static_cast<int>(std::min<int64_t>(L, ow - ox0)));
    }
  }
}

// The int kernel when it applies (packed weights present, square 3x3 / 5x5, stride 1 or 2 in
// both directions, no dilation), else the float kernel of qconv_dw_inl.h.
template <class V>
void dw_int_dispatch(const QDwPlane& p) {
  const bool fits = p.wq && p.kh == p.kw && (p.kh == 3 || p.kh == 5) && p.sh == p.sw && (p.sh == 1 || p.sh == 2) &&
                    p.dh == 1 && p.dw == 1;
  if (!fits) return qdw_plane(p);
  if (p.kh == 3) return p.sh == 1 ? dw_int_plane<V, 3, 1>(p) : dw_int_plane<V, 3, 2>(p);
  return p.sh == 1 ? dw_int_plane<V, 5, 1>(p) : dw_int_plane<V, 5, 2>(p);
}

// Requantization constants shared by the traits.
struct DwOut {
  float scale, lo, hi;  // lo / hi: the clamp minus the zero point
  int32_t zp;
  bool i32;
};

inline DwOut dw_out_params(const QDwPlane& p) {
  DwOut o;
  o.scale = p.scale;
  o.lo = static_cast<float>(p.lo - p.y_zp);
  o.hi = static_cast<float>(p.hi - p.y_zp);
  o.zp = p.y_zp;
  o.i32 = p.out == QOut::kI32;
  return o;
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
// 16 outputs per block in a zmm register.
template <bool kVnni>
struct V512 {
  static constexpr int kLanes = 16;
  using Vec = __m512i;
  struct W {
    __m512i a, b;  // VNNI: a = the 4 weights; else a = (w0, w2), b = (w1, w3) as int16 pairs
  };
  using Out = DwOut;
  static Vec set1(int32_t v) { return _mm512_set1_epi32(v); }
  static Vec perm_index(int s) {
    alignas(64) int32_t idx[16];
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 4; ++j) idx[k * 4 + j] = k * s + j;
    return _mm512_load_si512(idx);
  }
  static Vec shuffle_index(int s, int off) {
    alignas(64) int8_t idx[64];
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 4; ++j)
        for (int b = 0; b < 4; ++b) idx[k * 16 + j * 4 + b] = static_cast<int8_t>(j * s + b + off);
    return _mm512_load_si512(idx);
  }
  static W weight(int32_t packed) {
    W w;
    if constexpr (kVnni) {
      w.a = _mm512_set1_epi32(packed);
      w.b = w.a;
    } else {
      const auto t = [&](int i) { return static_cast<int8_t>(static_cast<uint32_t>(packed) >> (8 * i)); };
      w.a = _mm512_set1_epi32(static_cast<int32_t>(static_cast<uint16_t>(t(0)) |
                                                   (static_cast<uint32_t>(static_cast<uint16_t>(t(2))) << 16)));
      w.b = _mm512_set1_epi32(static_cast<int32_t>(static_cast<uint16_t>(t(1)) |
                                                   (static_cast<uint32_t>(static_cast<uint16_t>(t(3))) << 16)));
    }
    return w;
  }
  static Vec gather_words(const uint8_t* src, Vec perm) {
    return _mm512_permutexvar_epi32(perm, _mm512_loadu_si512(src));
  }
  static Vec shuffle(Vec g, Vec idx) { return _mm512_shuffle_epi8(g, idx); }
  static Vec dot(Vec acc, Vec x, const W& w) {
#if defined(__AVX512VNNI__)
    if constexpr (kVnni) return _mm512_dpbusd_epi32(acc, x, w.a);
#endif
    const __m512i even = _mm512_and_si512(x, _mm512_set1_epi16(0x00ff));
    const __m512i odd = _mm512_srli_epi16(x, 8);
    return _mm512_add_epi32(acc, _mm512_add_epi32(_mm512_madd_epi16(even, w.a), _mm512_madd_epi16(odd, w.b)));
  }
  static Out out_params(const QDwPlane& p) {
    return dw_out_params(p);
  }
  static void store(Vec acc, const Out& o, const QDwPlane& p, int64_t at, int n) {
    const __mmask16 m = n == 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1);
    if (o.i32) {
      _mm512_mask_storeu_epi32(static_cast<int32_t*>(p.y) + at, m, acc);
      return;
    }
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), _mm512_set1_ps(o.scale));
    f = _mm512_min_ps(_mm512_max_ps(f, _mm512_set1_ps(o.lo)), _mm512_set1_ps(o.hi));
    // Round half to even (default MXCSR) like nearbyint; the result is within [0, 255].
    const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), _mm512_set1_epi32(o.zp));
    _mm512_mask_cvtusepi32_storeu_epi8(static_cast<uint8_t*>(p.y) + at, m, q);
  }
};
#endif

#if defined(__AVX2__)
// 8 outputs per block in a ymm register.
template <bool kVnni>
struct V256 {
  static constexpr int kLanes = 8;
  using Vec = __m256i;
  struct W {
    __m256i a, b;
  };
  using Out = DwOut;
  static Vec set1(int32_t v) { return _mm256_set1_epi32(v); }
  static Vec perm_index(int s) { return _mm256_setr_epi32(0, 1, 2, 3, s, s + 1, s + 2, s + 3); }
  static Vec shuffle_index(int s, int off) {
    alignas(32) int8_t idx[32];
    for (int k = 0; k < 2; ++k)
      for (int j = 0; j < 4; ++j)
        for (int b = 0; b < 4; ++b) idx[k * 16 + j * 4 + b] = static_cast<int8_t>(j * s + b + off);
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(idx));
  }
  static W weight(int32_t packed) {
    W w;
    if constexpr (kVnni) {
      w.a = _mm256_set1_epi32(packed);
      w.b = w.a;
    } else {
      const auto t = [&](int i) { return static_cast<int8_t>(static_cast<uint32_t>(packed) >> (8 * i)); };
      w.a = _mm256_set1_epi32(static_cast<int32_t>(static_cast<uint16_t>(t(0)) |
                                                   (static_cast<uint32_t>(static_cast<uint16_t>(t(2))) << 16)));
      w.b = _mm256_set1_epi32(static_cast<int32_t>(static_cast<uint16_t>(t(1)) |
                                                   (static_cast<uint32_t>(static_cast<uint16_t>(t(3))) << 16)));
    }
    return w;
  }
  static Vec gather_words(const uint8_t* src, Vec perm) {
    return _mm256_permutevar8x32_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)), perm);
  }
  static Vec shuffle(Vec g, Vec idx) { return _mm256_shuffle_epi8(g, idx); }
  static Vec dot(Vec acc, Vec x, const W& w) {
#if defined(__AVXVNNI__)
    if constexpr (kVnni) return _mm256_dpbusd_avx_epi32(acc, x, w.a);
#endif
    const __m256i even = _mm256_and_si256(x, _mm256_set1_epi16(0x00ff));
    const __m256i odd = _mm256_srli_epi16(x, 8);
    return _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(even, w.a), _mm256_madd_epi16(odd, w.b)));
  }
  static Out out_params(const QDwPlane& p) {
    return dw_out_params(p);
  }
  static void store(Vec acc, const Out& o, const QDwPlane& p, int64_t at, int n) {
    if (o.i32) {
      int32_t* y = static_cast<int32_t*>(p.y) + at;
      if (n == 8) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), acc);
      } else {
        const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        _mm256_maskstore_epi32(reinterpret_cast<int*>(y), m, acc);
      }
      return;
    }
    __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), _mm256_set1_ps(o.scale));
    f = _mm256_min_ps(_mm256_max_ps(f, _mm256_set1_ps(o.lo)), _mm256_set1_ps(o.hi));
    const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(f), _mm256_set1_epi32(o.zp));
    // q is within [0, 255]: both packs are exact.
    const __m128i h = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const __m128i b = _mm_packus_epi16(h, h);
    uint8_t* y = static_cast<uint8_t*>(p.y) + at;
    if (n == 8) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(y), b);
    } else {
      alignas(16) uint8_t tmp[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(tmp), b);
      std::memcpy(y, tmp, static_cast<size_t>(n));
    }
  }
};
#endif

}  // namespace
}  // namespace kestrel::kernels::cpu::qconv_detail
