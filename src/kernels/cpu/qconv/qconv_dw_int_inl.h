// The exact integer int8 depthwise kernel for 3x3 and 5x5 windows at stride 1 or 2 (dilation 1):
// per output row and block of L outputs, each kernel row's input bytes are gathered so that int32
// lane p holds the 4 bytes x[p * s + 0..3] (a 32-bit-lane permute, then an in-lane byte shuffle),
// and one u8 x s8 dot product of 4 (vpdpbusd, or two vpmaddwd without VNNI: never saturates) adds
// 4 taps of all L outputs. Other windows fall back to the float kernel of qconv_dw_inl.h. Included
// by the x86 per-ISA units only; the vector traits at the end match the unit's flags. On planes
// at least 3/4 of a vector wide, tiles of several output rows share each gathered row
// (dw_int_rows).
#pragma once

// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 headers (the self-initialized
// _mm512_undefined_*() placeholders once inlined); not our code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/lane_masks.h"
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

// The gather indices for stride s: 32-bit words k * s + 0..3 into 128-bit lane k, then in-lane
// bytes j * s + b (+ 4 for the second quad of a 5-wide row). The 256-bit traits use the first half.
struct alignas(64) DwIdx {
  int32_t perm[16];
  int8_t shuf[2][64];
};
constexpr DwIdx dw_idx(int s) {
  DwIdx t{};
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 4; ++j) {
      t.perm[k * 4 + j] = k * s + j;
      for (int b = 0; b < 4; ++b)
        for (int q = 0; q < 2; ++q) t.shuf[q][k * 16 + j * 4 + b] = static_cast<int8_t>(j * s + b + 4 * q);
    }
  return t;
}
alignas(64) inline constexpr DwIdx kDwIdx[2] = {dw_idx(1), dw_idx(2)};

// What every block of one plane shares: the gather indices, the taps and the folded bias.
template <class V, int K, int S>
struct DwSetup {
  static constexpr int kQuads = (K + 3) / 4;
  typename V::Vec perm, shuf[kQuads], vbias;
  typename V::W w[K][kQuads];
  DwOut out;
  explicit DwSetup(const QDwPlane& p) : out(dw_out_params(p)) {
    // Lane k of 128 bits holds outputs 4k..4k+3, which read bytes from 4k * S: 32-bit words
    // k * S + 0..3 of the load, then in-lane bytes j * S + b (+ 4 for the second quad).
    const DwIdx& idx = kDwIdx[S - 1];
    perm = V::load(idx.perm);
    for (int q = 0; q < kQuads; ++q) shuf[q] = V::load(idx.shuf[q]);
    for (int ky = 0; ky < K; ++ky)
      for (int q = 0; q < kQuads; ++q) w[ky][q] = V::weight(p.wq[ky * 2 + q]);
    // sum((x - x_zp) * w) + bias = sum(x * w) + (bias - x_zp * sum(w)); wrapping arithmetic, as the
    // sum itself wraps only when the true result does not fit int32.
    vbias = V::set1(static_cast<int32_t>(static_cast<uint32_t>(p.bias) -
                                         static_cast<uint32_t>(p.x_zp) * static_cast<uint32_t>(p.wsum)));
  }
};

// V: the vector traits (kLanes int32 outputs per block). K: window size, S: stride.
template <class V, int K, int S>
void dw_int_compute(const QDwPlane& p, const uint8_t* buf, uint8_t* tmp) {
  constexpr int kQuads = (K + 3) / 4;
  constexpr int L = V::kLanes;
  const int64_t pw = (p.ow - 1) * S + K;
  const DwSetup<V, K, S> su(p);
  const DwOut& out = su.out;
  const int64_t ow = p.ow, oh = p.oh;
  // L outputs whose window rows start at src (output i reads src[i * S + ky * pw + kx]).
  const auto block = [&](const uint8_t* src) {
    typename V::Vec acc = su.vbias;
#pragma GCC unroll 5
    for (int ky = 0; ky < K; ++ky) {
      const typename V::Vec g = V::gather_words(src + ky * pw, su.perm);
#pragma GCC unroll 2
      for (int q = 0; q < kQuads; ++q) acc = V::dot(acc, V::shuffle(g, su.shuf[q]), su.w[ky][q]);
    }
    return V::finish(acc, out);
  };
  if constexpr (S == 1) {
    // All rows at once over the flattened padded plane: output (oy, ox) is flat f = oy * pw + ox
    // and reads from buf + f, so 7- and 14-wide planes fill whole blocks; the K - 1 columns
    // past ow of each row are computed and not stored.
    const int64_t n = (oh - 1) * pw + ow;
    for (int64_t f0 = 0; f0 < n; f0 += L) V::store_range(block(buf + f0), out, tmp, f0, 0, L);
  } else {
    (void)tmp;
    for (int64_t oy = 0; oy < oh; ++oy) {
      const uint8_t* rows = buf + oy * S * pw;
      for (int64_t ox0 = 0; ox0 < ow; ox0 += L)
        V::store_range(block(rows + ox0 * S), out, p.y, oy * ow + ox0, 0,
                       static_cast<int>(std::min<int64_t>(L, ow - ox0)));
    }
  }
}

