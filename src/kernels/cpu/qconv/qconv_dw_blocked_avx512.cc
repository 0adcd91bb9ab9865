// The blocked small-plane int8 depthwise kernel of qconv_dw_blocked.h, compiled with AVX-512: one
// 16-lane vector per pixel.
// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 headers (the self-initialized
// _mm512_undefined_*() placeholders once inlined); not our code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "kernels/cpu/qconv/qconv_dw_blocked.h"

#if defined(__x86_64__) || defined(_M_X64)
#include "kernels/cpu/qconv/qconv_dw_blocked_inl.h"

namespace kestrel::kernels::cpu::qconv_detail {

namespace {

struct T512 {
  using F = __m512;
  using I = __m512i;
  static constexpr int kLanes = 16, kBytes = 64;
  static F zero() { return _mm512_setzero_ps(); }
  static F set1(float v) { return _mm512_set1_ps(v); }
  static F load(const float* p) { return _mm512_load_ps(p); }
  static F loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, F v) { _mm512_store_ps(p, v); }
  static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F min(F a, F b) { return _mm512_min_ps(a, b); }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static I set1_i(int32_t v) { return _mm512_set1_epi32(v); }
  static I loadu_i(const int32_t* p) { return _mm512_loadu_si512(p); }
  static I load_i(const uint8_t* p) { return _mm512_load_si512(p); }
  static void store_i(uint8_t* p, I v) { _mm512_store_si512(p, v); }
  static I add_i(I a, I b) { return _mm512_add_epi32(a, b); }
  static I cvt_i(F v) { return _mm512_cvtps_epi32(v); }
  static F cvt_f(I v) { return _mm512_cvtepi32_ps(v); }
  static I unpacklo8(I a, I b) { return _mm512_unpacklo_epi8(a, b); }
  static I unpackhi8(I a, I b) { return _mm512_unpackhi_epi8(a, b); }
  static I unpacklo16(I a, I b) { return _mm512_unpacklo_epi16(a, b); }
  static I unpackhi16(I a, I b) { return _mm512_unpackhi_epi16(a, b); }
  static I unpacklo32(I a, I b) { return _mm512_unpacklo_epi32(a, b); }
  static I unpackhi32(I a, I b) { return _mm512_unpackhi_epi32(a, b); }
  static I unpacklo64(I a, I b) { return _mm512_unpacklo_epi64(a, b); }
  static I unpackhi64(I a, I b) { return _mm512_unpackhi_epi64(a, b); }
  // The 16 channels' bytes of one pixel, minus the zero point, as floats.
  static F pixel(const uint8_t* src, uint8_t zp) {
    const I v = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(src)));
    return _mm512_cvtepi32_ps(_mm512_sub_epi32(v, _mm512_set1_epi32(zp)));
  }
  // Lanes within [0, 255] as 16 bytes.
  static void store_bytes(uint8_t* dst, I v) {
    _mm_store_si128(reinterpret_cast<__m128i*>(dst), _mm512_cvtusepi32_epi8(v));
  }
  // r[c]: n (<= 64) bytes of channel c at x + c * hw, zeros past them and for c >= channels.
  static void load_rows(const uint8_t* x, int64_t hw, int64_t n, int channels, I* r) {
    const __mmask64 m = first_lanes(n);
    for (int c = 0; c < 16; ++c) r[c] = c < channels ? _mm512_maskz_loadu_epi8(m, x + c * hw) : _mm512_setzero_si512();
  }
  // The first p (<= 64) bytes of r[c] to y + c * p, c < channels.
  static void store_rows(const I* r, uint8_t* y, int64_t p, int channels) {
    const __mmask64 m = first_lanes(p);
    for (int c = 0; c < channels; ++c) _mm512_mask_storeu_epi8(y + c * p, m, r[c]);
  }
};

}  // namespace

QDwBlockFn qdw_block_fn_avx512() {
  return qdw_block<T512>;
}

}  // namespace kestrel::kernels::cpu::qconv_detail
#endif
