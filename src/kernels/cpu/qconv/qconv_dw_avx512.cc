// The int8 depthwise plane kernels compiled with this unit's instruction set (avx512).
#include "kernels/cpu/qconv/qconv_dw_int_inl.h"

namespace kestrel::kernels::cpu::qconv_detail {

QDwFn qdw_fn_avx512() {
  return &dw_int_dispatch<V512<false>>;
}

}  // namespace kestrel::kernels::cpu::qconv_detail
