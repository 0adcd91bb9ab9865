// VecOps for the portable kernels: a one-lane "vector" of plain floats (the fallback on any CPU
// and the model for new ports). See vec_math_inl.h for the operations every VecOps provides.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#define KESTREL_VEC_INLINE inline __attribute__((always_inline))

namespace kestrel::kernels::cpu {
namespace {

struct VecOps {
  using V = float;
  static constexpr int kWidth = 1;
  static KESTREL_VEC_INLINE V even(V a, V) { return a; }       // (a, b)[0, 2, 4, ...]
  static KESTREL_VEC_INLINE V odd(V, V b) { return b; }        // (a, b)[1, 3, 5, ...]
  static KESTREL_VEC_INLINE V next_lane(V, V b) { return b; }  // (a, b)[1, ..., W]
  static KESTREL_VEC_INLINE V zero() { return 0.f; }
  static KESTREL_VEC_INLINE V set1(float x) { return x; }
  static KESTREL_VEC_INLINE V load(const float* p) { return *p; }
  static KESTREL_VEC_INLINE V load_n(const float* p, int n) { return n > 0 ? *p : 0.f; }
  static KESTREL_VEC_INLINE void store(float* p, V v) { *p = v; }
  static KESTREL_VEC_INLINE void stream(float* p, V v) { *p = v; }  // no non-temporal scalar store
  static KESTREL_VEC_INLINE void store_n(float* p, V v, int n) {
    if (n > 0) *p = v;
  }
  static KESTREL_VEC_INLINE V add(V a, V b) { return a + b; }
  static KESTREL_VEC_INLINE V sub(V a, V b) { return a - b; }
  static KESTREL_VEC_INLINE V mul(V a, V b) { return a * b; }
  static KESTREL_VEC_INLINE V div(V a, V b) { return a / b; }
  static KESTREL_VEC_INLINE V fmadd(V a, V b, V c) { return a * b + c; }
  // x86 semantics: the second operand when either is NaN.
  static KESTREL_VEC_INLINE V max(V a, V b) { return a > b ? a : b; }
  static KESTREL_VEC_INLINE V min(V a, V b) { return a < b ? a : b; }
  static KESTREL_VEC_INLINE V round(V a) { return std::nearbyint(a); }
  static KESTREL_VEC_INLINE V pow2i(V n) {
    uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
    float r;
    std::memcpy(&r, &bits, sizeof r);
    return r;
  }
  static KESTREL_VEC_INLINE V abs(V a) { return std::fabs(a); }
  static KESTREL_VEC_INLINE V copysign(V mag, V sgn) { return std::copysign(mag, sgn); }
  static KESTREL_VEC_INLINE V sqrt(V a) { return std::sqrt(a); }
  // a > b ? x : y, per lane (false for NaN).
  static KESTREL_VEC_INLINE V select_gt(V a, V b, V x, V y) { return a > b ? x : y; }
  static KESTREL_VEC_INLINE float reduce_add(V a) { return a; }
  static KESTREL_VEC_INLINE float reduce_max(V a) { return a; }
  // kWidth int8 values widened to float (load_i8_n: the first n, the rest 0; reads only n bytes).
  static KESTREL_VEC_INLINE V load_i8(const int8_t* p) { return static_cast<float>(*p); }
  static KESTREL_VEC_INLINE V load_i8_n(const int8_t* p, int n) { return n > 0 ? static_cast<float>(*p) : 0.f; }
};

}  // namespace
}  // namespace kestrel::kernels::cpu
