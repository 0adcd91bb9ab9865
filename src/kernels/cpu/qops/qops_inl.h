// Per-ISA row kernels of the u8 element-wise and pooling ops (qops.h), written for the compiler's
// vectorizer; instantiated by qops_{scalar,avx2,avx512}.cc with their ISA's flags.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__AVX2__) || defined(__AVX512BW__)
#include <immintrin.h>
#endif

#include "kernels/cpu/qops/qops_table.h"

namespace kestrel::kernels::cpu::qops_detail {
namespace {

// round_half_even for |f| < 2^22 without a rounding instruction (every ISA vectorizes it).
inline float round_even(float f) {
  constexpr float kMagic = 12582912.f;  // 1.5 * 2^23
  return (f + kMagic) - kMagic;
}

#if defined(__AVX512BW__)
// 16 u8 -> float lanes, and back: clamp to [lo, hi] (the output range minus its zero point), round
// half to even (the default MXCSR mode, as round_even), add the zero point; n < 16 masks the tail.
inline __m512 u8_to_f32(const uint8_t* x, int n) {
  const __mmask16 k = n >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n) - 1);
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(k, x)));
}
inline void f32_to_u8(__m512 f, __m512 lo, __m512 hi, __m512i zy, uint8_t* y, int n) {
  const __mmask16 k = n >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n) - 1);
  const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(f, lo), hi)), zy);
  _mm_mask_storeu_epi8(y, k, _mm512_cvtusepi32_epi8(q));
}
#endif

// y = q(x * s + t): one operand against a value fixed for the row (a broadcast scalar).
inline void affine_row(const uint8_t* x, uint8_t* y, int64_t n, float s, float t, float lo, float hi, int32_t zy) {
  int64_t i = 0;
#if defined(__AVX512BW__)
  const __m512 vs = _mm512_set1_ps(s), vt = _mm512_set1_ps(t), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  const __m512i vz = _mm512_set1_epi32(zy);
  // 64 bytes at a time while x * s + t cannot overflow int32 (|x s + t| <= 255 |s| + |t|; false for NaN): round,
  // add the zero point, narrow with the saturating packs (to [0, 255]) and clamp the bytes to [lo, hi] + zy, which is
  // f32_to_u8's clamp-then-round for integer bounds; one pack, permute and store for four f32_to_u8. The last
  // (n % 64) bytes masked; rows under 32 bytes keep the 16-lane loop. Squeeze-excite gates (x [C, H, W] times one
  // value per channel; kestrel_kernel_bench qbinary/mul, 5 interleaved runs, Zen 5): 96 x 28 x 28 5.19 -> 4.05 us,
  // 240 x 14 x 14 3.70 -> 3.51, 576 x 7 x 7 even. In EfficientNet-B0 the gates take 8-10 us a call: their input
  // comes from L2 or further.
  const int32_t qlo = static_cast<int32_t>(lo) + zy, qhi = static_cast<int32_t>(hi) + zy;
  if (n >= 32 && std::fabs(s) * 255.f + std::fabs(t) < 1073741824.f && 0 <= qlo && qlo <= qhi && qhi <= 255) {
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m512i blo = _mm512_set1_epi8(static_cast<char>(qlo)), bhi = _mm512_set1_epi8(static_cast<char>(qhi));
    const auto quarter = [&](__m128i b) {
      return _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b)), vs, vt)),
                              vz);
    };
    const auto affine64 = [&](__m512i b) {  // the extract indices are immediates: no loop over them (-O0 / -O1)
      const __m512i q0 = quarter(_mm512_castsi512_si128(b)), q1 = quarter(_mm512_extracti32x4_epi32(b, 1));
      const __m512i q2 = quarter(_mm512_extracti32x4_epi32(b, 2)), q3 = quarter(_mm512_extracti32x4_epi32(b, 3));
      const __m512i w = _mm512_packus_epi16(_mm512_packs_epi32(q0, q1), _mm512_packs_epi32(q2, q3));
      return _mm512_min_epu8(_mm512_max_epu8(_mm512_permutexvar_epi32(order, w), blo), bhi);
    };
    for (; i + 64 <= n; i += 64) _mm512_storeu_si512(y + i, affine64(_mm512_loadu_si512(x + i)));
    if (i < n) {
      const __mmask64 m = n - i >= 64 ? ~__mmask64{0} : (__mmask64{1} << (n - i)) - 1;
      _mm512_mask_storeu_epi8(y + i, m, affine64(_mm512_maskz_loadu_epi8(m, x + i)));
      i = n;
    }
  }
  for (; i < n; i += 16) {
    const int r = static_cast<int>(std::min<int64_t>(16, n - i));
    f32_to_u8(_mm512_fmadd_ps(u8_to_f32(x + i, r), vs, vt), vlo, vhi, vz, y + i, r);
  }
