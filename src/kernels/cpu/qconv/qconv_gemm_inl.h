// The NCHW int8 convolution GEMM (qconv_gemm.h) written once over an ISA traits type T and
// instantiated per ISA by qconv_gemm_*.cc.
//
// Include only from a kernel .cc; the unnamed namespace keeps each ISA's copy private to its
// translation unit (they are compiled with different -m flags and must never be merged).
//
// T provides: V (int32 accumulators of kLanes pixels), VX / VW (what load_x / bcast_w return),
// kLanes, kKg (4: u8 x s8 bytes, 2: u16 x s16), splat(int32), add(V, V), load_x(p) (kLanes groups of 4
// bytes), bcast_w(p) (one 4-byte group to every lane), dot(acc, x, w), and
// finish<I32>(acc, scale, ep, out, n): the epilogue of the first n pixels of one row; optionally
// full_tile<R, NE, I32>(...): the ISA's own version of tile<R, NE, I32> (same arguments); kColumnMax and
// column_tile<I32>(..., rows, cols): the last cols <= kColumnMax pixels of a panel, for all rows of a block.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "kernels/cpu/qconv/qconv_gemm.h"

#define KESTREL_QC_INLINE inline __attribute__((always_inline))

namespace kestrel::kernels::cpu::qconv_detail {
namespace {

// f(std::integral_constant<int, 0>) ... f(std::integral_constant<int, N - 1>), unrolled.
template <int N, class F>
KESTREL_QC_INLINE void static_for(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    (f(std::integral_constant<int, I>{}), ...);
  }
  (std::make_integer_sequence<int, N>{});
}

template <class T, int MR, int NV>
struct QcKernel {
  static constexpr int kLanes = T::kLanes;
  static constexpr int kNr = NV * kLanes;

  // R rows x NE vectors of pixels over all groups of K, accumulators from zero, then the row
  // offsets and the epilogue straight from the registers. Edge tiles are their own
  // instantiations so that narrow remainders do not pay for the full block.
  template <int R, int NE, bool I32>
  static void tile(const uint8_t* w, const uint8_t* x, int64_t groups, int64_t xs, const int32_t* off, const float* sc,
                   const QcEpilogue& ep, uint8_t* y, int64_t ldy_bytes, int cols) {
    if constexpr (requires { T::template full_tile<R, NE, I32>(w, x, groups, xs, off, sc, ep, y, ldy_bytes, cols); }) {
      T::template full_tile<R, NE, I32>(w, x, groups, xs, off, sc, ep, y, ldy_bytes, cols);  // the ISA's own
      return;
    }
    // Tiles that fill the register file (GCC 12: the AVX-512 8 x 3, AVX-VNNI 6 x 2) come out of
    // this code with an accumulator store to the stack per k step; they get a full_tile or a
    // smaller block. Starting every accumulator of a row at one shared offset vector was worse.
    typename T::V acc[R][NE];
    static_for<R>([&](auto r) { static_for<NE>([&](auto v) { acc[r][v] = T::splat(0); }); });
    for (int64_t g = 0; g < groups; ++g) {
      typename T::VX xv[NE];
      static_for<NE>([&](auto v) { xv[v] = T::load_x(x + v * kLanes * 4); });
      static_for<R>([&](auto r) {
        const typename T::VW wv = T::bcast_w(w + r * 4);
        static_for<NE>([&](auto v) { acc[r][v] = T::dot(acc[r][v], xv[v], wv); });
      });
      x += xs;
      w += MR * 4;
    }
    constexpr int esize = I32 ? 4 : 1;
    static_for<R>([&](auto r) {
      const float s = I32 ? 0.f : sc[r];
      const typename T::V o = T::splat(off[r]);
      static_for<NE>([&](auto v) {
        const int n = cols - v * kLanes < kLanes ? cols - v * kLanes : kLanes;
        T::template finish<I32>(T::add(acc[r][v], o), s, ep, y + r * ldy_bytes + v * kLanes * esize, n);
      });
    });
  }

