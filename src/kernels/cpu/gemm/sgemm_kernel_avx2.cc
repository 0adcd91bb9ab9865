// SGEMM kernels for AVX2 + FMA (compiled with AVX2 flags; used only when the CPU has them).
#include <immintrin.h>

#include "kernels/cpu/gemm/sgemm_ukernel_inl.h"

namespace kestrel::kernels::cpu {
namespace {

struct Avx2Ops {
  using V = __m256;
  static constexpr int kWidth = 8;
  static KESTREL_GEMM_INLINE __m256i mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static KESTREL_GEMM_INLINE V zero() { return _mm256_setzero_ps(); }
  static KESTREL_GEMM_INLINE V set1(float x) { return _mm256_set1_ps(x); }
  static KESTREL_GEMM_INLINE V load(const float* p) { return _mm256_loadu_ps(p); }
  // maskload does not fault on masked-off lanes, so reading a row's tail is safe.
  static KESTREL_GEMM_INLINE V load_n(const float* p, int n) {
    return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask(n));
  }
  static KESTREL_GEMM_INLINE void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static KESTREL_GEMM_INLINE void store_n(float* p, V v, int n) {
    if (n >= 8) {
      _mm256_storeu_ps(p, v);
    } else {
      _mm256_maskstore_ps(p, mask(n), v);
    }
  }
  static KESTREL_GEMM_INLINE V add(V a, V b) { return _mm256_add_ps(a, b); }
  static KESTREL_GEMM_INLINE V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static KESTREL_GEMM_INLINE V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static KESTREL_GEMM_INLINE V div(V a, V b) { return _mm256_div_ps(a, b); }
  static KESTREL_GEMM_INLINE V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static KESTREL_GEMM_INLINE V max(V a, V b) { return _mm256_max_ps(a, b); }
  static KESTREL_GEMM_INLINE V min(V a, V b) { return _mm256_min_ps(a, b); }
  static KESTREL_GEMM_INLINE V round(V a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static KESTREL_GEMM_INLINE V pow2i(V n) {
    __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
  }
  static KESTREL_GEMM_INLINE V abs(V a) {
    return _mm256_andnot_ps(_mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u))), a);
  }
  static KESTREL_GEMM_INLINE V copysign(V mag, V sgn) {
    const V sign = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
    return _mm256_or_ps(_mm256_and_ps(sgn, sign), _mm256_andnot_ps(sign, mag));
  }
};

}  // namespace

namespace gemm_detail {

const UkernelTable* ukernel_table_avx2() { return SgemmKernel<Avx2Ops, 6, 2>::table(core::Isa::kAvx2); }

}  // namespace gemm_detail
}  // namespace kestrel::kernels::cpu
