// Elementwise row functions for avx2 (see eltwise_inl.h).
#include "kernels/cpu/vec_ops_avx2_inl.h"
//
#include "kernels/cpu/eltwise/eltwise_inl.h"

namespace kestrel::kernels::cpu::eltwise_detail {

const EltwiseTable* table_avx2() { return make_table(core::Isa::kAvx2, "eltwise.avx2"); }

}  // namespace kestrel::kernels::cpu::eltwise_detail
