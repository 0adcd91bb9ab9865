// The u8 row kernels compiled with this unit's instruction set (avx512).
// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 headers (the self-initialized
// "undefined" vectors of the masked intrinsics); the warning is about the headers, not this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/cpu/qops/qops_inl.h"

namespace kestrel::kernels::cpu::qops_detail {

QopsFns qops_fns_avx512() {
  return make_fns();
}

}  // namespace kestrel::kernels::cpu::qops_detail
