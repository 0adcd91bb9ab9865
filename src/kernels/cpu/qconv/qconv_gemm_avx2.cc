// AVX2 NCHW int8 convolution GEMM (4 rows x 16 pixels): activations widened to u16 pairs when
// the panel is packed, weights to s16 pairs, multiplied with vpmaddwd, exact for every u8 x s8
// pair (vpmaddubsw would saturate: 255 * -128 * 2 does not fit in int16).
#include <immintrin.h>

#include "kernels/cpu/qconv/qconv_gemm_avx2_inl.h"
#include "kernels/cpu/qconv/qconv_gemm_inl.h"

namespace kestrel::kernels::cpu::qconv_detail {
namespace {

struct Avx2Qc : Qc256Epilogue {
  static constexpr int kKg = 2;  // 2 k values of 16 bits per 4-byte group
  static KESTREL_QC_INLINE V dot(V acc, VX x, VW w) { return _mm256_add_epi32(acc, _mm256_madd_epi16(x, w)); }
};

}  // namespace

const QcTable* qc_table_avx2() {
  return QcKernel<Avx2Qc, 4, 2>::table();
}

}  // namespace kestrel::kernels::cpu::qconv_detail
