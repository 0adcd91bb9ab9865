// Softmax / LayerNorm / row-reduce functions for avx2 (see norm_inl.h).
#include "kernels/cpu/vec_ops_avx2_inl.h"
//
#include "kernels/cpu/norm/norm_inl.h"

namespace kestrel::kernels::cpu::norm_detail {

const NormTable* table_avx2() { return make_table(core::Isa::kAvx2, "norm.avx2"); }

}  // namespace kestrel::kernels::cpu::norm_detail
