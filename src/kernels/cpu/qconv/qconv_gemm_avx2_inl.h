// The 8-lane (AVX2) loads and epilogue shared by the AVX2 and AVX-VNNI NCHW int8 conv GEMMs.
// Include only from a kernel .cc compiled with AVX2 (unnamed namespace, see qconv_gemm_inl.h).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/qconv/qconv_gemm_inl.h"

namespace kestrel::kernels::cpu::qconv_detail {
namespace {

struct Qc256Epilogue {
  static constexpr int kLanes = 8;
  using V = __m256i;
  using VX = __m256i;
  using VW = __m256i;
  static KESTREL_QC_INLINE V splat(int32_t v) { return _mm256_set1_epi32(v); }
  static KESTREL_QC_INLINE V add(V a, V b) { return _mm256_add_epi32(a, b); }
  static KESTREL_QC_INLINE VX load_x(const uint8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  static KESTREL_QC_INLINE VW bcast_w(const uint8_t* p) {
    int32_t w;
    std::memcpy(&w, p, 4);
    return _mm256_set1_epi32(w);
  }
  template <bool I32>
  static KESTREL_QC_INLINE void finish(V acc, float scale, const QcEpilogue& ep, uint8_t* out, int n) {
    if constexpr (I32) {
      if (n == 8) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), acc);
      } else {
        const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        _mm256_maskstore_epi32(reinterpret_cast<int*>(out), mask, acc);
      }
    } else {
      __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), _mm256_set1_ps(scale));
      f = _mm256_max_ps(f, _mm256_load_ps(ep.lo16));  // NaN -> lo (max returns the second operand)
      f = _mm256_min_ps(f, _mm256_load_ps(ep.hi16));
      const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(f), _mm256_set1_epi32(ep.zp));  // half to even
      // q is within [0, 255]: both packs are exact.
      const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
      const __m128i b = _mm_packus_epi16(w, w);
      if (n == 8) {
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out), b);
      } else {
        alignas(16) uint8_t tmp[16];
        _mm_store_si128(reinterpret_cast<__m128i*>(tmp), b);
        std::memcpy(out, tmp, static_cast<size_t>(n));
      }
    }
  }
};

}  // namespace
}  // namespace kestrel::kernels::cpu::qconv_detail