// Planes of at least kDwRows output rows and kDwMinWidth columns: tiles of R = kDwRows output rows
// x one block of L columns, written straight to y (masked past ow). Each input row a tile reads is
// gathered and shuffled once and feeds every output row it is a window row of ((R - 1) * S + K
// gathers for R x K dot products, where the flat path gathers once per dot product); the last tile
// of a column starts at oh - R, recomputing rows of the one before rather than reading past the
// plane. On Zen 4 (BM_QConvDw, VNNI) stride 1 takes 0.65-0.80x the flat path's time, 5x5
// 0.6-0.7x. With the padded copy, 7-wide planes kept the flat path on 16-lane vectors (7 of 16 lanes
// used here, 49 of 64 there); reading the plane in place (V::kPlaneRows, AVX-512) the row tiles take
// them too: 960 x 7 x 7 3x3 19 us against 33.5 flat, as fast as the blocked kernel, and 16 with two planes
// per vector (dw_int_rows_pair; Zen 5).
template <class V>
constexpr int kDwRows = V::kLanes == 16 ? static_cast<int>(kQDwRowTileMinOutputs) : 4;
template <class V>
constexpr int64_t kDwMinWidth = V::kPlaneRows ? kQDwRowTileMinOutputs : V::kLanes * 3 / 4;

// The loop nest of the row tiles (dw_int_rows, dw_int_rows_pair): tiles of R output rows, the last one starting at
// oh - R; acc[i] = bias + the dot products of taps w with the input rows row(r) (r from the tile's first input row,
// gathered); then store(oy, acc) for each output row.
template <class V, int K, int S, class Row, class Store>
__attribute__((always_inline)) inline void dw_int_row_tiles(int64_t oh, const typename V::W (&w)[K][(K + 3) / 4],
                                                            typename V::Vec bias, const typename V::Vec* shuf,
                                                            const Row& row, const Store& store) {
  constexpr int kQuads = (K + 3) / 4, R = kDwRows<V>;
  for (int64_t oy0 = 0; oy0 < oh; oy0 += R) {
    if (oy0 + R > oh) oy0 = oh - R;
    typename V::Vec acc[R];
    for (auto& a : acc) a = bias;
#pragma GCC unroll 20
    for (int r = 0; r < (R - 1) * S + K; ++r) {
      const typename V::Vec g = row(oy0 * S + r);
#pragma GCC unroll 2
      for (int q = 0; q < kQuads; ++q) {
        const typename V::Vec x = V::shuffle(g, shuf[q]);
#pragma GCC unroll 7
        for (int i = 0; i < R; ++i)  // input row r is window row r - S * i of output row i
          if (r - S * i >= 0 && r - S * i < K) acc[i] = V::dot(acc[i], x, w[r - S * i][q]);
      }
    }
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) store(oy0 + i, acc[i]);
  }
}