#endif
  for (; i < n; ++i) {
    float f = static_cast<float>(x[i]) * s + t;
    f = f > lo ? f : lo;
    f = f < hi ? f : hi;
    y[i] = static_cast<uint8_t>(static_cast<int32_t>(round_even(f)) + zy);
  }
}

// Both operands element by element: y = q(a * ka + b * kb + c) (add) or q((a - za) (b - zb) k) (mul).
void binary_full_row(const QBinaryParams& p, const uint8_t* a, const uint8_t* b, uint8_t* y, int64_t n) {
  const float lo = static_cast<float>(p.lo - p.y_zp), hi = static_cast<float>(p.hi - p.y_zp);
  const int32_t zy = p.y_zp;
  const bool add = p.op == QBinaryOp::kAdd;
  const float ka = add ? p.a_scale / p.y_scale : 1.f, kb = add ? p.b_scale / p.y_scale : 1.f;
  const float c0 = add ? -(static_cast<float>(p.a_zp) * ka + static_cast<float>(p.b_zp) * kb) : 0.f;
  const float k = p.a_scale * p.b_scale / p.y_scale;
  const float za = static_cast<float>(p.a_zp), zb = static_cast<float>(p.b_zp);
  int64_t i = 0;
#if defined(__AVX512BW__)
  const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  const __m512i vz = _mm512_set1_epi32(zy);
  const __m512 vka = _mm512_set1_ps(ka), vkb = _mm512_set1_ps(kb), vc0 = _mm512_set1_ps(c0), vk = _mm512_set1_ps(k);
  const __m512 vza = _mm512_set1_ps(za), vzb = _mm512_set1_ps(zb);
  for (; i < n; i += 16) {
    const int r = static_cast<int>(std::min<int64_t>(16, n - i));
    const __m512 fa = u8_to_f32(a + i, r), fb = u8_to_f32(b + i, r);
    const __m512 f = add ? _mm512_fmadd_ps(fa, vka, _mm512_fmadd_ps(fb, vkb, vc0))
                         : _mm512_mul_ps(_mm512_mul_ps(_mm512_sub_ps(fa, vza), _mm512_sub_ps(fb, vzb)), vk);
    f32_to_u8(f, vlo, vhi, vz, y + i, r);
  }
#endif
  if (add) {
    for (; i < n; ++i) {
      float f = static_cast<float>(a[i]) * ka + static_cast<float>(b[i]) * kb + c0;
      f = f > lo ? f : lo;
      f = f < hi ? f : hi;
      y[i] = static_cast<uint8_t>(static_cast<int32_t>(round_even(f)) + zy);
    }
  } else {
    for (; i < n; ++i) {
      float f = (static_cast<float>(a[i]) - za) * (static_cast<float>(b[i]) - zb) * k;
      f = f > lo ? f : lo;
      f = f < hi ? f : hi;
      y[i] = static_cast<uint8_t>(static_cast<int32_t>(round_even(f)) + zy);
    }
  }
}

