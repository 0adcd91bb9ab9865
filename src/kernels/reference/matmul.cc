// Reference Gemm and MatMul.
#include "kernels/reference/matmul.h"

#include <cstdint>
#include <type_traits>

#include "core/str_util.h"
#include "kernels/reference/broadcast.h"
#include "kernels/reference/float_types.h"

namespace kestrel::kernels::ref {

using core::DType;
using core::str_cat;

namespace {

template <class T>
constexpr bool kIsInt = std::is_integral_v<T>;

// Integer products and sums wrap modulo 2^64 (defined behaviour, unlike signed overflow).
template <class T>
using MatAcc = std::conditional_t<kIsInt<T>, uint64_t, AccT<T>>;

template <class T>
MatAcc<T> acc_of(T v) {
  if constexpr (kIsInt<T>)
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  else
    return to_acc(v);
}

template <class T>
T value_of(MatAcc<T> v) {
  if constexpr (kIsInt<T>)
    return static_cast<T>(v);
  else
    return from_acc<T>(v);
}

// Calls f(T{}) for the dtypes Gemm and MatMul accept.
template <class F>
bool visit_matmul_dtype(DType t, F&& f) {
  switch (t) {
    case DType::kI32:
      f(int32_t{});
      return true;
    case DType::kI64:
      f(int64_t{});
      return true;
    case DType::kU32:
      f(uint32_t{});
      return true;
    case DType::kU64:
      f(uint64_t{});
      return true;
    default:
      return visit_float(t, f);
  }
}

// y[m, n] = sum_k a[m*sa_m + k*sa_k] * b[k*sb_k + n*sb_n] (raw, before alpha/beta).
template <class T>
MatAcc<T> dot(const T* a, int64_t sa_k, const T* b, int64_t sb_k, int64_t k) {
  MatAcc<T> acc{};
  for (int64_t i = 0; i < k; ++i) acc += acc_of(a[i * sa_k]) * acc_of(b[i * sb_k]);
  return acc;
}

template <class T>
void gemm_typed(const GemmParams& p, int64_t m, int64_t n, int64_t k, const Tensor& at, const Tensor& bt,
                const Tensor* ct, Tensor& yt) {
  const T* a = at.data<T>();
  const T* b = bt.data<T>();
  T* y = yt.data<T>();
  // Element (i, kk) of op(a) is a[i*sa_m + kk*sa_k]; likewise for b.
  const int64_t sa_m = p.trans_a ? 1 : k, sa_k = p.trans_a ? m : 1;
  const int64_t sb_k = p.trans_b ? 1 : n, sb_n = p.trans_b ? k : 1;
  core::Dims c_strides{0, 0};
  if (ct) c_strides = broadcast_strides(ct->dims(), core::Dims{m, n});
  const bool exact_int = kIsInt<T> && p.alpha == 1.0f && p.beta == 1.0f;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      MatAcc<T> acc = dot<T>(a + i * sa_m, sa_k, b + j * sb_n, sb_k, k);
      const T* cv = ct ? ct->data<T>() + i * c_strides[0] + j * c_strides[1] : nullptr;
      if constexpr (kIsInt<T>) {
        if (exact_int) {
          y[i * n + j] = static_cast<T>(acc + (cv ? acc_of(*cv) : 0));
        } else {
          double v = static_cast<double>(p.alpha) * static_cast<double>(static_cast<T>(acc));
          if (cv) v += static_cast<double>(p.beta) * static_cast<double>(*cv);
          y[i * n + j] = static_cast<T>(core::saturating_int64(v));
        }
      } else {
        using A = AccT<T>;
        A v = static_cast<A>(p.alpha) * acc;
        if (cv) v += static_cast<A>(p.beta) * to_acc(*cv);
        y[i * n + j] = from_acc<T>(v);
      }
    }
  }
}

}  // namespace

