// AVX2 int8 GEMM micro-kernel (4 x 16 tile): A and B widened to 16 bits at packing time and
// multiplied with vpmaddwd, which is exact for every u8 x s8 pair. vpmaddubsw is not used: it adds
// two u8 x s8 products into a saturating int16, and 255 * -128 * 2 = -65280 does not fit (see
// docs/qgemm.md for the alternatives and why this one).
#include <immintrin.h>

#include "kernels/cpu/qgemm/qgemm_epilogue_avx2_inl.h"
#include "kernels/cpu/qgemm/qgemm_ukernel_inl.h"

namespace kestrel::kernels::cpu {
namespace {

struct Avx2Ops {
  static constexpr int kLanes = 8;
  static constexpr int kKg = 2;  // 2 k values of 16 bits per 4-byte group
  using V = __m256i;
  using VA = __m256i;
  using VB = __m256i;
  static KESTREL_QGEMM_INLINE V zero() { return _mm256_setzero_si256(); }
  static KESTREL_QGEMM_INLINE VB load_b(const uint8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  static KESTREL_QGEMM_INLINE VA bcast_a(const uint8_t* p) {
    int32_t w;
    std::memcpy(&w, p, 4);
    return _mm256_set1_epi32(w);
  }
  // a: (a0, a1) as u16 in [0, 255]; b: (b0, b1) as s16 in [-128, 127]; a0 b0 + a1 b1 is exact.
  static KESTREL_QGEMM_INLINE V dot(V acc, VA a, VB b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
  static KESTREL_QGEMM_INLINE void finish(V acc, const ColParams& cp, int j0, const Epilogue& ep, uint8_t* out, int n) {
    qgemm_finish256(acc, cp, j0, ep, out, n);
  }
};

}  // namespace

namespace qgemm_detail {

const UkernelTable* qgemm_table_avx2() {
  return QgemmKernel<Avx2Ops, 4, 2>::table(QgemmIsa::kAvx2);
}

}  // namespace qgemm_detail
}  // namespace kestrel::kernels::cpu