// rows(ox0) gives the tile's row reader for the block of outputs from column ox0: row(r, perm) is row r of the
// zero-point-padded plane from column ox0 * S, gathered (V::gather_words) with perm. From the padded buffer
// (dw_int_buf_rows), or on AVX-512 straight from the plane (V512::plane_rows: masked loads, no fill).
template <class V, int K, int S, class Rows>
void dw_int_rows(const QDwPlane& p, const Rows& rows) {
  constexpr int L = V::kLanes;
  const int64_t ow = p.ow;
  const DwSetup<V, K, S> su(p);
  const DwOut& out = su.out;
  for (int64_t ox0 = 0; ox0 < ow; ox0 += L) {
    const int n = static_cast<int>(std::min<int64_t>(L, ow - ox0));
    const auto row = rows(ox0);
    dw_int_row_tiles<V, K, S>(
        p.oh, su.w, su.vbias, su.shuf, [&](int64_t r) { return row(r, su.perm); },
        [&](int64_t oy, typename V::Vec acc) { V::store_range(V::finish(acc, out), out, p.y, oy * ow + ox0, 0, n); });
  }
}

// dw_int_rows' reader of the padded buffer (V::fill, pitch pw).
template <class V, int S>
auto dw_int_buf_rows(const uint8_t* buf, int64_t pw) {
  return [buf, pw](int64_t ox0) {
    const uint8_t* col = buf + ox0 * S;
    return [col, pw](int64_t r, typename V::Vec perm) { return V::gather_words(col + r * pw, perm); };
  };
}

// Planes at most 8 columns wide (the 7x7 stages) two at a time on AVX-512: plane a's outputs in lanes 0-7, plane b's
// in lanes 8-15 (alone, the row tiles leave 9 of 16 lanes idle there). Each input row of a tile is the two planes'
// rows, one masked 32-byte load each into the two halves, gathered with word indices offset by 8 for the upper half;
// taps, bias and requantization scale are per half. Otherwise dw_int_rows.
template <class V, int K, int S>
void dw_int_rows_pair(const QDwPlane& pa, const QDwPlane& pb) {
  constexpr int kQuads = (K + 3) / 4;
  const int64_t ow = pa.ow, ih = pa.ih, iw = pa.iw, top = pa.pad_top;
  const DwSetup<V, K, S> sa(pa), sb(pb);
  constexpr __mmask16 kUpper = 0xff00;
  typename V::W w[K][kQuads];
  for (int ky = 0; ky < K; ++ky)
    for (int q = 0; q < kQuads; ++q) {
      w[ky][q].a = _mm512_mask_blend_epi32(kUpper, sa.w[ky][q].a, sb.w[ky][q].a);
      w[ky][q].b = _mm512_mask_blend_epi32(kUpper, sa.w[ky][q].b, sb.w[ky][q].b);
    }
  // The lower half's word indices (outputs 0-7 of a row) again in the upper half, 8 words (32 bytes) on.
  const __m512i perm =
      _mm512_add_epi32(_mm512_shuffle_i64x2(sa.perm, sa.perm, 0x44), _mm512_maskz_set1_epi32(kUpper, 8));
  const DwOut& out = sa.out;  // the clamp, zero point and output kind are the conv's; the scales per plane
  const __m512 scale = _mm512_mask_blend_ps(kUpper, _mm512_set1_ps(pa.scale), _mm512_set1_ps(pb.scale));
  const __m256i z = _mm256_set1_epi8(static_cast<char>(pa.x_zp));
  const int64_t cx = -pa.pad_left;  // the input column of lane 0
  const __mmask32 m =
      static_cast<__mmask32>(lanes_between(std::clamp<int64_t>(-cx, 0, 32), std::clamp<int64_t>(iw - cx, 0, 32)));
  const uintptr_t col_a = reinterpret_cast<uintptr_t>(pa.x) + static_cast<uintptr_t>(cx);
  const uintptr_t col_b = reinterpret_cast<uintptr_t>(pb.x) + static_cast<uintptr_t>(cx);
  const __m512i zz = _mm512_set1_epi8(static_cast<char>(pa.x_zp));
  const __mmask8 n = static_cast<__mmask8>(first_lanes(ow));
  const auto row = [=](int64_t r) {  // by value: captured by reference, the row addresses lived on the stack
    const int64_t iy = r - top;
    __m512i g = zz;  // rows outside the plane: every byte x_zp, the same after any permutation
    if (iy >= 0 && iy < ih) {
      const uintptr_t at = static_cast<uintptr_t>(iy * iw);
      const __m256i ra = _mm256_mask_loadu_epi8(z, m, reinterpret_cast<const void*>(col_a + at));
      const __m256i rb = _mm256_mask_loadu_epi8(z, m, reinterpret_cast<const void*>(col_b + at));
      g = _mm512_permutexvar_epi32(perm, _mm512_inserti64x4(_mm512_castsi256_si512(ra), rb, 1));
    }
    return g;
  };
  const auto store = [&](int64_t oy, __m512i acc) {
    const int64_t at = oy * ow;
    if (out.i32) {
      _mm256_mask_storeu_epi32(static_cast<int32_t*>(pa.y) + at, n, _mm512_castsi512_si256(acc));
      _mm256_mask_storeu_epi32(static_cast<int32_t*>(pb.y) + at, n, _mm512_extracti64x4_epi64(acc, 1));
      return;
    }
    const __m512i q = V::finish(acc, out, scale);
    _mm256_mask_cvtusepi32_storeu_epi8(static_cast<uint8_t*>(pa.y) + at, n, _mm512_castsi512_si256(q));
    _mm256_mask_cvtusepi32_storeu_epi8(static_cast<uint8_t*>(pb.y) + at, n, _mm512_extracti64x4_epi64(q, 1));
  };
  const __m512i bias = _mm512_mask_blend_epi32(kUpper, sa.vbias, sb.vbias);
  dw_int_row_tiles<V, K, S>(pa.oh, w, bias, sa.shuf, row, store);
}

