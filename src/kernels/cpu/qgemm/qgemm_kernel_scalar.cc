// Portable int8 GEMM micro-kernel (4 x 8 tile, K in groups of 4 bytes) and the epilogue's reference
// semantics, which the SIMD kernels reproduce bit for bit.
#include <cmath>
#include <cstring>

#include "kernels/cpu/qgemm/qgemm_ukernel_inl.h"

namespace kestrel::kernels::cpu {
namespace {

struct ScalarOps {
  static constexpr int kLanes = 8;
  static constexpr int kKg = 4;
  struct V {
    uint32_t v[kLanes];  // unsigned: wrapping adds are defined
  };
  struct VA {
    int32_t a[4];
  };
  struct VB {
    int32_t b[kLanes][4];
  };

  static V zero() { return V{}; }
  static VA bcast_a(const uint8_t* p) { return VA{{p[0], p[1], p[2], p[3]}}; }
  static VB load_b(const uint8_t* p) {
    VB r;
    for (int j = 0; j < kLanes; ++j)
      for (int e = 0; e < 4; ++e) r.b[j][e] = static_cast<int8_t>(p[j * 4 + e]);
    return r;
  }
  static V dot(V acc, const VA& a, const VB& b) {
    for (int j = 0; j < kLanes; ++j) {
      const int32_t s = a.a[0] * b.b[j][0] + a.a[1] * b.b[j][1] + a.a[2] * b.b[j][2] + a.a[3] * b.b[j][3];
      acc.v[j] += static_cast<uint32_t>(s);
    }
    return acc;
  }

  static void finish(const V& acc, const ColParams& cp, int j0, const Epilogue& ep, uint8_t* out, int n) {
    for (int l = 0; l < n; ++l) {
      const int j = j0 + l;
      const int32_t x = static_cast<int32_t>(acc.v[l] + static_cast<uint32_t>(cp.offset[j]));
      switch (ep.output) {
        case QgemmOutput::kInt32:
          std::memcpy(out + 4 * l, &x, 4);
          break;
        case QgemmOutput::kF32: {
          const float f = static_cast<float>(x) * cp.scale[j];
          std::memcpy(out + 4 * l, &f, 4);
          break;
        }
        case QgemmOutput::kU8:
        case QgemmOutput::kS8: {
          int32_t q;
          if (ep.requant == QgemmRequant::kFloat) {
            float f = static_cast<float>(x) * cp.scale[j];
            f = f > ep.lo_f ? f : ep.lo_f;  // NaN -> lo
            f = f < ep.hi_f ? f : ep.hi_f;
            q = static_cast<int32_t>(std::nearbyint(f)) + ep.zero_point;
          } else {
            const int s = cp.shift[j];
            int64_t p = static_cast<int64_t>(x) * cp.multiplier[j] + (int64_t{1} << (s - 1));
            p >>= s;
            const int64_t lo = ep.lo - ep.zero_point, hi = ep.hi - ep.zero_point;
            p = p < lo ? lo : p > hi ? hi : p;
            q = static_cast<int32_t>(p) + ep.zero_point;
          }
          out[l] = static_cast<uint8_t>(q);  // two's complement byte for kS8
          break;
        }
      }
    }
  }
};

}  // namespace

namespace qgemm_detail {

const UkernelTable* qgemm_table_scalar() {
  return QgemmKernel<ScalarOps, 4, 1>::table(QgemmIsa::kScalar);
}

}  // namespace qgemm_detail
}  // namespace kestrel::kernels::cpu