  using TileFn = void (*)(const uint8_t*, const uint8_t*, int64_t, int64_t, const int32_t*, const float*,
                          const QcEpilogue&, uint8_t*, int64_t, int);

  template <int NE, bool I32, size_t... I>
  static constexpr std::array<TileFn, MR> make_row(std::index_sequence<I...>) {
    return {&tile<static_cast<int>(I) + 1, NE, I32>...};
  }
  template <bool I32, size_t... J>
  static constexpr auto make_tiles(std::index_sequence<J...>) {
    return std::array<std::array<TileFn, MR>, NV>{
        make_row<static_cast<int>(J) + 1, I32>(std::make_index_sequence<MR>{})...};
  }

  static void run(const QcPanel& p) {
    static constexpr auto kTilesU8 = make_tiles<false>(std::make_index_sequence<NV>{});
    static constexpr auto kTilesI32 = make_tiles<true>(std::make_index_sequence<NV>{});
    const auto& tiles = p.ep->i32 ? kTilesI32 : kTilesU8;
    const int esize = p.ep->i32 ? 4 : 1;
    const int64_t ldy_bytes = p.ldy * esize;
    const int64_t block = p.groups * MR * 4;
    for (int64_t m = p.m0; m < p.m1; m += MR) {
      const int rows = static_cast<int>(p.m1 - m < MR ? p.m1 - m : MR);
      const uint8_t* w = p.w + (m / MR) * block;
      const float* sc = p.scale ? p.scale + m : nullptr;
      for (int64_t j = 0; j < p.cols; j += kNr) {
        const int cols = static_cast<int>(p.cols - j < kNr ? p.cols - j : kNr);
        if constexpr (requires { T::kColumnMax; }) {
          if (cols <= T::kColumnMax) {
            (p.ep->i32 ? &T::template column_tile<true>
                       : &T::template column_tile<false>)(w, p.x + j * 4, p.groups, p.pt * 4, p.offset + m, sc, *p.ep,
                                                          p.y + (m * p.ldy + j) * esize, ldy_bytes, rows, cols);
            continue;
          }
        }
        tiles[(cols + kLanes - 1) / kLanes - 1][rows - 1](w, p.x + j * 4, p.groups, p.pt * 4, p.offset + m, sc, *p.ep,
                                                          p.y + (m * p.ldy + j) * esize, ldy_bytes, cols);
      }
    }
  }

  static void pack_w(const int8_t* w, int64_t m, int64_t k, uint8_t* dst) {
    const int64_t groups = (k + T::kKg - 1) / T::kKg;
    for (int64_t b = 0; b * MR < m; ++b)
      for (int64_t g = 0; g < groups; ++g)
        for (int r = 0; r < MR; ++r) {
          uint8_t* d = dst + ((b * groups + g) * MR + r) * 4;
          const int64_t mm = b * MR + r;
          for (int e = 0; e < T::kKg; ++e) {
            const int64_t kk = g * T::kKg + e;
            const int8_t v = mm < m && kk < k ? w[mm * k + kk] : int8_t{0};
            if constexpr (T::kKg == 4) {
              d[e] = static_cast<uint8_t>(v);
            } else {
              const int16_t s = v;
              std::memcpy(d + 2 * e, &s, 2);
            }
          }
        }
  }

