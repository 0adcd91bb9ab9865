// 2-D pooling plane function for scalar (see pool_inl.h).
#include "kernels/cpu/vec_ops_scalar_inl.h"
//
#include "kernels/cpu/pool/pool_inl.h"

namespace kestrel::kernels::cpu::pool_detail {

const PoolTable* table_scalar() { return make_table(core::Isa::kScalar, "pool.scalar"); }

}  // namespace kestrel::kernels::cpu::pool_detail