Status gemm(const GemmParams& p, const Tensor& a, const Tensor& b, const Tensor* c, Tensor& y) {
  if (a.rank() != 2 || b.rank() != 2)
    return core::invalid_argument(
        str_cat("Gemm: A and B must be 2-D, are ", a.type_string(), " and ", b.type_string()));
  if (b.dtype() != a.dtype() || y.dtype() != a.dtype() || (c && c->dtype() != a.dtype()))
    return core::invalid_argument("Gemm: inputs and output must share one dtype");
  const int64_t m = p.trans_a ? a.dim(1) : a.dim(0), k = p.trans_a ? a.dim(0) : a.dim(1);
  const int64_t kb = p.trans_b ? b.dim(1) : b.dim(0), n = p.trans_b ? b.dim(0) : b.dim(1);
  if (k != kb) return core::invalid_argument(str_cat("Gemm: inner dimensions differ: ", k, " and ", kb));
  if (y.dims() != core::Dims{m, n})
    return core::invalid_argument(str_cat("Gemm: output ", y.type_string(), " must be [", m, ",", n, "]"));
  if (c) {
    if (c->rank() > 2) return core::invalid_argument(str_cat("Gemm: C ", c->type_string(), " has rank > 2"));
    core::Dims want{m, n};
    for (int64_t i = 0; i < c->rank(); ++i) {
      int64_t d = c->dim(i), w = want[static_cast<size_t>(2 - c->rank() + i)];
      if (d != 1 && d != w)
        return core::invalid_argument(
            str_cat("Gemm: C ", c->type_string(), " does not broadcast to [", m, ",", n, "]"));
    }
  }
  bool ok = visit_matmul_dtype(a.dtype(), [&](auto tag) { gemm_typed<decltype(tag)>(p, m, n, k, a, b, c, y); });
  return ok ? Status::ok() : core::invalid_argument(str_cat("Gemm: unsupported dtype ", core::dtype_name(a.dtype())));
}

Status matmul(const Tensor& a, const Tensor& b, Tensor& y) {
  if (a.rank() < 1 || b.rank() < 1) return core::invalid_argument("MatMul: inputs must have rank >= 1");
  if (b.dtype() != a.dtype() || y.dtype() != a.dtype())
    return core::invalid_argument("MatMul: inputs and output must share one dtype");
  core::Dims ad = a.dims(), bd = b.dims();
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  const int64_t m = ad[ad.size() - 2], k = ad.back(), kb = bd[bd.size() - 2], n = bd.back();
  if (k != kb)
    return core::invalid_argument(
        str_cat("MatMul: inner dimensions differ: ", a.type_string(), " x ", b.type_string()));
  core::Dims abatch(ad.begin(), ad.end() - 2), bbatch(bd.begin(), bd.end() - 2), obatch;
  if (!broadcast_dims({&abatch, &bbatch}, &obatch))
    return core::invalid_argument(
        str_cat("MatMul: batch dims do not broadcast: ", a.type_string(), " x ", b.type_string()));
  core::Dims want = obatch;
  if (a.rank() > 1) want.push_back(m);
  if (b.rank() > 1) want.push_back(n);
  if (y.dims() != want)
    return core::invalid_argument(str_cat("MatMul: output ", y.type_string(), " must be ", core::dims_to_string(want)));
  const std::array<core::Dims, 2> strides = {broadcast_strides(abatch, obatch), broadcast_strides(bbatch, obatch)};
  bool ok = visit_matmul_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* ap = a.data<T>();
    const T* bp = b.data<T>();
    T* yp = y.data<T>();
    for_each_broadcast<2>(obatch, strides, [&](int64_t i, const std::array<int64_t, 2>& off) {
      const T* am = ap + off[0] * m * k;
      const T* bm = bp + off[1] * k * n;
      T* ym = yp + i * m * n;
      for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < n; ++c) ym[r * n + c] = value_of<T>(dot<T>(am + r * k, 1, bm + c, n, k));
    });
  });
  return ok ? Status::ok() : core::invalid_argument(str_cat("MatMul: unsupported dtype ", core::dtype_name(a.dtype())));
}

}  // namespace kestrel::kernels::ref