  // n pixels of KG source rows (null: past K, zeros) -> n groups of 4 bytes at d.
  static KESTREL_QC_INLINE void pack_rows(const uint8_t* const* rows, int64_t n, uint8_t* d) {
    constexpr int kg = T::kKg;
    alignas(64) static const uint8_t kZeros[64] = {};
    int64_t p = 0;
#if defined(__SSE2__)
    const uint8_t* r[kg];
    for (int e = 0; e < kg; ++e) r[e] = rows[e];
    // Rows past K read zero bytes (the stride 0 keeps the same load in the loop).
    int64_t step[kg];
    for (int e = 0; e < kg; ++e) {
      step[e] = r[e] ? 16 : 0;
      if (!r[e]) r[e] = kZeros;
    }
    auto pack16 = [&](const __m128i* v, uint8_t* o) {
      __m128i o0, o1, o2, o3;
      if constexpr (kg == 4) {
        const __m128i t0 = _mm_unpacklo_epi8(v[0], v[1]), t1 = _mm_unpackhi_epi8(v[0], v[1]);
        const __m128i t2 = _mm_unpacklo_epi8(v[2], v[3]), t3 = _mm_unpackhi_epi8(v[2], v[3]);
        o0 = _mm_unpacklo_epi16(t0, t2);
        o1 = _mm_unpackhi_epi16(t0, t2);
        o2 = _mm_unpacklo_epi16(t1, t3);
        o3 = _mm_unpackhi_epi16(t1, t3);
      } else {
        const __m128i z = _mm_setzero_si128();
        const __m128i t0 = _mm_unpacklo_epi8(v[0], v[1]), t1 = _mm_unpackhi_epi8(v[0], v[1]);
        o0 = _mm_unpacklo_epi8(t0, z);
        o1 = _mm_unpackhi_epi8(t0, z);
        o2 = _mm_unpacklo_epi8(t1, z);
        o3 = _mm_unpackhi_epi8(t1, z);
      }
      __m128i* q = reinterpret_cast<__m128i*>(o);
      _mm_storeu_si128(q, o0);
      _mm_storeu_si128(q + 1, o1);
      _mm_storeu_si128(q + 2, o2);
      _mm_storeu_si128(q + 3, o3);
    };
#if defined(__AVX512BW__)
    if constexpr (kg == 4) {
      // 64 pixels at a time: the byte / word interleave works within 128-bit lanes, so lane L of
      // o_i holds pixels 16 L + 4 i .. + 3; a 4 x 4 transpose of the lanes restores pixel order.
      for (int e = 0; e < kg; ++e) step[e] *= 4;
      // in: 64 pixels of the 4 rows; out[i]: pixels 16 i .. 16 i + 15, 4 bytes each.
      auto pack64 = [](__m512i a, __m512i b, __m512i c, __m512i e, __m512i* out) {
        const __m512i t0 = _mm512_unpacklo_epi8(a, b), t1 = _mm512_unpackhi_epi8(a, b);
        const __m512i t2 = _mm512_unpacklo_epi8(c, e), t3 = _mm512_unpackhi_epi8(c, e);
        const __m512i o0 = _mm512_unpacklo_epi16(t0, t2), o1 = _mm512_unpackhi_epi16(t0, t2);
        const __m512i o2 = _mm512_unpacklo_epi16(t1, t3), o3 = _mm512_unpackhi_epi16(t1, t3);
        const __m512i u0 = _mm512_shuffle_i32x4(o0, o1, 0x44), u1 = _mm512_shuffle_i32x4(o0, o1, 0xEE);
        const __m512i u2 = _mm512_shuffle_i32x4(o2, o3, 0x44), u3 = _mm512_shuffle_i32x4(o2, o3, 0xEE);
        out[0] = _mm512_shuffle_i32x4(u0, u2, 0x88);
        out[1] = _mm512_shuffle_i32x4(u0, u2, 0xDD);
        out[2] = _mm512_shuffle_i32x4(u1, u3, 0x88);
        out[3] = _mm512_shuffle_i32x4(u1, u3, 0xDD);
      };
      for (; p + 64 <= n; p += 64) {
        __m512i out[4];
        pack64(_mm512_loadu_si512(r[0]), _mm512_loadu_si512(r[1]), _mm512_loadu_si512(r[2]), _mm512_loadu_si512(r[3]),
               out);
        for (int i = 0; i < 4; ++i) _mm512_storeu_si512(d + p * 4 + 64 * i, out[i]);
        for (int k = 0; k < kg; ++k) r[k] += step[k];
      }
      if (p < n) {  // the last 1..63 pixels: masked loads (nothing read past n) and stores
        const int64_t rem = n - p;
        const __mmask64 m = (uint64_t{1} << rem) - 1;
        __m512i out[4];
        pack64(_mm512_maskz_loadu_epi8(m, r[0]), _mm512_maskz_loadu_epi8(m, r[1]), _mm512_maskz_loadu_epi8(m, r[2]),
               _mm512_maskz_loadu_epi8(m, r[3]), out);
        for (int i = 0; i < 4 && 16 * i < rem; ++i) {
          const int64_t px = rem - 16 * i < 16 ? rem - 16 * i : 16;
          const __mmask64 mb = px == 16 ? ~__mmask64{0} : (uint64_t{1} << (4 * px)) - 1;
          _mm512_mask_storeu_epi8(d + p * 4 + 64 * i, mb, out[i]);
        }
        return;
      }
      for (int e = 0; e < kg; ++e) step[e] /= 4;
    }
#endif
    for (; p + 16 <= n; p += 16) {
      __m128i v[kg];
      for (int e = 0; e < kg; ++e) v[e] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[e]));
      pack16(v, d + p * 4);
      for (int e = 0; e < kg; ++e) r[e] += step[e];
    }
#if defined(__AVX512BW__) && defined(__AVX512VL__)
    if (p < n) {  // the tail through masked loads (bytes past n are not read) and stores
      const __mmask16 m = static_cast<__mmask16>((1u << (n - p)) - 1);
      __m128i v[kg];
      for (int e = 0; e < kg; ++e) v[e] = _mm_maskz_loadu_epi8(m, r[e]);
      alignas(16) uint8_t tmp[64];
      pack16(v, tmp);
      std::memcpy(d + p * 4, tmp, static_cast<size_t>((n - p) * 4));
      return;
    }
#endif
#endif
    for (; p < n; ++p) {
      uint8_t q[4] = {0, 0, 0, 0};
      for (int e = 0; e < kg; ++e)
        if (rows[e]) q[kg == 4 ? e : 2 * e] = rows[e][p];
      std::memcpy(d + p * 4, q, 4);
    }
  }

  static void pack_x(const uint8_t* src, int64_t ld, int64_t k, int64_t cols, int64_t pt, uint8_t* dst) {
    constexpr int kg = T::kKg;
    const int64_t groups = (k + kg - 1) / kg;
    for (int64_t g = 0; g < groups; ++g) {
      const uint8_t* rows[kg];
      for (int e = 0; e < kg; ++e) rows[e] = g * kg + e < k ? src + (g * kg + e) * ld : nullptr;
      pack_rows(rows, cols, dst + g * pt * 4);
    }
  }

  // im2col straight into the packed panel from the padded phase planes (QcIm2col): every
  // (row of K, output row) run is contiguous there, whatever the stride, dilation or padding.
  static void pack_im2col(const QcIm2col& a, int64_t p0, int64_t cols, int64_t pt, uint8_t* dst) {
    constexpr int kg = T::kKg;
    const int64_t groups = (a.k + kg - 1) / kg;
    for (int64_t i = 0, p = p0; i < cols;) {  // one output-row run at a time, all of K
      const int64_t oy = p / a.ow, ox0 = p % a.ow, n = std::min(a.ow - ox0, cols - i);
      const uint8_t* base = a.src + oy * a.sh * a.prow + ox0;
      uint8_t* d = dst + i * 4;
      for (int64_t g = 0; g < groups; ++g, d += pt * 4) {
        const uint8_t* rows[kg];
        for (int e = 0; e < kg; ++e) {
          const int64_t kk = g * kg + e;
          rows[e] = kk < a.k ? base + a.row_off[kk] : nullptr;
        }
        pack_rows(rows, n, d);
      }
      i += n;
      p += n;
    }
  }

  static const QcTable* table() {
    static const QcTable t{MR, kLanes, kNr, T::kKg, &pack_w, &pack_x, &pack_im2col, &run};
    return &t;
  }
};

}  // namespace
}  // namespace kestrel::kernels::cpu::qconv_detail
