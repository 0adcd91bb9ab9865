// The Softmax / LayerNorm / row-reduce functions, written once over VecOps and instantiated by
// each norm_<isa>.cc. Include only from those files, after the VecOps header.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/cpu/norm/norm.h"
#include "kernels/cpu/vec_math_inl.h"

namespace kestrel::kernels::cpu {
namespace {

using S = VecOps;
using V = S::V;
constexpr int kW = S::kWidth;

KESTREL_VEC_INLINE int tail(int64_t n, int64_t i) { return static_cast<int>(n - i); }

float row_sum(const float* x, int64_t n) {
  V a0 = S::zero(), a1 = S::zero();
  int64_t i = 0;
  for (; i + 2 * kW <= n; i += 2 * kW) {
    a0 = S::add(a0, S::load(x + i));
    a1 = S::add(a1, S::load(x + i + kW));
  }
  for (; i + kW <= n; i += kW) a0 = S::add(a0, S::load(x + i));
  if (i < n) a1 = S::add(a1, S::load_n(x + i, tail(n, i)));
  return S::reduce_add(S::add(a0, a1));
}

float row_max(const float* x, int64_t n) {
  const V ninf = S::set1(-std::numeric_limits<float>::infinity());
  V m = ninf;
  int64_t i = 0;
  for (; i + kW <= n; i += kW) m = S::max(m, S::load(x + i));
  float r = S::reduce_max(m);
  for (; i < n; ++i) r = x[i] > r ? x[i] : r;
  return r;
}

float reduce_row(RowReduce op, const float* x, int64_t n) {
  switch (op) {
    case RowReduce::kSum: return row_sum(x, n);
    case RowReduce::kMean: return row_sum(x, n) / static_cast<float>(n);
    case RowReduce::kMax: return row_max(x, n);
  }
  return 0.f;
}

void softmax_row(const float* x, float* y, int64_t n, bool log) {
  const float mx = row_max(x, n);
  const V vmx = S::set1(mx);
  V acc = S::zero();
  int64_t i = 0;
  if (log) {
    for (; i + kW <= n; i += kW) acc = S::add(acc, vexp<S>(S::sub(S::load(x + i), vmx)));
    float sum = S::reduce_add(acc);
    for (; i < n; ++i) sum += std::exp(x[i] - mx);
    // (x - max) - log(sum), in that order: x - max is exact near the maximum.
    const V ls = S::set1(std::log(sum));
    for (i = 0; i + kW <= n; i += kW) S::store(y + i, S::sub(S::sub(S::load(x + i), vmx), ls));
    if (i < n) S::store_n(y + i, S::sub(S::sub(S::load_n(x + i, tail(n, i)), vmx), ls), tail(n, i));
    return;
  }
  for (; i + kW <= n; i += kW) {
    V e = vexp<S>(S::sub(S::load(x + i), vmx));
    S::store(y + i, e);
    acc = S::add(acc, e);
  }
  if (i < n) {
    // Masked lanes load 0 and would add exp(0 - max): mask the sum by storing, then re-reading.
    V e = vexp<S>(S::sub(S::load_n(x + i, tail(n, i)), vmx));
    S::store_n(y + i, e, tail(n, i));
    acc = S::add(acc, S::load_n(y + i, tail(n, i)));
  }
  const V inv = S::set1(1.f / S::reduce_add(acc));
  for (i = 0; i + kW <= n; i += kW) S::store(y + i, S::mul(S::load(y + i), inv));
  if (i < n) S::store_n(y + i, S::mul(S::load_n(y + i, tail(n, i)), inv), tail(n, i));
}

void layer_norm_row(const float* x, float* y, int64_t n, const float* scale, const float* bias, float epsilon,
                    float* mean_out, float* inv_out) {
  const float mean = row_sum(x, n) / static_cast<float>(n);
  const V vm = S::set1(mean);
  V acc = S::zero();
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    V d = S::sub(S::load(x + i), vm);
    acc = S::fmadd(d, d, acc);
  }
  float ss = S::reduce_add(acc);
  for (; i < n; ++i) ss += (x[i] - mean) * (x[i] - mean);
  const float inv = 1.f / std::sqrt(ss / static_cast<float>(n) + epsilon);
  const V vi = S::set1(inv);
  for (i = 0; i + kW <= n; i += kW) {
    V v = S::mul(S::mul(S::sub(S::load(x + i), vm), vi), S::load(scale + i));
    S::store(y + i, bias ? S::add(v, S::load(bias + i)) : v);
  }
  if (i < n) {
    const int r = tail(n, i);
    V v = S::mul(S::mul(S::sub(S::load_n(x + i, r), vm), vi), S::load_n(scale + i, r));
    S::store_n(y + i, bias ? S::add(v, S::load_n(bias + i, r)) : v, r);
  }
  *mean_out = mean;
  *inv_out = inv;
}

const NormTable* make_table(core::Isa isa, const char* name) {
  static const NormTable t{isa, name, &softmax_row, &layer_norm_row, &reduce_row};
  return &t;
}

}  // namespace
}  // namespace kestrel::kernels::cpu
