// Softmax / LayerNorm / row-reduce functions for avx512 (see norm_inl.h).
#include "kernels/cpu/vec_ops_avx512_inl.h"
//
#include "kernels/cpu/norm/norm_inl.h"

namespace kestrel::kernels::cpu::norm_detail {

const NormTable* table_avx512() { return make_table(core::Isa::kAvx512, "norm.avx512"); }

}  // namespace kestrel::kernels::cpu::norm_detail
