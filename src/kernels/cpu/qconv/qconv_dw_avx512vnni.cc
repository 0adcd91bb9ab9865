// The int8 depthwise plane kernels compiled with this unit's instruction set (avx512vnni).
#include "kernels/cpu/qconv/qconv_dw_int_inl.h"

namespace kestrel::kernels::cpu::qconv_detail {

QDwFn qdw_fn_avx512vnni() {
  return &dw_int_dispatch<V512<true>>;
}

}  // namespace kestrel::kernels::cpu::qconv_detail
