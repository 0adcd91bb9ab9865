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

// Calls f with the functor of kSilu or kSiluBf16. bf16 math's SiLU has a copy of its own only on AVX-512 (the one ISA
// FastConv::enable_bf16 gives it to); elsewhere it shares SiLU's, which is within its bound, so kernels instantiated
// per activation do not grow there (with_activation, conv_detail::with_fused_activation).
template <class S, class F>
void with_silu(GemmActivation kind, F f) {
  using V = typename S::V;
  if constexpr (S::kWidth == 16) {
    if (kind == GemmActivation::kSiluBf16) return f([](V x) { return vsilu_bf16<S>(x); });
  }
  return f([](V x) { return vsilu<S>(x); });
}

// Calls f with a functor V -> V for one GemmActivation: the one place the fused activations are written for the fast
// kernels. A NaN input gives NaN for every kind (vclamp / vrelu in kernels/cpu/vec_math_inl.h).
template <class S, class F>
void with_activation(GemmActivation kind, float alpha, float beta, F f) {
  using V = typename S::V;
  const V va = S::set1(alpha), vb = S::set1(beta), zero = S::zero(), one = S::set1(1.f);
  switch (kind) {
    case GemmActivation::kNone:
      return f([](V x) { return x; });
    case GemmActivation::kRelu:
      return f([](V x) { return vrelu<S>(x); });
    case GemmActivation::kClip:
      return f([=](V x) { return vclamp<S>(x, va, vb); });
    case GemmActivation::kLeakyRelu:
      return f([=](V x) { return S::fmadd(S::min(zero, x), va, vrelu<S>(x)); });  // x second in min too
    case GemmActivation::kSigmoid:
      return f([](V x) { return vsigmoid<S>(x); });
    case GemmActivation::kHardSigmoid:
      return f([=](V x) { return vclamp<S>(S::fmadd(x, va, vb), zero, one); });
    case GemmActivation::kHardSwish:
      return f([](V x) { return vhard_swish<S>(x); });
    case GemmActivation::kSilu:
    case GemmActivation::kSiluBf16:
      return with_silu<S>(kind, f);
    case GemmActivation::kGelu:
      return f([](V x) { return vgelu<S>(x); });
    case GemmActivation::kTanh:
      return f([](V x) { return vtanh<S>(x); });
  }
}

// Applies any GemmActivation to an [m, n] block in place.
template <class S>
void activate_rows(float* c, int64_t ldc, int64_t m, int64_t n, GemmActivation act, float alpha, float beta) {
  if (act == GemmActivation::kNone) return;
  with_activation<S>(act, alpha, beta, [&](auto f) { activate_rows_with<S>(c, ldc, m, n, f); });
}

}  // namespace
}  // namespace kestrel::kernels::cpu
