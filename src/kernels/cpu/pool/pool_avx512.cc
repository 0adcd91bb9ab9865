// 2-D pooling plane function for avx512 (see pool_inl.h).
#include "kernels/cpu/vec_ops_avx512_inl.h"
//
#include "kernels/cpu/pool/pool_inl.h"

namespace kestrel::kernels::cpu::pool_detail {

const PoolTable* table_avx512() { return make_table(core::Isa::kAvx512, "pool.avx512"); }

}  // namespace kestrel::kernels::cpu::pool_detail
