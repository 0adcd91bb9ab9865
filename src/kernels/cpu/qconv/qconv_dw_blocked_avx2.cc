// The blocked small-plane int8 depthwise kernel of qconv_dw_blocked.h, compiled with AVX2 + FMA:
// the 16 channels of a block as two 8-lane passes.
#include "kernels/cpu/qconv/qconv_dw_blocked.h"

#if defined(__x86_64__) || defined(_M_X64)
#include "kernels/cpu/qconv/qconv_dw_blocked_inl.h"

namespace kestrel::kernels::cpu::qconv_detail {

namespace {

struct T256 {
  using F = __m256;
  using I = __m256i;
  static constexpr int kLanes = 8, kBytes = 32;
  static F zero() { return _mm256_setzero_ps(); }
  static F set1(float v) { return _mm256_set1_ps(v); }
  static F load(const float* p) { return _mm256_load_ps(p); }
  static F loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F v) { _mm256_store_ps(p, v); }
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F min(F a, F b) { return _mm256_min_ps(a, b); }
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  static I set1_i(int32_t v) { return _mm256_set1_epi32(v); }
  static I loadu_i(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static I load_i(const uint8_t* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }
  static void store_i(uint8_t* p, I v) { _mm256_store_si256(reinterpret_cast<__m256i*>(p), v); }
  static I add_i(I a, I b) { return _mm256_add_epi32(a, b); }
  static I cvt_i(F v) { return _mm256_cvtps_epi32(v); }
  static F cvt_f(I v) { return _mm256_cvtepi32_ps(v); }
  static I unpacklo8(I a, I b) { return _mm256_unpacklo_epi8(a, b); }
  static I unpackhi8(I a, I b) { return _mm256_unpackhi_epi8(a, b); }
  static I unpacklo16(I a, I b) { return _mm256_unpacklo_epi16(a, b); }
  static I unpackhi16(I a, I b) { return _mm256_unpackhi_epi16(a, b); }
  static I unpacklo32(I a, I b) { return _mm256_unpacklo_epi32(a, b); }
  static I unpackhi32(I a, I b) { return _mm256_unpackhi_epi32(a, b); }
  static I unpacklo64(I a, I b) { return _mm256_unpacklo_epi64(a, b); }
  static I unpackhi64(I a, I b) { return _mm256_unpackhi_epi64(a, b); }
  // 8 channels' bytes of one pixel, minus the zero point, as floats.
  static F pixel(const uint8_t* src, uint8_t zp) {
    const I v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src)));
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(v, _mm256_set1_epi32(zp)));
  }
  // Lanes within [0, 255] as 8 bytes (packs work within 128-bit lanes: v0..v3 | v4..v7).
  static void store_bytes(uint8_t* dst, I v) {
    const I b = _mm256_packus_epi16(_mm256_packus_epi32(v, v), _mm256_setzero_si256());
    const __m128i lo = _mm256_castsi256_si128(b), hi = _mm256_extracti128_si256(b, 1);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), _mm_unpacklo_epi32(lo, hi));
  }
  // r[2c], r[2c + 1]: n (<= 64) bytes of channel c at x + c * hw, zeros past them and for c >= channels
  // (through a copy: no masked byte loads in AVX2, and a plane's last bytes may end the tensor).
  static void load_rows(const uint8_t* x, int64_t hw, int64_t n, int channels, I* r) {
    alignas(32) uint8_t row[64];
    for (int c = 0; c < 16; ++c) {
      if (c >= channels) {
        r[2 * c] = r[2 * c + 1] = _mm256_setzero_si256();
        continue;
      }
      std::memcpy(row, x + c * hw, static_cast<size_t>(n));
      std::memset(row + n, 0, static_cast<size_t>(64 - n));
      r[2 * c] = load_i(row);
      r[2 * c + 1] = load_i(row + 32);
    }
  }
  // The first p (<= 64) bytes of r[2c], r[2c + 1] to y + c * p, c < channels.
  static void store_rows(const I* r, uint8_t* y, int64_t p, int channels) {
    alignas(32) uint8_t row[64];
    for (int c = 0; c < channels; ++c) {
      store_i(row, r[2 * c]);
      store_i(row + 32, r[2 * c + 1]);
      std::memcpy(y + c * p, row, static_cast<size_t>(p));
    }
  }
};

}  // namespace

QDwBlockFn qdw_block_fn_avx2() {
  return qdw_block<T256>;
}

}  // namespace kestrel::kernels::cpu::qconv_detail
#endif
