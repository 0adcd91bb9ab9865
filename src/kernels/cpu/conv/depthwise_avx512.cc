// Depthwise plane kernel for AVX-512F (compiled with AVX-512 flags; used only when the CPU has them).
// GCC 12 reports -W(maybe-)uninitialized inside its own AVX-512 headers (see sgemm_kernel_avx512.cc).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "kernels/cpu/conv/depthwise_blocked_inl.h"
#include "kernels/cpu/conv/winograd_inl.h"

namespace kestrel::kernels::cpu::conv_detail {
namespace {

struct Avx512Ops {
  using V = __m512;
  static constexpr int kWidth = 16;
  static __mmask16 mask(int n) {
    return n >= 16 ? __mmask16(0xffff) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1u);
  }
  // r[i][j] <- r[j][i] for a 16x16 block: 32-bit, 64-bit, then two 128-bit interleaving stages.
  static void transpose(V* r) {
    V t[16];
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
      r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
      r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
      r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
      r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    }
    for (int h = 0; h < 16; h += 8)
      for (int i = 0; i < 4; ++i) {
        t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88);
        t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xdd);
      }
    for (int i = 0; i < 8; ++i) {
      r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
      r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
  }
  // even <- (a, b)[0, 2, 4, ...], odd <- (a, b)[1, 3, 5, ...].
  static void deinterleave(V a, V b, V& even, V& odd) {
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    even = _mm512_permutex2var_ps(a, ie, b);
    odd = _mm512_permutex2var_ps(a, io, b);
  }
  // The inverse: lo <- (even[0], odd[0], even[1], odd[1], ...) of the first halves, hi of the second.
  static void interleave(V even, V odd, V& lo, V& hi) {
    const __m512i il = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i ih = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    lo = _mm512_permutex2var_ps(even, il, odd);
    hi = _mm512_permutex2var_ps(even, ih, odd);
  }
  // As deinterleave, but the elements of even / odd come in a lane order P of their own (in-lane shuffles only: each
  // 128-bit lane takes 2 from a then 2 from b); unshuffle(v) puts a vector in that order back in element order.
  static void deinterleave_shuffled(V a, V b, V& even, V& odd) {
    even = _mm512_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    odd = _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
  }
  static V unshuffle(V v) {
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15), v);
  }
  // Lanes [lo, hi) from p[lane], zero elsewhere; the other lanes' addresses are not accessed. load_lanes =
  // load_masked(p, lanes(lo, hi)), the mask computed once where many loads share it.
  using M = __mmask16;
  static M lanes(int lo, int hi) { return static_cast<__mmask16>(mask(hi) & ~mask(lo)); }
  static V load_masked(const float* p, M m) { return _mm512_maskz_loadu_ps(m, p); }
  static V load_lanes(const float* p, int lo, int hi) { return load_masked(p, lanes(lo, hi)); }
  static V rcp(V a) { return _mm512_rcp14_ps(a); }
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void stream(float* p, V v) { _mm512_stream_ps(p, v); }  // p 64-byte aligned
  static void stream_fence() { _mm_sfence(); }
  static void store_n(float* p, V v, int n) { _mm512_mask_storeu_ps(p, mask(n), v); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V round(V a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT); }
  static V scale_pow2(V a, V n) { return _mm512_scalef_ps(a, n); }
  static V frac_floor(V a) { return _mm512_reduce_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  static V abs(V a) { return _mm512_abs_ps(a); }
  static V copysign(V mag, V sgn) {
    const V sign = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(0x80000000u)));
    return _mm512_or_ps(_mm512_and_ps(sgn, sign), _mm512_andnot_ps(sign, mag));
  }
};

}  // namespace

DepthwiseBlocked depthwise_blocked_avx512() {
  return {Avx512Ops::kWidth, &depthwise_block<Avx512Ops>, &grouped_block<Avx512Ops>, &stem_block<Avx512Ops>,
          &depthwise_nhwc<Avx512Ops>};
}
WinogradKernels winograd_kernels_avx512() {
  return {&winograd_input<Avx512Ops>, &winograd_output<Avx512Ops>};
}
Im2colFn im2col_fn_avx512() {
  return &im2col_rows<Avx512Ops>;
}
TransposeOutFn transpose_out_fn_avx512() {
  return &transpose_out<Avx512Ops>;
}
SoftmaxRowsFn softmax_rows_fn_avx512() {
  return &softmax_rows<Avx512Ops>;
}

}  // namespace kestrel::kernels::cpu::conv_detail