// Stride 1: the flat outputs at row pitch pw -> y at pitch ow.
template <class V>
void dw_int_copy_out(const QDwPlane& p, int64_t pw, const uint8_t* tmp) {
  const int64_t es = p.out == QOut::kI32 ? 4 : 1, ow = p.ow;
  uint8_t* y = static_cast<uint8_t*>(p.y);
  V::copy_rows(y, ow * es, tmp, pw * es, ow * es, p.oh);
}

// Bytes of scratch per plane slot: (stride 1) the flat outputs, oh * pw + 16 elements of up to 4
// bytes; the padded plane with its slack.
inline int64_t dw_int_tmp_bytes(int64_t oh, int64_t pw) {
  return (4 * (oh * pw + 16) + 63) / 64 * 64;
}
inline int64_t dw_int_buf_bytes(int64_t ph, int64_t pw) {
  return (ph * pw + kDwIntSlack + 63) / 64 * 64;
}

// n planes of one geometry, software-pipelined: plane i + 1 is padded before plane i is computed,
// and (stride 1) plane i - 1's outputs are copied out after, in two scratch slots, so no load reads
// bytes stored just before (a store-to-load forwarding stall on every block of a small plane).
template <class V, int K, int S>
void dw_int_planes(const QDwPlane* ps, int n) {
  const QDwPlane& p0 = ps[0];
  const int64_t ph = (p0.oh - 1) * S + K, pw = (p0.ow - 1) * S + K;
  const int64_t tmp_bytes = S == 1 ? dw_int_tmp_bytes(p0.oh, pw) : 0, slot = tmp_bytes + dw_int_buf_bytes(ph, pw);
  uint8_t* base = reinterpret_cast<uint8_t*>(p0.scratch);
  const auto tmp = [&](int i) { return base + (i & 1) * slot; };
  const auto buf = [&](int i) { return base + (i & 1) * slot + tmp_bytes; };
  // The row tiles store straight to y; the flat path at stride 1 through tmp, copied out a plane later.
  const bool rows = p0.oh >= kDwRows<V> && p0.ow >= kDwMinWidth<V>, copy_out = S == 1 && !rows;
  if constexpr (V::kPlaneRows) {
    if (rows) {  // no padded copy: the row tiles load the plane's rows themselves
      int i = 0;
      if (p0.ow <= 8)
        for (; i + 1 < n; i += 2) dw_int_rows_pair<V, K, S>(ps[i], ps[i + 1]);
      for (; i < n; ++i) dw_int_rows<V, K, S>(ps[i], V::template plane_rows<S>(ps[i]));
      return;
    }
  }
  V::fill(ps[0], ph, pw, buf(0));
  for (int i = 0; i < n; ++i) {
    if (i + 1 < n) V::fill(ps[i + 1], ph, pw, buf(i + 1));
    if (rows) {
      dw_int_rows<V, K, S>(ps[i], dw_int_buf_rows<V, S>(buf(i), pw));
      continue;
    }
    dw_int_compute<V, K, S>(ps[i], buf(i), tmp(i));
    if (copy_out && i > 0) dw_int_copy_out<V>(ps[i - 1], pw, tmp(i - 1));
  }
  if (copy_out) dw_int_copy_out<V>(ps[n - 1], pw, tmp(n - 1));
}

