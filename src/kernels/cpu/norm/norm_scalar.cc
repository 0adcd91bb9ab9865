// Softmax / LayerNorm / row-reduce functions for scalar (see norm_inl.h).
#include "kernels/cpu/vec_ops_scalar_inl.h"
//
#include "kernels/cpu/norm/norm_inl.h"

namespace kestrel::kernels::cpu::norm_detail {

const NormTable* table_scalar() { return make_table(core::Isa::kScalar, "norm.scalar"); }

}  // namespace kestrel::kernels::cpu::norm_detail
