// GEMM epilogue activation passes over a "vector ops" traits type S; the vector math itself
// (exp, sigmoid, tanh, erf, GELU) is shared with the other CPU kernels in kernels/cpu/vec_math_inl.h.
//
// Include only from a kernel .cc after defining S. Everything sits in an unnamed namespace so the
// copies compiled with different ISA flags never merge at link time.
#pragma once

#include <cstdint>

#include "kernels/cpu/gemm/sgemm.h"
#include "kernels/cpu/vec_math_inl.h"

namespace kestrel::kernels::cpu {
namespace {

template <class S, class F>
inline void activate_rows_with(float* c, int64_t ldc, int64_t m, int64_t n, F f) {
  constexpr int W = S::kWidth;
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    int64_t j = 0;
    for (; j + W <= n; j += W) S::store(row + j, f(S::load(row + j)));
    if (j < n) {
      int rem = static_cast<int>(n - j);
      S::store_n(row + j, f(S::load_n(row + j, rem)), rem);
    }
  }
}

// Applies any GemmActivation to an [m, n] block in place.
template <class S>
void activate_rows(float* c, int64_t ldc, int64_t m, int64_t n, GemmActivation act, float alpha, float beta) {
  using V = typename S::V;
  const V va = S::set1(alpha), vb = S::set1(beta), zero = S::zero(), one = S::set1(1.f);
  switch (act) {
    case GemmActivation::kNone:
      return;
    case GemmActivation::kRelu:
      return activate_rows_with<S>(c, ldc, m, n, [&](V x) { return S::max(x, zero); });
    case GemmActivation::kClip:
      return activate_rows_with<S>(c, ldc, m, n, [&](V x) { return S::min(S::max(x, va), vb); });
    case GemmActivation::kLeakyRelu:
      return activate_rows_with<S>(c, ldc, m, n, [&](V x) { return S::fmadd(S::min(x, zero), va, S::max(x, zero)); });
    case GemmActivation::kSigmoid:
      return activate_rows_with<S>(c, ldc, m, n, [&](V x) { return vsigmoid<S>(x); });
    case GemmActivation::kHardSigmoid:
      return activate_rows_with<S>(c, ldc, m, n, [&](V x) { return S::min(S::max(S::fmadd(x, va, vb), zero), one); });
    case GemmActivation::kHardSwish: {
      const V sixth = S::set1(1.f / 6.f), half = S::set1(0.5f);
      return activate_rows_with<S>(c, ldc, m, n,
                                   [&](V x) { return S::mul(x, S::min(S::max(S::fmadd(x, sixth, half), zero), one)); });
    }
    case GemmActivation::kSilu:
      return activate_rows_with<S>(c, ldc, m, n, [&](V x) { return vsilu<S>(x); });
    case GemmActivation::kGelu:
      return activate_rows_with<S>(c, ldc, m, n, [&](V x) { return vgelu<S>(x); });
    case GemmActivation::kTanh:
      return activate_rows_with<S>(c, ldc, m, n, [&](V x) { return vtanh<S>(x); });
  }
}

}  // namespace
}  // namespace kestrel::kernels::cpu
