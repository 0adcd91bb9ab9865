// The int8 depthwise plane kernel compiled with this unit's instruction set (scalar).
#include "kernels/cpu/qconv/qconv_dw_inl.h"

namespace kestrel::kernels::cpu::qconv_detail {

QDwFn qdw_fn_scalar() {
  return &qdw_plane;
}

}  // namespace kestrel::kernels::cpu::qconv_detail
