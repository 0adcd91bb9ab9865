// 2-D pooling plane function for avx2 (see pool_inl.h).
#include "kernels/cpu/vec_ops_avx2_inl.h"
//
#include "kernels/cpu/pool/pool_inl.h"

namespace kestrel::kernels::cpu::pool_detail {

const PoolTable* table_avx2() { return make_table(core::Isa::kAvx2, "pool.avx2"); }

}  // namespace kestrel::kernels::cpu::pool_detail
