// Portable SGEMM kernels (plain C++, no ISA flags): the fallback on any CPU and the model for
// new ports.
#include <cmath>
#include <cstring>

#include "kernels/cpu/gemm/sgemm_ukernel_inl.h"

namespace kestrel::kernels::cpu {
namespace {

struct ScalarOps {
  using V = float;
  static constexpr int kWidth = 1;
  static constexpr bool kHasTranspose = false;
  static KESTREL_GEMM_INLINE V zero() { return 0.f; }
  static KESTREL_GEMM_INLINE V set1(float x) { return x; }
  static KESTREL_GEMM_INLINE V load(const float* p) { return *p; }
  static KESTREL_GEMM_INLINE V load_n(const float* p, int n) { return n > 0 ? *p : 0.f; }
  static KESTREL_GEMM_INLINE void store(float* p, V v) { *p = v; }
  static KESTREL_GEMM_INLINE void store_n(float* p, V v, int n) {
    if (n > 0) *p = v;
  }
  static KESTREL_GEMM_INLINE V add(V a, V b) { return a + b; }
  static KESTREL_GEMM_INLINE V sub(V a, V b) { return a - b; }
  static KESTREL_GEMM_INLINE V mul(V a, V b) { return a * b; }
  static KESTREL_GEMM_INLINE V div(V a, V b) { return a / b; }
  static KESTREL_GEMM_INLINE V fmadd(V a, V b, V c) { return a * b + c; }
  static KESTREL_GEMM_INLINE V max(V a, V b) { return a > b ? a : b; }
  static KESTREL_GEMM_INLINE V min(V a, V b) { return a < b ? a : b; }
  static KESTREL_GEMM_INLINE V round(V a) { return std::nearbyint(a); }
  static KESTREL_GEMM_INLINE V pow2i(V n) {
    uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
    float r;
    std::memcpy(&r, &bits, sizeof r);
    return r;
  }
  static KESTREL_GEMM_INLINE V abs(V a) { return std::fabs(a); }
  static KESTREL_GEMM_INLINE V copysign(V mag, V sgn) { return std::copysign(mag, sgn); }
};

}  // namespace

namespace gemm_detail {

const UkernelTable* ukernel_table_scalar() {
  return SgemmKernel<ScalarOps, 4, 8>::table(core::Isa::kScalar);
}

}  // namespace gemm_detail
}  // namespace kestrel::kernels::cpu
