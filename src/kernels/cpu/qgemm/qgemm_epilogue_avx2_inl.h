// The int8 GEMM epilogue on 8 int32 lanes (AVX2), shared by the AVX2 and AVX-VNNI kernels; the
// same arithmetic as ScalarOps::finish in qgemm_kernel_scalar.cc, bit for bit.
// Include only from a kernel .cc compiled with AVX2 (unnamed namespace, see qgemm_ukernel_inl.h).
#pragma once

#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/qgemm/qgemm_ukernel_inl.h"

namespace kestrel::kernels::cpu {
namespace {

KESTREL_QGEMM_INLINE __m256i qgemm_mask256(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// (x * multiplier + 2^(shift-1)) >> shift in 64 bits, clamped to [lo, hi] (64-bit lanes).
KESTREL_QGEMM_INLINE __m256i qgemm_fixed_half256(__m256i x, __m256i m, __m256i s, __m256i lo, __m256i hi) {
  const __m256i one = _mm256_set1_epi64x(1);
  __m256i p = _mm256_mul_epi32(x, m);  // signed 32 x 32 -> 64 of the even lanes
  p = _mm256_add_epi64(p, _mm256_sllv_epi64(one, _mm256_sub_epi64(s, one)));
  // Arithmetic right shift by a per-lane count (AVX2 has only the logical one):
  // floor(p / 2^s) = ~(~p >> s) for negative p.
  const __m256i sign = _mm256_cmpgt_epi64(_mm256_setzero_si256(), p);
  p = _mm256_xor_si256(_mm256_srlv_epi64(_mm256_xor_si256(p, sign), s), sign);
  p = _mm256_blendv_epi8(p, lo, _mm256_cmpgt_epi64(lo, p));
  return _mm256_blendv_epi8(p, hi, _mm256_cmpgt_epi64(p, hi));
}

KESTREL_QGEMM_INLINE void qgemm_finish256(__m256i acc, const ColParams& cp, int j0, const Epilogue& ep, uint8_t* out,
                                          int n) {
  const __m256i x = _mm256_add_epi32(acc, _mm256_load_si256(reinterpret_cast<const __m256i*>(cp.offset + j0)));
  switch (ep.output) {
    case QgemmOutput::kInt32:
      if (n == 8) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), x);
      } else {
        _mm256_maskstore_epi32(reinterpret_cast<int*>(out), qgemm_mask256(n), x);
      }
      return;
    case QgemmOutput::kF32: {
      const __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(x), _mm256_load_ps(cp.scale + j0));
      if (n == 8) {
        _mm256_storeu_ps(reinterpret_cast<float*>(out), f);
      } else {
        _mm256_maskstore_ps(reinterpret_cast<float*>(out), qgemm_mask256(n), f);
      }
      return;
    }
    case QgemmOutput::kU8:
    case QgemmOutput::kS8:
      break;
  }
  __m256i q;
  if (ep.requant == QgemmRequant::kFloat) {
    __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(x), _mm256_load_ps(cp.scale + j0));
    f = _mm256_max_ps(f, _mm256_set1_ps(ep.lo_f));  // NaN -> lo (max returns the second operand)
    f = _mm256_min_ps(f, _mm256_set1_ps(ep.hi_f));
    q = _mm256_cvtps_epi32(f);  // round half to even (default MXCSR), as nearbyint
  } else {
    const __m256i m = _mm256_load_si256(reinterpret_cast<const __m256i*>(cp.multiplier + j0));
    const __m256i s = _mm256_load_si256(reinterpret_cast<const __m256i*>(cp.shift + j0));
    const __m256i lo = _mm256_set1_epi64x(static_cast<int64_t>(ep.lo) - ep.zero_point);
    const __m256i hi = _mm256_set1_epi64x(static_cast<int64_t>(ep.hi) - ep.zero_point);
    const __m256i low32 = _mm256_set1_epi64x(0xffffffff);
    const __m256i even = qgemm_fixed_half256(x, m, _mm256_and_si256(s, low32), lo, hi);
    const __m256i odd =
        qgemm_fixed_half256(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(m, 32), _mm256_srli_epi64(s, 32), lo, hi);
    q = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  }
  q = _mm256_add_epi32(q, _mm256_set1_epi32(ep.zero_point));
  // q is within [-128, 255]: both packs are exact.
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  const __m128i b = ep.output == QgemmOutput::kU8 ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w);
  if (n == 8) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out), b);
  } else {
    alignas(16) uint8_t tmp[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(tmp), b);
    std::memcpy(out, tmp, static_cast<size_t>(n));
  }
}

}  // namespace
}  // namespace kestrel::kernels::cpu
