// AVX-VNNI int8 GEMM micro-kernel (6 x 16 tile): 256-bit vpdpbusd (VEX encoding) on packed u8 A
// and s8 B, both in groups of 4 k.
#include <immintrin.h>

#include "kernels/cpu/qgemm/qgemm_epilogue_avx2_inl.h"
#include "kernels/cpu/qgemm/qgemm_ukernel_inl.h"

namespace kestrel::kernels::cpu {
namespace {

struct AvxVnniOps {
  static constexpr int kLanes = 8;
  static constexpr int kKg = 4;
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
  // vpdpbusd: 4 u8 (a) x 4 s8 (b) products summed into int32 without intermediate saturation.
  static KESTREL_QGEMM_INLINE V dot(V acc, VA a, VB b) { return _mm256_dpbusd_avx_epi32(acc, a, b); }
  static KESTREL_QGEMM_INLINE void finish(V acc, const ColParams& cp, int j0, const Epilogue& ep, uint8_t* out, int n) {
    qgemm_finish256(acc, cp, j0, ep, out, n);
  }
};

}  // namespace

namespace qgemm_detail {

const UkernelTable* qgemm_table_avxvnni() {
  return QgemmKernel<AvxVnniOps, 6, 2>::table(QgemmIsa::kAvxVnni);
}

}  // namespace qgemm_detail
}  // namespace kestrel::kernels::cpu
