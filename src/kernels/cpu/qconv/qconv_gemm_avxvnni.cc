// AVX-VNNI NCHW int8 convolution GEMM (6 rows x 16 pixels): 256-bit vpdpbusd (VEX) of 8 pixels'
// 4 u8 activations against one row's 4 s8 weights broadcast to every lane.
#include <immintrin.h>

#include "kernels/cpu/qconv/qconv_gemm_avx2_inl.h"
#include "kernels/cpu/qconv/qconv_gemm_inl.h"

namespace kestrel::kernels::cpu::qconv_detail {
namespace {

struct AvxVnniQc : Qc256Epilogue {
  static constexpr int kKg = 4;
  // vpdpbusd: 4 u8 (x) x 4 s8 (w) products summed into int32 without intermediate saturation.
  // (asm: with the intrinsic GCC 12 copied the tied accumulator through another register and the
  // stack every k step)
  static KESTREL_QC_INLINE V dot(V acc, VX x, VW w) {
    asm("%{vex%} vpdpbusd %[w], %[x], %[a]" : [a] "+x"(acc) : [x] "x"(x), [w] "x"(w));
    return acc;
  }
};

}  // namespace

const QcTable* qc_table_avxvnni() {
  return QcKernel<AvxVnniQc, 6, 2>::table();
}

}  // namespace kestrel::kernels::cpu::qconv_detail
