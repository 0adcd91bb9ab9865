// Depthwise plane kernel, portable C++ (no ISA flags): the fallback, and the model for a NEON port.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/conv/depthwise_blocked_inl.h"
#include "kernels/cpu/conv/winograd_inl.h"

namespace kestrel::kernels::cpu::conv_detail {
namespace {

struct ScalarOps {
  using V = float;
  static constexpr int kWidth = 1;
  static void transpose(V*) {}
  static void deinterleave(V a, V b, V& even, V& odd) {
    even = a;
    odd = b;
  }
  static void interleave(V even, V odd, V& lo, V& hi) {
    lo = even;
    hi = odd;
  }
  static void deinterleave_shuffled(V a, V b, V& even, V& odd) { deinterleave(a, b, even, odd); }
  static V unshuffle(V v) { return v; }
  using M = bool;
  static M lanes(int lo, int hi) { return lo <= 0 && hi > 0; }
  static V load_masked(const float* p, M m) { return m ? *p : 0.f; }
  static V load_lanes(const float* p, int lo, int hi) { return load_masked(p, lanes(lo, hi)); }
  static V zero() { return 0.f; }
  static V set1(float x) { return x; }
  static V load(const float* p) { return *p; }
  static V load_n(const float* p, int n) { return n > 0 ? *p : 0.f; }
  static void store(float* p, V v) { *p = v; }
  static void stream(float* p, V v) { *p = v; }  // no non-temporal scalar store
  static void stream_fence() {}
  static void store_n(float* p, V v, int n) {
    if (n > 0) *p = v;
  }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  static V div(V a, V b) { return a / b; }
  static V fmadd(V a, V b, V c) { return a * b + c; }
  static V max(V a, V b) { return a > b ? a : b; }
  static V min(V a, V b) { return a < b ? a : b; }
  static V round(V a) { return std::nearbyint(a); }
  static V pow2i(V n) {
    uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
    float r;
    std::memcpy(&r, &bits, sizeof r);
    return r;
  }
  static V abs(V a) { return std::fabs(a); }
  static V copysign(V mag, V sgn) { return std::copysign(mag, sgn); }
};

}  // namespace

DepthwiseBlocked depthwise_blocked_scalar() {
  return {ScalarOps::kWidth, &depthwise_block<ScalarOps>, &grouped_block<ScalarOps>, &stem_block<ScalarOps>,
          &depthwise_nhwc<ScalarOps>};
}
WinogradKernels winograd_kernels_scalar() {
  return {&winograd_input<ScalarOps>, &winograd_output<ScalarOps>};
}
Im2colFn im2col_fn_scalar() {
  return &im2col_rows<ScalarOps>;
}
TransposeOutFn transpose_out_fn_scalar() {
  return &transpose_out<ScalarOps>;
}
SoftmaxRowsFn softmax_rows_fn_scalar() {
  return &softmax_rows<ScalarOps>;
}

}  // namespace kestrel::kernels::cpu::conv_detail
