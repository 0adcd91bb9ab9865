// Portable SGEMM kernels (plain C++, no ISA flags): the fallback on any CPU and the model for
// new ports.
#include "kernels/cpu/gemm/sgemm_ukernel_inl.h"
#include "kernels/cpu/vec_ops_scalar_inl.h"

namespace kestrel::kernels::cpu {
namespace {

// The shared one-lane vector ops; no in-register transpose (the packers fall back to loops).
struct ScalarOps : VecOps {
  static constexpr bool kHasTranspose = false;

  // One lane: a row's sum is the row (the single-column kernels' S::row_sums).
  static V row_sums(const V (&a)[1]) { return a[0]; }

  // One lane: the window of one float at offset 0 of (lo, hi).
  template <int kOff>
  static V window(V lo, V) {
    static_assert(kOff == 0);
    return lo;
  }
};

}  // namespace

namespace gemm_detail {

const UkernelTable* ukernel_table_scalar() {
  return SgemmKernel<ScalarOps, 4, 8>::table(core::Isa::kScalar);
}

}  // namespace gemm_detail
}  // namespace kestrel::kernels::cpu
