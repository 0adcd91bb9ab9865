// The int8 depthwise plane kernels compiled with this unit's instruction set (avxvnni).
#include "kernels/cpu/qconv/qconv_dw_int_inl.h"

namespace kestrel::kernels::cpu::qconv_detail {

QDwFn qdw_fn_avxvnni() {
  return &dw_int_dispatch<V256<true>>;
}

}  // namespace kestrel::kernels::cpu::qconv_detail
