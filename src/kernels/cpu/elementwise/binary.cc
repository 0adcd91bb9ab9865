// Fast f32 broadcast binary ops: y viewed as [P, Q, R] with the small operand indexed by q.
#include "kernels/cpu/elementwise/binary.h"

#include <algorithm>

namespace kestrel::kernels::cpu {

namespace {

// If `small` (left-padded to y's rank) equals y on axes [i0, i1) and is 1 elsewhere, gives
// P = prod(y[:i0]), Q = prod(y[i0:i1]), R = prod(y[i1:]).
bool outer_inner(const core::Dims& small, const core::Dims& y, int64_t* p, int64_t* q, int64_t* r) {
  if (small.size() > y.size()) return false;
  const size_t off = y.size() - small.size();
  auto dim = [&](size_t i) { return i < off ? int64_t{1} : small[i - off]; };
  size_t i0 = 0;
  while (i0 < y.size() && dim(i0) == 1) ++i0;
  size_t i1 = i0;
  while (i1 < y.size() && dim(i1) == y[i1]) ++i1;
  for (size_t i = i1; i < y.size(); ++i)
    if (dim(i) != 1) return false;
  *p = *q = *r = 1;
  for (size_t i = 0; i < y.size(); ++i) (i < i0 ? *p : i < i1 ? *q : *r) *= y[i];
  if (*q == 1) {  // a scalar in effect: one long run
    *r *= *p;
    *p = 1;
  }
  return true;
}

template <class F>
void run(const float* full, const float* small, float* y, int64_t p, int64_t q, int64_t r, core::ThreadPool* pool,
         F f) {
  core::parallel_for(pool, p * q, std::max<int64_t>(1, 32768 / std::max<int64_t>(r, 1)), [&](int64_t b0, int64_t b1) {
    for (int64_t pq = b0; pq < b1; ++pq) {
      const float s = small[pq % q];
      const float* in = full + pq * r;
      float* out = y + pq * r;
      for (int64_t i = 0; i < r; ++i) out[i] = f(in[i], s);
    }
  });
}

}  // namespace

bool binary_f32(ref::BinaryOp op, const core::Tensor& a, const core::Tensor& b, core::Tensor& y,
                core::ThreadPool* pool) {
  if (a.dtype() != core::DType::kF32 || b.dtype() != core::DType::kF32 || y.dtype() != core::DType::kF32) return false;
  if (op != ref::BinaryOp::kAdd && op != ref::BinaryOp::kSub && op != ref::BinaryOp::kMul && op != ref::BinaryOp::kDiv)
    return false;
  const float* ad = a.data<float>();
  const float* bd = b.data<float>();
  float* yd = y.data<float>();
  if (a.dims() == y.dims() && b.dims() == y.dims()) {
    const int64_t n = y.num_elements();
    core::parallel_for(pool, n, 32768, [&](int64_t i0, int64_t i1) {
      switch (op) {
        case ref::BinaryOp::kAdd:
          for (int64_t i = i0; i < i1; ++i) yd[i] = ad[i] + bd[i];
          break;
        case ref::BinaryOp::kSub:
          for (int64_t i = i0; i < i1; ++i) yd[i] = ad[i] - bd[i];
          break;
        case ref::BinaryOp::kMul:
          for (int64_t i = i0; i < i1; ++i) yd[i] = ad[i] * bd[i];
          break;
        default:
          for (int64_t i = i0; i < i1; ++i) yd[i] = ad[i] / bd[i];
          break;
      }
    });
    return true;
  }
  int64_t p, q, r;
  const bool a_full = a.dims() == y.dims();
  if (!(a_full ? outer_inner(b.dims(), y.dims(), &p, &q, &r)
               : b.dims() == y.dims() && outer_inner(a.dims(), y.dims(), &p, &q, &r)))
    return false;
  if (y.num_elements() == 0) return true;
  const float* full = a_full ? ad : bd;
  const float* small = a_full ? bd : ad;
  switch (op) {
    case ref::BinaryOp::kAdd:
      run(full, small, yd, p, q, r, pool, [](float x, float s) { return x + s; });
      break;
    case ref::BinaryOp::kMul:
      run(full, small, yd, p, q, r, pool, [](float x, float s) { return x * s; });
      break;
    case ref::BinaryOp::kSub:
      if (a_full) {
        run(full, small, yd, p, q, r, pool, [](float x, float s) { return x - s; });
      } else {
        run(full, small, yd, p, q, r, pool, [](float x, float s) { return s - x; });
      }
      break;
    default:
      if (a_full) {
        run(full, small, yd, p, q, r, pool, [](float x, float s) { return x / s; });
      } else {
        run(full, small, yd, p, q, r, pool, [](float x, float s) { return s / x; });
      }
      break;
  }
  return true;
}

}  // namespace kestrel::kernels::cpu
