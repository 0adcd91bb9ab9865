// AVX-512 VNNI NCHW int8 convolution GEMM (8 rows x 48 pixels): vpdpbusd of 16 pixels' 4 u8
// activations against one row's 4 s8 weights broadcast from memory; masked u8 / int32 stores.
// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 headers (the self-initialized
// "undefined" vectors of the masked intrinsics, as -Wuninitialized when inlined into a
// constant-size loop); the warnings are about the headers, not this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>

#include "kernels/cpu/qconv/qconv_gemm_inl.h"

namespace kestrel::kernels::cpu::qconv_detail {
namespace {

struct Avx512VnniQc {
  static constexpr int kLanes = 16;
  static constexpr int kKg = 4;
  using V = __m512i;
  using VX = __m512i;
  using VW = __m512i;
  static KESTREL_QC_INLINE V splat(int32_t v) { return _mm512_set1_epi32(v); }
  static KESTREL_QC_INLINE VX load_x(const uint8_t* p) { return _mm512_loadu_si512(p); }
  static KESTREL_QC_INLINE VW bcast_w(const uint8_t* p) {
    int32_t w;
    std::memcpy(&w, p, 4);
    return _mm512_set1_epi32(w);
  }
  // vpdpbusd: 4 u8 (x) x 4 s8 (w) products summed into int32 without intermediate saturation.
  static KESTREL_QC_INLINE V dot(V acc, VX x, VW w) { return _mm512_dpbusd_epi32(acc, x, w); }
  template <bool I32>
  static KESTREL_QC_INLINE void finish(V acc, float scale, const QcEpilogue& ep, uint8_t* out, int n) {
    const __mmask16 mask = static_cast<__mmask16>(n >= 16 ? 0xffff : (1u << n) - 1);
    if constexpr (I32) {
      _mm512_mask_storeu_epi32(out, mask, acc);
    } else {
      __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), _mm512_set1_ps(scale));
      f = _mm512_max_ps(f, _mm512_set1_ps(ep.lo_f));  // NaN -> lo (max returns the second operand)
      f = _mm512_min_ps(f, _mm512_set1_ps(ep.hi_f));
      const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), _mm512_set1_epi32(ep.zp));  // half to even
      _mm512_mask_cvtepi32_storeu_epi8(out, mask, q);  // q is within [0, 255]: truncation is exact
    }
  }
};

}  // namespace

const QcTable* qc_table_avx512vnni() {
  return QcKernel<Avx512VnniQc, 8, 3>::table();
}

}  // namespace kestrel::kernels::cpu::qconv_detail
