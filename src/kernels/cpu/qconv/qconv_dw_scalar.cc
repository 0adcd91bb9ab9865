// The int8 depthwise plane kernel compiled with this unit's instruction set (scalar).
#include "kernels/cpu/qconv/qconv_dw_inl.h"

namespace kestrel::kernels::cpu::qconv_detail {

QDwFn qdw_fn_scalar() {
  return [](const QDwPlane* p, int n) {
    for (int i = 0; i < n; ++i) qdw_plane(p[i]);
  };
}

}  // namespace kestrel::kernels::cpu::qconv_detail
