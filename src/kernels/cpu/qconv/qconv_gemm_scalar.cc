// Portable NCHW int8 convolution GEMM (4 rows x 8 pixels) with the epilogue's reference
// arithmetic, which the SIMD kernels reproduce bit for bit; also the ISA dispatch.
#include <cmath>
#include <cstring>

#include "kernels/cpu/qconv/qconv_gemm_inl.h"

namespace kestrel::kernels::cpu::qconv_detail {
namespace {

struct ScalarQc {
  static constexpr int kLanes = 8;
  static constexpr int kKg = 4;
  struct V {
    uint32_t v[kLanes];  // unsigned: wrapping adds are defined
  };
  struct VX {
    uint8_t x[kLanes * 4];
  };
  struct VW {
    int32_t w[4];
  };
  static V splat(int32_t s) {
    V r;
    for (auto& v : r.v) v = static_cast<uint32_t>(s);
    return r;
  }
  static V add(V a, const V& b) {
    for (int j = 0; j < kLanes; ++j) a.v[j] += b.v[j];
    return a;
  }
  static VX load_x(const uint8_t* p) {
    VX r;
    std::memcpy(r.x, p, sizeof(r.x));
    return r;
  }
  static VW bcast_w(const uint8_t* p) {
    return VW{
        {static_cast<int8_t>(p[0]), static_cast<int8_t>(p[1]), static_cast<int8_t>(p[2]), static_cast<int8_t>(p[3])}};
  }
  static V dot(V acc, const VX& x, const VW& w) {
    for (int j = 0; j < kLanes; ++j) {
      const uint8_t* q = x.x + 4 * j;
      acc.v[j] += static_cast<uint32_t>(q[0] * w.w[0] + q[1] * w.w[1] + q[2] * w.w[2] + q[3] * w.w[3]);
    }
    return acc;
  }
  template <bool I32>
  static void finish(const V& acc, float scale, const QcEpilogue& ep, uint8_t* out, int n) {
    for (int l = 0; l < n; ++l) {
      const int32_t x = static_cast<int32_t>(acc.v[l]);
      if constexpr (I32) {
        std::memcpy(out + 4 * l, &x, 4);
      } else {
        float f = static_cast<float>(x) * scale;
        f = f > ep.lo_f ? f : ep.lo_f;  // NaN -> lo
        f = f < ep.hi_f ? f : ep.hi_f;
        out[l] = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(f)) + ep.zp);
      }
    }
  }
};

}  // namespace

const QcTable* qc_table_scalar() {
  return QcKernel<ScalarQc, 4, 1>::table();
}

const QcTable* qc_table(QgemmIsa isa) {
  switch (isa) {
    case QgemmIsa::kScalar:
      return qc_table_scalar();
#if defined(__x86_64__) || defined(_M_X64)
    case QgemmIsa::kAvx2:
      return qc_table_avx2();
    case QgemmIsa::kAvxVnni:
      return qc_table_avxvnni();
    case QgemmIsa::kAvx512Vnni:
      return qc_table_avx512vnni();
#else
    default:
      return nullptr;
#endif
  }
  return nullptr;
}

}  // namespace kestrel::kernels::cpu::qconv_detail
