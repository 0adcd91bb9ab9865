// Depthwise plane kernel for AVX2 + FMA (compiled with AVX2 flags; used only when the CPU has them).
#include <immintrin.h>

#include "kernels/cpu/conv/depthwise_blocked_inl.h"
#include "kernels/cpu/conv/winograd_inl.h"

namespace kestrel::kernels::cpu::conv_detail {
namespace {

struct Avx2Ops {
  using V = __m256;
  static constexpr int kWidth = 8;
  static __m256i mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  // r[i][j] <- r[j][i] for an 8x8 block. Forced inline: GCC called it out of line, so the 8 vectors went through
  // memory on every call (channel-blocked depthwise on Zen 2: 192 ch 28x28 145 -> 127 us, 576 ch 14x14 114 -> 102).
  __attribute__((always_inline)) static inline void transpose(V* r) {
    V t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
      u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
      u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
      u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
      u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; ++i) {
      r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
      r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
  }
  // even <- (a, b)[0, 2, 4, ...], odd <- (a, b)[1, 3, 5, ...]: in-lane shuffles, then the 64-bit halves in order.
  static void deinterleave(V a, V b, V& even, V& odd) {
    const V e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)), o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
    odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
  }
  // The inverse: lo <- (even[0], odd[0], even[1], odd[1], ...) of the first halves, hi of the second.
  static void interleave(V even, V odd, V& lo, V& hi) {
    const V l = _mm256_unpacklo_ps(even, odd), h = _mm256_unpackhi_ps(even, odd);  // pairs 0, 1, 4, 5 / 2, 3, 6, 7
    lo = _mm256_permute2f128_ps(l, h, 0x20);
    hi = _mm256_permute2f128_ps(l, h, 0x31);
  }
  // deinterleave without its last step: the 64-bit halves stay in the order of the in-lane shuffles.
  static void deinterleave_shuffled(V a, V b, V& even, V& odd) {
    even = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    odd = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
  }
  static V unshuffle(V v) {
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), _MM_SHUFFLE(3, 1, 2, 0)));
  }
  // Lanes [lo, hi) from p[lane], zero elsewhere; the other lanes' addresses are not accessed. load_lanes =
  // load_masked(p, lanes(lo, hi)), the mask computed once where many loads share it.
  using M = __m256i;
  static M lanes(int lo, int hi) { return _mm256_andnot_si256(mask(lo), mask(hi)); }
  static V load_masked(const float* p, M m) { return _mm256_maskload_ps(p, m); }
  static V load_lanes(const float* p, int lo, int hi) { return load_masked(p, lanes(lo, hi)); }
  static V rcp(V a) { return _mm256_rcp_ps(a); }
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load_n(const float* p, int n) { return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask(n)); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static void stream(float* p, V v) { _mm256_stream_ps(p, v); }  // p 32-byte aligned
  static void stream_fence() { _mm_sfence(); }
  static void store_n(float* p, V v, int n) {
    if (n >= 8) {
      _mm256_storeu_ps(p, v);
    } else {
      _mm256_maskstore_ps(p, mask(n), v);
    }
  }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V round(V a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V pow2i(V n) {
    __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
  }
  static V abs(V a) {
    return _mm256_andnot_ps(_mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u))), a);
  }
  static V copysign(V mag, V sgn) {
    const V sign = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
    return _mm256_or_ps(_mm256_and_ps(sgn, sign), _mm256_andnot_ps(sign, mag));
  }
};

}  // namespace

DepthwiseBlocked depthwise_blocked_avx2() {
  return {Avx2Ops::kWidth, &depthwise_block<Avx2Ops>, &grouped_block<Avx2Ops>, &stem_block<Avx2Ops>,
          &depthwise_nhwc<Avx2Ops>};
}
WinogradKernels winograd_kernels_avx2() {
  return {&winograd_input<Avx2Ops>, &winograd_output<Avx2Ops>};
}
Im2colFn im2col_fn_avx2() {
  return &im2col_rows<Avx2Ops>;
}
TransposeOutFn transpose_out_fn_avx2() {
  return &transpose_out<Avx2Ops>;
}
SoftmaxRowsFn softmax_rows_fn_avx2() {
  return &softmax_rows<Avx2Ops>;
}

}  // namespace kestrel::kernels::cpu::conv_detail