// The int kernel when it applies (packed weights present, square 3x3 / 5x5, stride 1 or 2 in
// both directions, no dilation), else the float kernel of qconv_dw_inl.h. All n planes share one
// geometry and scratch.
template <class V>
void dw_int_dispatch(const QDwPlane* ps, int n) {
  if (n < 1) return;
  const QDwPlane& p = ps[0];
  const bool fits = p.wq && p.kh == p.kw && (p.kh == 3 || p.kh == 5) && p.sh == p.sw && (p.sh == 1 || p.sh == 2) &&
                    p.dh == 1 && p.dw == 1;
  if (!fits) {
    for (int i = 0; i < n; ++i) qdw_plane(ps[i]);
    return;
  }
  if (p.kh == 3) return p.sh == 1 ? dw_int_planes<V, 3, 1>(ps, n) : dw_int_planes<V, 3, 2>(ps, n);
  return p.sh == 1 ? dw_int_planes<V, 5, 1>(ps, n) : dw_int_planes<V, 5, 2>(ps, n);
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
  static Vec set1(int32_t v) { return _mm512_set1_epi32(v); }
  static Vec load(const void* aligned) { return _mm512_load_si512(aligned); }
  // rows of n bytes, src pitch sp -> dst pitch dp.
  static void copy_rows(uint8_t* dst, int64_t dp, const uint8_t* src, int64_t sp, int64_t n, int64_t rows) {
    if (n <= 64) {  // the small planes, where per-row overhead matters
      const __mmask64 m = first_lanes(n);
      for (int64_t r = 0; r < rows; ++r)
        _mm512_mask_storeu_epi8(dst + r * dp, m, _mm512_maskz_loadu_epi8(m, src + r * sp));
      return;
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; j += 64) {
        const __mmask64 m = first_lanes(n - j);
        _mm512_mask_storeu_epi8(dst + r * dp + j, m, _mm512_maskz_loadu_epi8(m, src + r * sp + j));
      }
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
  // dw_int_rows' reader of the plane itself: row r of the padded plane, columns from ox0 * S - pad_left, is one
  // masked load of the input row (x_zp in the lanes outside [0, iw), and for the rows outside [0, ih)). The
  // masked-off lanes are not read (AVX-512 suppresses their faults), so the load may start before the row or run
  // past the plane; the address is formed as an integer, never as an out-of-bounds pointer. Replaces the padded
  // copy (V::fill), 31% of a 14x14 plane's time (perf, BM_QConvDw 384 x 14 x 14).
  static constexpr bool kPlaneRows = true;
  template <int S>
  static auto plane_rows(const QDwPlane& p) {
    const __m512i z = _mm512_set1_epi8(static_cast<char>(p.x_zp));
    return [&p, z](int64_t ox0) {
      const int64_t cx = ox0 * S - p.pad_left;  // the input column of lane 0
      const __mmask64 m = lanes_between(std::clamp<int64_t>(-cx, 0, 64), std::clamp<int64_t>(p.iw - cx, 0, 64));
      const uintptr_t col = reinterpret_cast<uintptr_t>(p.x) + static_cast<uintptr_t>(cx);
      const int64_t top = p.pad_top, ih = p.ih, iw = p.iw;
      return [col, m, z, top, ih, iw](int64_t r, __m512i perm) {
        const int64_t iy = r - top;
        if (iy < 0 || iy >= ih) return z;  // every byte x_zp: the same after any permutation
        const auto* src = reinterpret_cast<const void*>(col + static_cast<uintptr_t>(iy * iw));
        return _mm512_permutexvar_epi32(perm, _mm512_mask_loadu_epi8(z, m, src));
      };
    };
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
  // Requantized lanes (within [0, 255]) for u8 output, the sums for int32; the second form with a scale per lane
  // (dw_int_rows_pair: two planes), u8 only.
  static Vec finish(Vec acc, const DwOut& o) {
    return o.i32 ? acc : finish(acc, o, _mm512_set1_ps(o.scale));
  }
  static Vec finish(Vec acc, const DwOut& o, __m512 scale) {
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), scale);
    f = _mm512_min_ps(_mm512_max_ps(f, _mm512_set1_ps(o.lo)), _mm512_set1_ps(o.hi));
    // Round half to even (default MXCSR) like nearbyint.
    return _mm512_add_epi32(_mm512_cvtps_epi32(f), _mm512_set1_epi32(o.zp));
  }
  // Lanes [lo, hi) to y[at ..].
  static void store_range(Vec q, const DwOut& o, void* y, int64_t at, int lo, int hi) {
    if (lo > 0) q = _mm512_maskz_compress_epi32(static_cast<__mmask16>(0xffffu << lo), q);
    const int n = hi - lo;
    const __mmask16 m = static_cast<__mmask16>(first_lanes(n));
    if (o.i32)
      _mm512_mask_storeu_epi32(static_cast<int32_t*>(y) + at, m, q);
    else
      _mm512_mask_cvtusepi32_storeu_epi8(static_cast<uint8_t*>(y) + at, m, q);
  }
  // fill_plane_u8 with 64-byte stores (writes run up to 63 bytes past a row: the next row, or the
  // slack, is written after).
  static void fill(const QDwPlane& p, int64_t ph, int64_t pw, uint8_t* buf) {
    const __m512i z = _mm512_set1_epi8(static_cast<char>(p.x_zp));
    const int64_t c0 = std::min<int64_t>(std::max<int64_t>(p.pad_left, 0), pw);
    const int64_t c1 = std::max<int64_t>(std::min<int64_t>(p.pad_left + p.iw, pw), c0);
    const int64_t n = c1 - c0;
    if (pw <= 64) {  // one store per row
      const __mmask64 m = first_lanes(n);
      const int64_t r0 = std::clamp<int64_t>(p.pad_top, 0, ph), r1 = std::clamp<int64_t>(p.pad_top + p.ih, r0, ph);
      for (int64_t r = 0; r < r0; ++r) _mm512_storeu_si512(buf + r * pw, z);
      const uint8_t* src = p.x + (r0 - p.pad_top) * p.iw + (c0 - p.pad_left);
      uint8_t* row = buf + r0 * pw;
      if (c0 > 0) {
        for (int64_t r = r0; r < r1; ++r, row += pw, src += p.iw) {
          _mm512_storeu_si512(row, z);
          _mm512_storeu_si512(row + c0, _mm512_mask_loadu_epi8(z, m, src));
        }
      } else {
        for (int64_t r = r0; r < r1; ++r, row += pw, src += p.iw)
          _mm512_storeu_si512(row, _mm512_mask_loadu_epi8(z, m, src));
      }
      for (int64_t r = r1; r < ph; ++r) _mm512_storeu_si512(buf + r * pw, z);
      _mm512_storeu_si512(buf + ph * pw, z);
      _mm512_storeu_si512(buf + ph * pw + 64, z);
      return;
    }
    for (int64_t r = 0; r < ph; ++r) {
      uint8_t* row = buf + r * pw;
      const int64_t iy = r - p.pad_top;
      if (iy < 0 || iy >= p.ih) {
        for (int64_t j = 0; j < pw; j += 64) _mm512_storeu_si512(row + j, z);
        continue;
      }
      for (int64_t j = 0; j < c0; j += 64) _mm512_storeu_si512(row + j, z);
      const uint8_t* src = p.x + iy * p.iw + (c0 - p.pad_left);
      for (int64_t j = 0; j < pw - c0; j += 64) {
        const int64_t rem = n - j;
        __m512i v = z;
        if (rem >= 64)
          v = _mm512_loadu_si512(src + j);
        else if (rem > 0)
          v = _mm512_mask_loadu_epi8(z, first_lanes(rem), src + j);
        _mm512_storeu_si512(row + c0 + j, v);
      }
    }
    _mm512_storeu_si512(buf + ph * pw, z);
    _mm512_storeu_si512(buf + ph * pw + 64, z);
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
  static Vec set1(int32_t v) { return _mm256_set1_epi32(v); }
  static Vec load(const void* aligned) { return _mm256_load_si256(static_cast<const __m256i*>(aligned)); }
  // Whole 32-byte chunks while they end inside the destination plane (a row's overrun is rewritten
  // by the next rows), memcpy for the rest; src has slack to read whole chunks.
  static void copy_rows(uint8_t* dst, int64_t dp, const uint8_t* src, int64_t sp, int64_t n, int64_t rows) {
    const int64_t chunks = (n + 31) / 32;
    int64_t r = 0;
    for (; r < rows && r * dp + chunks * 32 <= rows * dp; ++r)
      for (int64_t j = 0; j < chunks * 32; j += 32)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + r * dp + j),
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + r * sp + j)));
    for (; r < rows; ++r) std::memcpy(dst + r * dp, src + r * sp, static_cast<size_t>(n));
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
  static constexpr bool kPlaneRows = false;  // no byte-masked loads: the row tiles read the padded copy
  static Vec shuffle(Vec g, Vec idx) { return _mm256_shuffle_epi8(g, idx); }
  static Vec dot(Vec acc, Vec x, const W& w) {
#if defined(__AVXVNNI__)
    if constexpr (kVnni) return _mm256_dpbusd_avx_epi32(acc, x, w.a);
#endif
    const __m256i even = _mm256_and_si256(x, _mm256_set1_epi16(0x00ff));
    const __m256i odd = _mm256_srli_epi16(x, 8);
    return _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(even, w.a), _mm256_madd_epi16(odd, w.b)));
  }
  static Vec finish(Vec acc, const DwOut& o) {
    if (o.i32) return acc;
    __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), _mm256_set1_ps(o.scale));
    f = _mm256_min_ps(_mm256_max_ps(f, _mm256_set1_ps(o.lo)), _mm256_set1_ps(o.hi));
    return _mm256_add_epi32(_mm256_cvtps_epi32(f), _mm256_set1_epi32(o.zp));
  }
  static void store_range(Vec q, const DwOut& o, void* y, int64_t at, int lo, int hi) {
    const size_t n = static_cast<size_t>(hi - lo);
    if (o.i32) {
      int32_t* dst = static_cast<int32_t*>(y) + at;
      if (n == 8) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), q);
      } else {
        alignas(32) int32_t tmp[8];
        _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), q);
        std::memcpy(dst, tmp + lo, n * sizeof(int32_t));
      }
      return;
    }
    // q is within [0, 255]: both packs are exact.
    const __m128i h = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const __m128i b = _mm_packus_epi16(h, h);
    uint8_t* dst = static_cast<uint8_t*>(y) + at;
    if (n == 8) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), b);
    } else {
      alignas(16) uint8_t tmp[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(tmp), b);
      std::memcpy(dst, tmp + lo, n);
    }
  }
  // x_zp everywhere (32-byte stores), then one memcpy per input row.
  static void fill(const QDwPlane& p, int64_t ph, int64_t pw, uint8_t* buf) {
    const __m256i z = _mm256_set1_epi8(static_cast<char>(p.x_zp));
    const int64_t total = ph * pw + kDwIntSlack;
    int64_t j = 0;
    for (; j + 32 <= total; j += 32) _mm256_storeu_si256(reinterpret_cast<__m256i*>(buf + j), z);
    std::memset(buf + j, p.x_zp, static_cast<size_t>(total - j));
    const int64_t c0 = std::min<int64_t>(std::max<int64_t>(p.pad_left, 0), pw);
    const int64_t c1 = std::max<int64_t>(std::min<int64_t>(p.pad_left + p.iw, pw), c0);
    const int64_t r0 = std::clamp<int64_t>(p.pad_top, 0, ph), r1 = std::clamp<int64_t>(p.pad_top + p.ih, r0, ph);
    const uint8_t* src = p.x + (r0 - p.pad_top) * p.iw + (c0 - p.pad_left);
    for (int64_t r = r0; r < r1; ++r, src += p.iw) std::memcpy(buf + r * pw + c0, src, static_cast<size_t>(c1 - c0));
  }
};
#endif

}  // namespace
}  // namespace kestrel::kernels::cpu::qconv_detail