// Rows of a run x [rows, inner] against one fixed value per row v[rows] (x * per-channel scale:
// the squeeze-excite gate); x_is_a: x is operand a. The per-row constants cost two multiply-adds.
void binary_rows_impl(const QBinaryParams& p, const uint8_t* x, const uint8_t* v, uint8_t* y, int64_t rows,
                      int64_t inner, bool x_is_a) {
  const float lo = static_cast<float>(p.lo - p.y_zp), hi = static_cast<float>(p.hi - p.y_zp);
  const float xs = x_is_a ? p.a_scale : p.b_scale, vs = x_is_a ? p.b_scale : p.a_scale;
  const float xz = static_cast<float>(x_is_a ? p.a_zp : p.b_zp), vz = static_cast<float>(x_is_a ? p.b_zp : p.a_zp);
  const bool add = p.op == QBinaryOp::kAdd;
  const float k_mul = xs * vs / p.y_scale, k_x = xs / p.y_scale, k_v = vs / p.y_scale;
  for (int64_t r = 0; r < rows; ++r) {
    const float vr = static_cast<float>(v[r]) - vz;
    float s, t;
    if (add) {
      s = k_x;
      t = vr * k_v - xz * k_x;
    } else {
      s = vr * k_mul;
      t = -xz * s;
    }
    affine_row(x + r * inner, y + r * inner, inner, s, t, lo, hi, p.y_zp);
  }
}

// Element strides sa, sb: 1 (a run) or 0 (one value for the row): a run against a fixed value is
// one row of binary_rows_impl; both fixed, one value for the whole row.
void binary_impl(const QBinaryParams& p, const uint8_t* a, const uint8_t* b, uint8_t* y, int64_t n, int sa, int sb) {
  if (sa == 1 && sb == 1) return binary_full_row(p, a, b, y, n);
  const bool a_runs = sa == 1 || sb == 0;  // x: the run (or a if both are fixed), v: the fixed one
  const uint8_t* x = a_runs ? a : b;
  const uint8_t* v = a_runs ? b : a;
  if (sa == 0 && sb == 0) {
    uint8_t one;
    binary_rows_impl(p, x, v, &one, 1, 1, true);
    std::memset(y, one, static_cast<size_t>(n));
    return;
  }
  binary_rows_impl(p, x, v, y, 1, n, a_runs);
}

void quantize_impl(const float* x, int64_t n, float scale, int32_t zp, uint8_t* y) {
  const float lo = static_cast<float>(-zp), hi = static_cast<float>(255 - zp);
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] / scale;
    v = v == v ? v : 0.f;  // NaN -> the zero point
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    y[i] = static_cast<uint8_t>(static_cast<int32_t>(round_even(v)) + zp);
  }
}

// y[i] = x[2 * i] for i < n_out; x holds n_in >= 2 * n_out - 1 readable bytes.
inline void even_bytes(const uint8_t* x, int64_t n_in, uint8_t* y, int64_t n_out) {
  int64_t i = 0;
#if defined(__AVX512BW__)
  for (; 2 * i + 64 <= n_in && i + 32 <= n_out; i += 32)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        _mm512_maskz_cvtepi16_epi8(~__mmask32{0}, _mm512_loadu_si512(x + 2 * i)));  // low byte of each word
#elif defined(__AVX2__)
  const __m256i lo = _mm256_set1_epi16(0x00ff);
  for (; 2 * i + 64 <= n_in && i + 32 <= n_out; i += 32) {
    const __m256i a = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 2 * i)), lo);
    const __m256i b = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 2 * i + 32)), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        _mm256_permute4x64_epi64(_mm256_packus_epi16(a, b), 0xd8));  // undo the lane split
  }
#endif
  for (; i < n_out; ++i) y[i] = x[2 * i];
  (void)n_in;  // only the vector loops read whole blocks
}

#if defined(__AVX512BW__)
// The lanes of bytes [j, j + len) (len <= 64) of a row that hold columns inside [0, iw): the others (the padding,
// or past the input under ceil_mode) load as 0, the identity of max on u8, and are not read.
inline __mmask64 cols_mask(int64_t j, int64_t len, int64_t iw) {
  const int64_t lo = std::max<int64_t>(0, -j), hi = std::min(len, iw - j);
  if (hi <= lo) return 0;
  const __mmask64 below_hi = hi >= 64 ? ~__mmask64{0} : (__mmask64{1} << hi) - 1;
  return below_hi & ~((__mmask64{1} << lo) - 1);
}

