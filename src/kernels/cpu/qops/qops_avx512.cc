// The u8 row kernels compiled with this unit's instruction set (avx512).
#include "kernels/cpu/qops/qops_inl.h"

namespace kestrel::kernels::cpu::qops_detail {

QopsFns qops_fns_avx512() {
  return make_fns();
}

}  // namespace kestrel::kernels::cpu::qops_detail
