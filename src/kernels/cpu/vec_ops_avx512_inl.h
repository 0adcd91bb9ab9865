// VecOps for AVX-512F (include only from *_avx512.cc files, which get those flags).
// See vec_math_inl.h for the operations every VecOps provides.
#pragma once

// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 headers (the self-initialized
// _mm512_undefined_ps() placeholder of max/min/scalef/roundscale once inlined), and -Wuninitialized
// for the same placeholder in _mm512_reduce_*_ps; not our code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/lane_masks.h"

#define KESTREL_VEC_INLINE inline __attribute__((always_inline))

namespace kestrel::kernels::cpu {
namespace {

struct VecOps {
  using V = __m512;
  static constexpr int kWidth = 16;
  static KESTREL_VEC_INLINE __mmask16 mask(int n) { return static_cast<__mmask16>(first_lanes(n)); }
  // (a, b)[0, 2, 4, ...]: the even elements of two consecutive vectors.
  static KESTREL_VEC_INLINE V even(V a, V b) {
    return _mm512_permutex2var_ps(a, _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30), b);
  }
  // (a, b)[1, 3, 5, ...]: the odd elements.
  static KESTREL_VEC_INLINE V odd(V a, V b) {
    return _mm512_permutex2var_ps(a, _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31), b);
  }
  // (a, b)[1, 2, ..., 16]: a shifted down one lane, b's first element last.
  static KESTREL_VEC_INLINE V next_lane(V a, V b) {
    return _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(b), _mm512_castps_si512(a), 1));
  }
  static KESTREL_VEC_INLINE V rcp(V a) { return _mm512_rcp14_ps(a); }  // relative error < 2^-14
  static KESTREL_VEC_INLINE V zero() { return _mm512_setzero_ps(); }
  static KESTREL_VEC_INLINE V set1(float x) { return _mm512_set1_ps(x); }
  static KESTREL_VEC_INLINE V load(const float* p) { return _mm512_loadu_ps(p); }
  static KESTREL_VEC_INLINE V load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static KESTREL_VEC_INLINE void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static KESTREL_VEC_INLINE void store_n(float* p, V v, int n) { _mm512_mask_storeu_ps(p, mask(n), v); }
  static KESTREL_VEC_INLINE void stream(float* p, V v) { _mm512_stream_ps(p, v); }  // non-temporal, p 64-byte aligned
  static KESTREL_VEC_INLINE V add(V a, V b) { return _mm512_add_ps(a, b); }
  static KESTREL_VEC_INLINE V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static KESTREL_VEC_INLINE V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static KESTREL_VEC_INLINE V div(V a, V b) { return _mm512_div_ps(a, b); }
  static KESTREL_VEC_INLINE V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static KESTREL_VEC_INLINE V max(V a, V b) { return _mm512_max_ps(a, b); }
  static KESTREL_VEC_INLINE V min(V a, V b) { return _mm512_min_ps(a, b); }
  static KESTREL_VEC_INLINE V round(V a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT); }
  static KESTREL_VEC_INLINE V scale_pow2(V a, V n) { return _mm512_scalef_ps(a, n); }  // a * 2^floor(n)
  static KESTREL_VEC_INLINE V frac_floor(V a) {                                        // a - floor(a), in [0, 1)
    return _mm512_reduce_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  }
  static KESTREL_VEC_INLINE V abs(V a) { return _mm512_abs_ps(a); }
  static KESTREL_VEC_INLINE V copysign(V mag, V sgn) {
    const V sign = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(0x80000000u)));
    return _mm512_or_ps(_mm512_and_ps(sgn, sign), _mm512_andnot_ps(sign, mag));
  }
  static KESTREL_VEC_INLINE V sqrt(V a) { return _mm512_sqrt_ps(a); }
  static KESTREL_VEC_INLINE V select_gt(V a, V b, V x, V y) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_GT_OQ), y, x);
  }
  static KESTREL_VEC_INLINE float reduce_add(V a) { return _mm512_reduce_add_ps(a); }
  static KESTREL_VEC_INLINE float reduce_max(V a) { return _mm512_reduce_max_ps(a); }
  // kWidth int8 values widened to float (load_i8_n: the first n, the rest 0; reads only n bytes).
  static KESTREL_VEC_INLINE V load_i8(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static KESTREL_VEC_INLINE V load_i8_n(const int8_t* p, int n) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(mask(n), p)));
  }
};

}  // namespace
}  // namespace kestrel::kernels::cpu