// Stride 1 or 2, no dilation, kw <= kMaxKw: per run of 64 (stride 1) or 32 (stride 2) outputs of a row, the
// window max from one masked load per tap (the window start at every input column of the run; the masks depend on
// the run only, so they are worked out once for all planes and rows), then for stride 2 the even bytes. The
// padded-row version below took 0.27-0.39 ms on each of int8 SqueezeNet's three pools (3x3 stride 2 to 55x55,
// 27x27, 13x13), its rows of 13-111 bytes spent mostly in the vector loops' tails (bench/qconv_bench.cc
// bm_qmaxpool).
constexpr int64_t kMaxKw = 8;
void maxpool_direct(const QMaxPoolShape& s, const uint8_t* x, uint8_t* y, int64_t p0, int64_t p1) {
  const int64_t plane_in = s.ih * s.iw, plane_out = s.oh * s.ow, step = s.sw == 2 ? 32 : 64;
  for (int64_t ox0 = 0; ox0 < s.ow; ox0 += step) {
    const int64_t n = std::min(step, s.ow - ox0), j0 = ox0 * s.sw - s.pad_left;
    __mmask64 mask[kMaxKw];
    for (int64_t kx = 0; kx < s.kw; ++kx) mask[kx] = cols_mask(j0 + kx, n * s.sw, s.iw);
    const __mmask64 out = n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1;
    for (int64_t pl = p0; pl < p1; ++pl) {
      // Column j0 of the plane's rows, as an integer: j0 may be negative (masked-off bytes are not read).
      const uintptr_t xp = reinterpret_cast<uintptr_t>(x + pl * plane_in) + static_cast<uintptr_t>(j0);
      uint8_t* yp = y + pl * plane_out + ox0;
      for (int64_t oy = 0; oy < s.oh; ++oy) {
        const int64_t iy0 = oy * s.sh - s.pad_top, ky0 = std::max<int64_t>(0, -iy0), ky1 = std::min(s.kh, s.ih - iy0);
        __m512i m = _mm512_setzero_si512();
        for (int64_t ky = ky0; ky < ky1; ++ky) {
          const uintptr_t r = xp + static_cast<uintptr_t>((iy0 + ky) * s.iw);
          for (int64_t kx = 0; kx < s.kw; ++kx)
            m = _mm512_max_epu8(m, _mm512_maskz_loadu_epi8(mask[kx], reinterpret_cast<const void*>(r + kx)));
        }
        if (s.sw == 2) {
          _mm256_mask_storeu_epi8(yp + oy * s.ow, static_cast<__mmask32>(out), _mm512_cvtepi16_epi8(m));  // even bytes
        } else {
          _mm512_mask_storeu_epi8(yp + oy * s.ow, out, m);
        }
      }
    }
  }
}
#endif

