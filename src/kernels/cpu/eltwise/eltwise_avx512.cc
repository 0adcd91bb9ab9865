// Elementwise row functions for avx512 (see eltwise_inl.h).
#include "kernels/cpu/vec_ops_avx512_inl.h"
//
#include "kernels/cpu/eltwise/eltwise_inl.h"

namespace kestrel::kernels::cpu::eltwise_detail {

const EltwiseTable* table_avx512() { return make_table(core::Isa::kAvx512, "eltwise.avx512"); }

}  // namespace kestrel::kernels::cpu::eltwise_detail
