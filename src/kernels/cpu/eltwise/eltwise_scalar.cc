// Elementwise row functions for scalar (see eltwise_inl.h).
#include "kernels/cpu/vec_ops_scalar_inl.h"
//
#include "kernels/cpu/eltwise/eltwise_inl.h"

namespace kestrel::kernels::cpu::eltwise_detail {

const EltwiseTable* table_scalar() { return make_table(core::Isa::kScalar, "eltwise.scalar"); }

}  // namespace kestrel::kernels::cpu::eltwise_detail
