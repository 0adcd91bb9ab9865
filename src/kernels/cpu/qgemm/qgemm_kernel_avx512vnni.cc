// AVX-512 VNNI int8 GEMM micro-kernel (14 x 32 tile): 512-bit vpdpbusd with the A group broadcast
// from the packed u8 A, s8 B in groups of 4 k; epilogue with AVX-512 masks.
// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 headers (the self-initialized
// "undefined" vectors of the masked intrinsics); the warning is about the headers, not this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include "kernels/cpu/qgemm/qgemm_ukernel_inl.h"

namespace kestrel::kernels::cpu {
namespace {

struct Avx512VnniOps {
  static constexpr int kLanes = 16;
  static constexpr int kKg = 4;
  using V = __m512i;
  using VA = __m512i;
  using VB = __m512i;
  static KESTREL_QGEMM_INLINE V zero() { return _mm512_setzero_si512(); }
  static KESTREL_QGEMM_INLINE VB load_b(const uint8_t* p) { return _mm512_loadu_si512(p); }
  static KESTREL_QGEMM_INLINE VA bcast_a(const uint8_t* p) {
    int32_t w;
    std::memcpy(&w, p, 4);
    return _mm512_set1_epi32(w);
  }
  // vpdpbusd: 4 u8 (a) x 4 s8 (b) products summed into int32 without intermediate saturation.
  static KESTREL_QGEMM_INLINE V dot(V acc, VA a, VB b) { return _mm512_dpbusd_epi32(acc, a, b); }

  // (x * multiplier + 2^(shift-1)) >> shift in 64 bits (even lanes), clamped to [lo, hi].
  static KESTREL_QGEMM_INLINE __m512i fixed_half(__m512i x, __m512i m, __m512i s, __m512i lo, __m512i hi) {
    const __m512i one = _mm512_set1_epi64(1);
    __m512i p = _mm512_mul_epi32(x, m);
    p = _mm512_add_epi64(p, _mm512_sllv_epi64(one, _mm512_sub_epi64(s, one)));
    p = _mm512_srav_epi64(p, s);
    return _mm512_min_epi64(_mm512_max_epi64(p, lo), hi);
  }

  static KESTREL_QGEMM_INLINE void finish(V acc, const ColParams& cp, int j0, const Epilogue& ep, uint8_t* out, int n) {
    const __mmask16 mask = static_cast<__mmask16>(n >= 16 ? 0xffff : (1u << n) - 1);
    const __m512i x = _mm512_add_epi32(acc, _mm512_load_si512(cp.offset + j0));
    switch (ep.output) {
      case QgemmOutput::kInt32:
        _mm512_mask_storeu_epi32(out, mask, x);
        return;
      case QgemmOutput::kF32:
        _mm512_mask_storeu_ps(out, mask, _mm512_mul_ps(_mm512_cvtepi32_ps(x), _mm512_load_ps(cp.scale + j0)));
        return;
      case QgemmOutput::kU8:
      case QgemmOutput::kS8:
        break;
    }
    __m512i q;
    if (ep.requant == QgemmRequant::kFloat) {
      __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(x), _mm512_load_ps(cp.scale + j0));
      f = _mm512_max_ps(f, _mm512_set1_ps(ep.lo_f));  // NaN -> lo (max returns the second operand)
      f = _mm512_min_ps(f, _mm512_set1_ps(ep.hi_f));
      q = _mm512_cvtps_epi32(f);  // round half to even (default MXCSR), as nearbyint
    } else {
      const __m512i m = _mm512_load_si512(cp.multiplier + j0);
      const __m512i s = _mm512_load_si512(cp.shift + j0);
      const __m512i lo = _mm512_set1_epi64(static_cast<int64_t>(ep.lo) - ep.zero_point);
      const __m512i hi = _mm512_set1_epi64(static_cast<int64_t>(ep.hi) - ep.zero_point);
      const __m512i low32 = _mm512_set1_epi64(0xffffffff);
      const __m512i even = fixed_half(x, m, _mm512_and_si512(s, low32), lo, hi);
      const __m512i odd =
          fixed_half(_mm512_srli_epi64(x, 32), _mm512_srli_epi64(m, 32), _mm512_srli_epi64(s, 32), lo, hi);
      q = _mm512_mask_blend_epi32(static_cast<__mmask16>(0xAAAA), even, _mm512_slli_epi64(odd, 32));
    }
    q = _mm512_add_epi32(q, _mm512_set1_epi32(ep.zero_point));
    _mm512_mask_cvtepi32_storeu_epi8(out, mask, q);  // q is within the type's range: truncation is exact
  }
};

}  // namespace

namespace qgemm_detail {

const UkernelTable* qgemm_table_avx512vnni() {
  return QgemmKernel<Avx512VnniOps, 14, 2>::table(QgemmIsa::kAvx512Vnni);
}

}  // namespace qgemm_detail
}  // namespace kestrel::kernels::cpu
