// The u8 row kernels compiled with this unit's instruction set (avx2).
#include "kernels/cpu/qops/qops_inl.h"

namespace kestrel::kernels::cpu::qops_detail {

QopsFns qops_fns_avx2() {
  return make_fns();
}

}  // namespace kestrel::kernels::cpu::qops_detail
