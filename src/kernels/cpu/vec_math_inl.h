// Vector math shared by the CPU kernels (SGEMM epilogues, elementwise, softmax, ...): exp,
// sigmoid, tanh, erf, GELU, written once over a "vector ops" traits type S and instantiated by
// each per-ISA translation unit with its own S.
//
// Include only from a kernel .cc after defining S. Everything sits in an unnamed namespace so the
// copies compiled with different ISA flags never merge at link time.
//
// S provides: V, kWidth, zero, set1, load, load_n, store, store_n, add, sub, mul, div,
// fmadd (a*b+c), max, min, round (to nearest integral value), scale_pow2 (a * 2^n in one instruction) or else
// pow2i (2^n for integral n in [-126, 127]), abs, copysign (magnitude of the first, sign of the second), sqrt,
// select_gt, reduce_add, reduce_max, load_i8 / load_i8_n (int8 widened to float); AVX-512's also frac_floor
// (a - floor(a), for vsilu_bf16).
#pragma once

#include <cstdint>

namespace kestrel::kernels::cpu {
namespace {

// The activations' NaN rule (docs/architecture.md) in one place: a NaN x gives NaN. x86 maxps / minps (and the
// scalar traits) return their second operand when either is NaN, so x is always the second operand.
template <class S>
inline typename S::V vclamp(typename S::V x, typename S::V lo, typename S::V hi) {
  return S::min(hi, S::max(lo, x));
}
template <class S>
inline typename S::V vrelu(typename S::V x) {
  return S::max(S::zero(), x);
}

// exp(x), within 1 ulp on [-87, 88] (0.91 ulp at most against exp in double, every 7th float); clamped outside
// (no inf); NaN stays NaN. The polynomial is the minimax fit of degree 6 to e^r on |r| <= ln2 / 2 with the first two
// coefficients held at 1 (relative error 3.7e-9; Lawson's iteration): as accurate as the degree-7 Taylor polynomial
// it replaced, one FMA shorter. Where S can scale by 2^n in one instruction (AVX-512 vscalefps) it does so instead of
// building 2^n and multiplying. AMD Zen 4, Sigmoid over [1, 96, 56, 56] (kestrel_fast_ops_bench BM_Unary op:7):
// 93-96 -> 88-90 us (three pairs, medians of 9); EfficientNet-B0 at 1 thread 0.989 of the time (8 interleaved rounds).
template <class S>
inline typename S::V vexp(typename S::V x) {
  using V = typename S::V;
  x = vclamp<S>(x, S::set1(-87.0f), S::set1(88.0f));
  // x = n ln2 + r with |r| <= ln2 / 2; ln2 split in two so n * ln2_hi is exact.
  V n = S::round(S::mul(x, S::set1(1.44269504088896341f)));
  V r = S::fmadd(n, S::set1(-0.693145751953125f), x);
  r = S::fmadd(n, S::set1(-1.428606765330187045e-06f), r);
  V p = S::set1(1.387967961e-03f);
  p = S::fmadd(p, r, S::set1(8.368714713e-03f));
  p = S::fmadd(p, r, S::set1(4.166722670e-02f));
  p = S::fmadd(p, r, S::set1(1.666652113e-01f));
  p = S::fmadd(p, r, S::set1(4.999999702e-01f));
  p = S::fmadd(p, r, S::set1(1.f));
  p = S::fmadd(p, r, S::set1(1.f));
  if constexpr (requires { S::scale_pow2(p, n); }) {
    return S::scale_pow2(p, n);
  } else {
    return S::mul(p, S::pow2i(n));
  }
}

// 1 / d: when S has a reciprocal estimate rcp (at least 12 bits), one Newton step with the residual from an FMA
// (about 1 ulp), else a division. AVX-512 has rcp14 (on Zen 5 a division cost several times more). AVX2 divides: on
// AMD Zen 2 a SiLU pass over a row in L1 took 4.8 ns a vector with vdivps against 6.5 with vrcpps + Newton (one
// instruction against four, next to exp's twenty), the Sigmoid op over [1, 96, 56, 56] 216 -> 171 us, EfficientNet-B0's
// 16 -> 96 expansion with SiLU (GEMM epilogue) 1.89 -> 1.61 ms; the depthwise kernels' SiLU no different.
template <class S>
inline __attribute__((always_inline)) typename S::V vrcp(typename S::V d) {
  if constexpr (requires { S::rcp(d); }) {
    const auto r = S::rcp(d);
    const auto e = S::fmadd(S::sub(S::zero(), d), r, S::set1(1.f));  // 1 - d r
    return S::fmadd(r, e, r);
  } else {
    return S::div(S::set1(1.f), d);
  }
}

// sigmoid and SiLU are always inlined: an out-of-line call inside a depthwise kernel's row loop (every ymm register
// is caller-saved) made its SiLU variant 40% slower on Zen 2.
template <class S>
inline __attribute__((always_inline)) typename S::V vsigmoid(typename S::V x) {
  return vrcp<S>(S::add(S::set1(1.f), vexp<S>(S::sub(S::zero(), x))));
}

// x * sigmoid(x) = x / (1 + exp(-x)): with a division, one instruction less.
template <class S>
inline __attribute__((always_inline)) typename S::V vsilu(typename S::V x) {
  const auto d = S::add(S::set1(1.f), vexp<S>(S::sub(S::zero(), x)));
  if constexpr (requires { S::rcp(d); }) {
    return S::mul(x, vrcp<S>(d));
  } else {
    return S::div(x, d);
  }
}

// SiLU to bf16's precision, for the conv epilogues of bf16 math (GemmActivation::kSiluBf16), AVX-512 only (S with
// 16 lanes, vreduceps, vscalefps and the 14-bit reciprocal estimate; other ISAs run vsilu for it, see
// with_activation): exp(-x) = 2^t with t = -x log2(e) = floor(t) + f, f = t - floor(t) in [0, 1) in one vreduceps,
// 2^f by a degree-4 polynomial (the minimax fit of relative error 2.6e-6 on [0, 1], Lawson's iteration), and
// vscalefps multiplies by 2^floor(t) itself (it floors its exponent operand), so no clamp and no rounding step; the
// reciprocal estimate without its Newton step (2^-14). 10 instructions a vector against vsilu's 19. Out of range
// scalef saturates (x < -88: 1 / inf = 0; x > 104: 1), NaN stays NaN. Relative error at most 5.4e-5 against bf16's
// rounding of 2^-9 (SgemmIsaTest.SiluBf16WithinItsBound).
template <class S>
requires(S::kWidth == 16) inline __attribute__((always_inline)) typename S::V vsilu_bf16(typename S::V x) {
  using V = typename S::V;
  const V t = S::mul(x, S::set1(-1.44269504088896341f));
  const V f = S::frac_floor(t);
  V p = S::set1(1.353417016e-02f);
  p = S::fmadd(p, f, S::set1(5.201146716e-02f));
  p = S::fmadd(p, f, S::set1(2.414427442e-01f));
  p = S::fmadd(p, f, S::set1(6.930038398e-01f));
  p = S::fmadd(p, f, S::set1(1.000002593e+00f));
  return S::mul(x, S::rcp(S::add(S::set1(1.f), S::scale_pow2(p, t))));
}

// x * clamp(x / 6 + 1 / 2, 0, 1); a NaN x gives NaN.
template <class S>
inline typename S::V vhard_swish(typename S::V x) {
  return S::mul(x, vclamp<S>(S::fmadd(x, S::set1(1.f / 6.f), S::set1(0.5f)), S::zero(), S::set1(1.f)));
}

// tanh(x) = sign(x) (1 - 2 / (exp(2|x|) + 1)); absolute error ~1e-7.
template <class S>
inline typename S::V vtanh(typename S::V x) {
  auto one = S::set1(1.f);
  auto e = vexp<S>(S::mul(S::abs(x), S::set1(2.f)));
  auto t = S::sub(one, S::div(S::set1(2.f), S::add(e, one)));
  return S::copysign(t, x);
}

// erf(x): Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7), odd extension.
template <class S>
inline typename S::V verf(typename S::V x) {
  using V = typename S::V;
  V ax = S::abs(x);
  V t = S::div(S::set1(1.f), S::fmadd(ax, S::set1(0.3275911f), S::set1(1.f)));
  V p = S::set1(1.061405429f);
  p = S::fmadd(p, t, S::set1(-1.453152027f));
  p = S::fmadd(p, t, S::set1(1.421413741f));
  p = S::fmadd(p, t, S::set1(-0.284496736f));
  p = S::fmadd(p, t, S::set1(0.254829592f));
  p = S::mul(p, t);
  V e = vexp<S>(S::sub(S::zero(), S::mul(ax, ax)));
  V y = S::sub(S::set1(1.f), S::mul(p, e));
  return S::copysign(y, x);
}

template <class S>
inline typename S::V vgelu(typename S::V x) {
  auto half_x = S::mul(x, S::set1(0.5f));
  auto e = verf<S>(S::mul(x, S::set1(0.70710678118654752f)));
  return S::fmadd(half_x, e, half_x);
}

}  // namespace
}  // namespace kestrel::kernels::cpu