// Planes [p0, p1): vertical max of the window rows into a padded row (column c holds input
// column c - pad_left; 0, the identity of max on u8, outside), then the horizontal window.
void maxpool_impl(const QMaxPoolShape& s, const uint8_t* x, uint8_t* y, int64_t p0, int64_t p1, uint8_t* row) {
#if defined(__AVX512BW__)
  if (s.dh == 1 && s.dw == 1 && (s.sw == 1 || s.sw == 2) && s.kw <= kMaxKw) return maxpool_direct(s, x, y, p0, p1);
#endif
  const int64_t plane_in = s.ih * s.iw, plane_out = s.oh * s.ow;
  const int64_t width = (s.ow - 1) * s.sw + (s.kw - 1) * s.dw + 1;
  const int64_t c0 = std::min(s.pad_left, width), c1 = std::max(c0, std::min(width, s.pad_left + s.iw));
  // u8 stores may alias anything: keep every bound in a local so loops vectorize.
  const int64_t ih = s.ih, iw = s.iw, oh = s.oh, ow = s.ow, kh = s.kh, kw = s.kw, sh = s.sh, sw = s.sw, dh = s.dh,
                dw = s.dw, pt = s.pad_top, run = c1 - c0, lead = c0 - s.pad_left, w = width;
  uint8_t* tmp = row;
  for (int64_t pl = p0; pl < p1; ++pl) {
    const uint8_t* xp = x + pl * plane_in;
    uint8_t* yp = y + pl * plane_out;
    for (int64_t oy = 0; oy < oh; ++oy) {
      std::memset(tmp, 0, static_cast<size_t>(w));
      const int64_t iy0 = oy * sh - pt;
      uint8_t* dst = tmp + c0;
      for (int64_t ky = 0; ky < kh; ++ky) {
        const int64_t iy = iy0 + ky * dh;
        if (iy < 0 || iy >= ih) continue;
        const uint8_t* src = xp + iy * iw + lead;
        for (int64_t c = 0; c < run; ++c) dst[c] = std::max(dst[c], src[c]);
      }
      uint8_t* yr = yp + oy * ow;
      if (sw == 1 && dw == 1) {
        for (int64_t ox = 0; ox < ow; ++ox) yr[ox] = tmp[ox];
        for (int64_t kx = 1; kx < kw; ++kx)
          for (int64_t ox = 0; ox < ow; ++ox) yr[ox] = std::max(yr[ox], tmp[ox + kx]);
      } else if (sw == 2 && dw == 1) {
        // Window maxima at every column (kw - 1 forward passes, each widening the window by one;
        // reading i + 1 before writing it vectorizes), then the even columns.
        const int64_t n = 2 * (ow - 1) + 1;
        for (int64_t kx = 1; kx < kw; ++kx) {
          const int64_t len = n + kw - 1 - kx;  // the next pass reads one column further
          for (int64_t i = 0; i < len; ++i) tmp[i] = std::max(tmp[i], tmp[i + 1]);
        }
        even_bytes(tmp, n, yr, ow);
      } else if (kw == 3 && dw == 1) {
        for (int64_t ox = 0; ox < ow; ++ox) {
          const uint8_t* t = tmp + ox * sw;
          yr[ox] = std::max(std::max(t[0], t[1]), t[2]);
        }
      } else {
        for (int64_t ox = 0; ox < ow; ++ox) {
          const uint8_t* t = tmp + ox * sw;
          uint8_t m = t[0];
          for (int64_t kx = 1; kx < kw; ++kx) m = std::max(m, t[kx * dw]);
          yr[ox] = m;
        }
      }
    }
  }
}

// Global average pooling's sums: vpsadbw against zero adds 8 bytes into each 64-bit lane (64 or 32 bytes per
// instruction, the plane's tail by a masked load); the plain loop elsewhere. EfficientNet-B0's squeeze-excite pools
// (672 x 14 x 14 u8) took 8.6 us a call with the byte loop of the generic unit.
void plane_sums_impl(const uint8_t* x, int64_t planes, int64_t hw, uint32_t* sums) {
  for (int64_t c = 0; c < planes; ++c) {
    const uint8_t* p = x + c * hw;
    int64_t i = 0;
#if defined(__AVX512BW__)
    __m512i acc = _mm512_setzero_si512();
    for (; i + 64 <= hw; i += 64)
      acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_loadu_si512(p + i), _mm512_setzero_si512()));
    if (i < hw) {
      const __mmask64 k = (uint64_t{1} << (hw - i)) - 1;  // 1..63 bytes
      acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_maskz_loadu_epi8(k, p + i), _mm512_setzero_si512()));
      i = hw;
    }
    uint64_t s = static_cast<uint64_t>(_mm512_reduce_add_epi64(acc));
#elif defined(__AVX2__)
    __m256i acc = _mm256_setzero_si256();
    for (; i + 32 <= hw; i += 32)
      acc = _mm256_add_epi64(
          acc, _mm256_sad_epu8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)), _mm256_setzero_si256()));
    alignas(32) uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc);
    uint64_t s = lanes[0] + lanes[1] + lanes[2] + lanes[3];
#else
    uint64_t s = 0;
#endif
    for (; i < hw; ++i) s += p[i];
    sums[c] = static_cast<uint32_t>(s);
  }
}

inline QopsFns make_fns() {
  return {&quantize_impl, &maxpool_impl, &binary_impl, &binary_rows_impl, &plane_sums_impl};
}

}  // namespace
}  // namespace kestrel::kernels::cpu::qops_detail
