// The elementwise row functions, written once over VecOps (vec_ops_<isa>_inl.h) and instantiated
// by each eltwise_<isa>.cc. Include only from those files, after the VecOps header.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/cpu/eltwise/eltwise.h"
#include "kernels/cpu/vec_math_inl.h"

namespace kestrel::kernels::cpu {
namespace {

using S = VecOps;
using V = S::V;
constexpr int kW = S::kWidth;

template <class F>
KESTREL_VEC_INLINE void map_row(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 2 * kW <= n; i += 2 * kW) {
    V a = f(S::load(x + i)), b = f(S::load(x + i + kW));
    S::store(y + i, a);
    S::store(y + i + kW, b);
  }
  for (; i + kW <= n; i += kW) S::store(y + i, f(S::load(x + i)));
  if (i < n) {
    int r = static_cast<int>(n - i);
    S::store_n(y + i, f(S::load_n(x + i, r)), r);
  }
}

// exp over the whole float range: inf above ln(FLT_MAX); vexp alone clamps its input at 88.
// Above 87, exp(x) = exp(x - 1) e, and x - 1 is exact there (same binade).
KESTREL_VEC_INLINE V vexp_full(V x) {
  V big = S::mul(vexp<S>(S::sub(x, S::set1(1.f))), S::set1(2.71828182845904524f));
  V r = S::select_gt(x, S::set1(87.f), big, vexp<S>(x));
  return S::select_gt(x, S::set1(88.7228394f), S::set1(std::numeric_limits<float>::infinity()), r);
}

// tanh with small relative error near 0 too (vtanh's 1 - 2 / (e + 1) cancels there).
KESTREL_VEC_INLINE V vtanh_precise(V x) {
  V x2 = S::mul(x, x);
  V p = S::set1(62.f / 2835.f);
  p = S::fmadd(p, x2, S::set1(-17.f / 315.f));
  p = S::fmadd(p, x2, S::set1(2.f / 15.f));
  p = S::fmadd(p, x2, S::set1(-1.f / 3.f));
  p = S::mul(p, x2);
  V small = S::fmadd(p, x, x);  // Taylor to x^9: relative error < 1e-9 for |x| <= 0.2
  return S::select_gt(S::abs(x), S::set1(0.2f), vtanh<S>(x), small);
}

// erf with small relative error near 0 too (A&S 7.1.26 is only good to 1.5e-7 absolute).
KESTREL_VEC_INLINE V verf_precise(V x) {
  V x2 = S::mul(x, x);
  V p = S::set1(-1.f / 1320.f);
  p = S::fmadd(p, x2, S::set1(1.f / 216.f));
  p = S::fmadd(p, x2, S::set1(-1.f / 42.f));
  p = S::fmadd(p, x2, S::set1(1.f / 10.f));
  p = S::fmadd(p, x2, S::set1(-1.f / 3.f));
  p = S::fmadd(p, x2, S::set1(1.f));
  V small = S::mul(S::mul(p, x), S::set1(1.12837916709551257f));  // 2/sqrt(pi) * Taylor to x^11
  return S::select_gt(S::abs(x), S::set1(0.5f), verf<S>(x), small);
}

// One-lane builds: libm is faster than the polynomial emulation for the transcendental ops.
bool unary_row_libm(const EwUnaryParams& p, const float* x, float* y, int64_t n) {
  if constexpr (kW == 1) {
    auto run = [&](auto f) {
      for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
      return true;
    };
    switch (p.op) {
      case EwUnary::kSigmoid: return run([](float v) { return v >= 0 ? 1.f / (1.f + std::exp(-v)) : std::exp(v) / (1.f + std::exp(v)); });
      case EwUnary::kSilu: return run([](float v) { return v / (1.f + std::exp(-v)); });
      case EwUnary::kTanh: return run([](float v) { return std::tanh(v); });
      case EwUnary::kErf: return run([](float v) { return std::erf(v); });
      case EwUnary::kGeluErf: return run([](float v) { return 0.5f * v * (1.f + std::erf(v * 0.70710678118654752f)); });
      case EwUnary::kExp: return run([](float v) { return std::exp(v); });
      default: return false;
    }
  }
  return false;
}

void unary_row(const EwUnaryParams& p, const float* x, float* y, int64_t n) {
  if (unary_row_libm(p, x, y, n)) return;
  const V zero = S::zero(), one = S::set1(1.f), va = S::set1(p.alpha), vb = S::set1(p.beta);
  switch (p.op) {
    case EwUnary::kIdentity:
      return map_row(x, y, n, [&](V v) { return v; });
    case EwUnary::kRelu:
      return map_row(x, y, n, [&](V v) { return vrelu<S>(v); });
    case EwUnary::kLeakyRelu:
      return map_row(x, y, n, [&](V v) { return S::select_gt(zero, v, S::mul(v, va), v); });
    case EwUnary::kClip:
      return map_row(x, y, n, [&](V v) { return vclamp<S>(v, va, vb); });
    case EwUnary::kSigmoid:
      return map_row(x, y, n, [&](V v) { return vsigmoid<S>(v); });
    case EwUnary::kHardSigmoid:
      return map_row(x, y, n, [&](V v) { return vclamp<S>(S::fmadd(v, va, vb), zero, one); });
    case EwUnary::kHardSwish:
      return map_row(x, y, n, [&](V v) { return vhard_swish<S>(v); });
    case EwUnary::kTanh:
      return map_row(x, y, n, [&](V v) { return vtanh_precise(v); });
    case EwUnary::kErf:
      return map_row(x, y, n, [&](V v) { return verf_precise(v); });
    case EwUnary::kGeluErf: {
      const V half = S::set1(0.5f), rsqrt2 = S::set1(0.70710678118654752f);
      return map_row(x, y, n, [&](V v) {
        V h = S::mul(v, half);
        return S::fmadd(h, verf_precise(S::mul(v, rsqrt2)), h);
      });
    }
    case EwUnary::kExp:
      return map_row(x, y, n, [&](V v) { return vexp_full(v); });
    case EwUnary::kSilu:
      return map_row(x, y, n, [&](V v) { return vsilu<S>(v); });
    case EwUnary::kNeg:
      return map_row(x, y, n, [&](V v) { return S::sub(zero, v); });
    case EwUnary::kAbs:
      return map_row(x, y, n, [&](V v) { return S::abs(v); });
    case EwUnary::kSqrt:
      return map_row(x, y, n, [&](V v) { return S::sqrt(v); });
    case EwUnary::kSquare:
      return map_row(x, y, n, [&](V v) { return S::mul(v, v); });
    case EwUnary::kCube:
      return map_row(x, y, n, [&](V v) { return S::mul(S::mul(v, v), v); });
  }
}

template <class F>
KESTREL_VEC_INLINE void binary_row_with(EwRow kind, const float* a, const float* b, float* y, int64_t n, F f) {
  if (kind == EwRow::kVV) {
    int64_t i = 0;
    for (; i + kW <= n; i += kW) S::store(y + i, f(S::load(a + i), S::load(b + i)));
    if (i < n) {
      int r = static_cast<int>(n - i);
      S::store_n(y + i, f(S::load_n(a + i, r), S::load_n(b + i, r)), r);
    }
  } else if (kind == EwRow::kVS) {
    const V vb = S::set1(*b);
    map_row(a, y, n, [&](V v) { return f(v, vb); });
  } else {
    const V va = S::set1(*a);
    map_row(b, y, n, [&](V v) { return f(va, v); });
  }
}

void binary_row(EwBinary op, EwRow kind, const float* a, const float* b, float* y, int64_t n) {
  switch (op) {
    case EwBinary::kAdd:
      return binary_row_with(kind, a, b, y, n, [](V u, V v) { return S::add(u, v); });
    case EwBinary::kSub:
      return binary_row_with(kind, a, b, y, n, [](V u, V v) { return S::sub(u, v); });
    case EwBinary::kMul:
      return binary_row_with(kind, a, b, y, n, [](V u, V v) { return S::mul(u, v); });
    case EwBinary::kDiv:
      return binary_row_with(kind, a, b, y, n, [](V u, V v) { return S::div(u, v); });
  }
}

void affine_row(const float* x, float* y, int64_t n, float scale, float shift) {
  const V s = S::set1(scale), t = S::set1(shift);
  map_row(x, y, n, [&](V v) { return S::fmadd(v, s, t); });
}

const EltwiseTable* make_table(core::Isa isa, const char* name) {
  static const EltwiseTable t{isa, name, &unary_row, &binary_row, &affine_row};
  return &t;
}

}  // namespace
}  // namespace kestrel::kernels::cpu
