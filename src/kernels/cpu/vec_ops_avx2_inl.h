// VecOps for AVX2 + FMA (include only from *_avx2.cc files, which get those flags).
// See vec_math_inl.h for the operations every VecOps provides.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#define KESTREL_VEC_INLINE inline __attribute__((always_inline))

namespace kestrel::kernels::cpu {
namespace {

struct VecOps {
  using V = __m256;
  static constexpr int kWidth = 8;
  static KESTREL_VEC_INLINE __m256i mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  // (a, b)[0, 2, 4, ...]: the even elements of two consecutive vectors.
  static KESTREL_VEC_INLINE V even(V a, V b) {
    const V e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
  }
  // (a, b)[1, 3, 5, ...]: the odd elements.
  static KESTREL_VEC_INLINE V odd(V a, V b) {
    const V o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
  }
  // (a, b)[1, 2, ..., 8]: a shifted down one lane, b's first element last.
  static KESTREL_VEC_INLINE V next_lane(V a, V b) {
    const __m256i rot = _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 0);
    return _mm256_blend_ps(_mm256_permutevar8x32_ps(a, rot), _mm256_permutevar8x32_ps(b, rot), 0x80);
  }
  // No rcp: sigmoid and SiLU divide (vrcp in vec_math_inl.h).
  static KESTREL_VEC_INLINE V zero() { return _mm256_setzero_ps(); }
  static KESTREL_VEC_INLINE V set1(float x) { return _mm256_set1_ps(x); }
  static KESTREL_VEC_INLINE V load(const float* p) { return _mm256_loadu_ps(p); }
  // maskload does not fault on masked-off lanes, so reading a row's tail is safe.
  static KESTREL_VEC_INLINE V load_n(const float* p, int n) {
    return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask(n));
  }
  static KESTREL_VEC_INLINE void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static KESTREL_VEC_INLINE void stream(float* p, V v) { _mm256_stream_ps(p, v); }  // non-temporal, p 32-byte aligned
  static KESTREL_VEC_INLINE void store_n(float* p, V v, int n) {
    if (n >= 8) {
      _mm256_storeu_ps(p, v);
    } else {
      _mm256_maskstore_ps(p, mask(n), v);
    }
  }
  static KESTREL_VEC_INLINE V add(V a, V b) { return _mm256_add_ps(a, b); }
  static KESTREL_VEC_INLINE V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static KESTREL_VEC_INLINE V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static KESTREL_VEC_INLINE V div(V a, V b) { return _mm256_div_ps(a, b); }
  static KESTREL_VEC_INLINE V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static KESTREL_VEC_INLINE V max(V a, V b) { return _mm256_max_ps(a, b); }
  static KESTREL_VEC_INLINE V min(V a, V b) { return _mm256_min_ps(a, b); }
  static KESTREL_VEC_INLINE V round(V a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static KESTREL_VEC_INLINE V pow2i(V n) {
    __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
  }
  static KESTREL_VEC_INLINE V abs(V a) {
    return _mm256_andnot_ps(_mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u))), a);
  }
  static KESTREL_VEC_INLINE V copysign(V mag, V sgn) {
    const V sign = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
    return _mm256_or_ps(_mm256_and_ps(sgn, sign), _mm256_andnot_ps(sign, mag));
  }
  static KESTREL_VEC_INLINE V sqrt(V a) { return _mm256_sqrt_ps(a); }
  static KESTREL_VEC_INLINE V select_gt(V a, V b, V x, V y) { return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_GT_OQ)); }
  static KESTREL_VEC_INLINE float reduce_add(V a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static KESTREL_VEC_INLINE float reduce_max(V a) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  // kWidth int8 values widened to float (load_i8_n: the first n, the rest 0; reads only n bytes).
  static KESTREL_VEC_INLINE V load_i8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static KESTREL_VEC_INLINE V load_i8_n(const int8_t* p, int n) {
    if (n >= 8) return load_i8(p);
    int64_t bits = 0;
    if (n > 0) std::memcpy(&bits, p, static_cast<size_t>(n));
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(bits)));
  }
};

}  // namespace
}  // namespace kestrel::kernels::cpu
