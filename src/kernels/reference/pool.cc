// Reference pooling kernels.
#include "kernels/reference/pool.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/str_util.h"
#include "kernels/reference/float_types.h"

namespace kestrel::kernels::ref {

using core::DType;
using core::str_cat;

namespace {

struct PoolDims {
  size_t spatial = 0;
  int64_t planes = 0;  // N * C
  core::Dims in, out;
  int64_t in_size = 1, out_size = 1;
};

Status check_pool(const char* op, const PoolParams& p, const Tensor& x, const Tensor& y, PoolDims* d) {
  if (x.rank() < 3) return core::invalid_argument(str_cat(op, ": input must have rank >= 3, is ", x.type_string()));
  d->spatial = static_cast<size_t>(x.rank() - 2);
  if (p.kernel.size() != d->spatial || p.strides.size() != d->spatial || p.dilations.size() != d->spatial ||
      p.pads_begin.size() != d->spatial || p.pads_end.size() != d->spatial)
    return core::invalid_argument(
        str_cat(op, ": window parameters must have one value per spatial axis (", d->spatial, ")"));
  if (y.rank() != x.rank() || y.dim(0) != x.dim(0) || y.dim(1) != x.dim(1))
    return core::invalid_argument(str_cat(op, ": output ", y.type_string(), " does not match input ", x.type_string()));
  if (y.dtype() != x.dtype()) return core::invalid_argument(str_cat(op, ": output dtype differs from input"));
  for (size_t i = 0; i < d->spatial; ++i) {
    d->in.push_back(x.dim(static_cast<int64_t>(i) + 2));
    d->out.push_back(y.dim(static_cast<int64_t>(i) + 2));
    // Keeps every position product (index * stride, tap * dilation) far from int64 overflow.
    if (p.kernel[i] < 1 || p.strides[i] < 1 || p.dilations[i] < 1 || p.pads_begin[i] < 0 || p.pads_end[i] < 0 ||
        p.pads_begin[i] > core::kMaxElements || p.pads_end[i] > core::kMaxElements ||
        d->out[i] > core::kMaxElements / p.strides[i] || p.kernel[i] > core::kMaxElements / p.dilations[i])
      return core::invalid_argument(str_cat(op, ": bad window parameters on spatial axis ", i));
  }
  d->planes = x.dim(0) * x.dim(1);
  d->in_size = core::num_elements(d->in);
  d->out_size = core::num_elements(d->out);
  return Status::ok();
}

// Walks every output position of one plane and, for each, every window tap:
// on_tap(input spatial offset or -1 when outside the input, inside the padded input),
// then done(output offset).
template <class Tap, class Done>
void for_each_window(const PoolParams& p, const PoolDims& d, Tap&& on_tap, Done&& done) {
  const size_t s = d.spatial;
  std::vector<int64_t> opos(s, 0), kpos(s, 0);
  int64_t k_size = 1;
  for (int64_t k : p.kernel) k_size *= k;
  for (int64_t o = 0; o < d.out_size; ++o) {
    int64_t rem = o;
    for (size_t i = s; i-- > 0;) {
      opos[i] = rem % d.out[i];
      rem /= d.out[i];
    }
    std::fill(kpos.begin(), kpos.end(), 0);
    for (int64_t t = 0; t < k_size; ++t) {
      int64_t off = 0;
      bool inside = true, in_padded = true;
      for (size_t i = 0; i < s; ++i) {
        int64_t ip = opos[i] * p.strides[i] - p.pads_begin[i] + kpos[i] * p.dilations[i];
        if (ip < 0 || ip >= d.in[i]) inside = false;
        if (ip < -p.pads_begin[i] || ip >= d.in[i] + p.pads_end[i]) in_padded = false;
        off = off * d.in[i] + ip;
      }
      on_tap(inside ? off : int64_t{-1}, in_padded);
      for (size_t i = s; i-- > 0;) {
        if (++kpos[i] < p.kernel[i]) break;
        kpos[i] = 0;
      }
    }
    done(o);
  }
}

// Row-major spatial offset -> column-major spatial offset.
int64_t to_column_major(int64_t off, const core::Dims& dims) {
  int64_t col = 0, scale = 1;
  std::vector<int64_t> idx(dims.size());
  for (size_t i = dims.size(); i-- > 0;) {
    idx[i] = off % dims[i];
    off /= dims[i];
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    col += idx[i] * scale;
    scale *= dims[i];
  }
  return col;
}

template <class T>
void max_pool_typed(const PoolParams& p, const PoolDims& d, const Tensor& xt, Tensor& yt, Tensor* it,
                    bool column_major) {
  constexpr bool kFloat = !std::is_integral_v<T>;
  using V = std::conditional_t<kFloat, AccT<T>, int>;
  const V lowest = kFloat ? -std::numeric_limits<V>::infinity() : static_cast<V>(std::numeric_limits<T>::lowest());
  for (int64_t plane = 0; plane < d.planes; ++plane) {
    const T* x = xt.data<T>() + plane * d.in_size;
    T* y = yt.data<T>() + plane * d.out_size;
    int64_t* ind = it ? it->data<int64_t>() + plane * d.out_size : nullptr;
    V best = lowest;
    int64_t best_off = -1;
    for_each_window(
        p, d,
        [&](int64_t off, bool) {
          if (off < 0) return;
          V v;
          if constexpr (kFloat)
            v = to_acc(x[off]);
          else
            v = static_cast<V>(x[off]);
          bool take = best_off < 0 || v > best;
          if constexpr (kFloat) take = take || (std::isnan(v) && !std::isnan(best));
          if (take) {
            best = v;
            best_off = off;
          }
        },
        [&](int64_t o) {
          if constexpr (kFloat)
            y[o] = from_acc<T>(best);
          else
            y[o] = static_cast<T>(best);
          if (ind) {
            ind[o] =
                best_off < 0 ? -1 : plane * d.in_size + (column_major ? to_column_major(best_off, d.in) : best_off);
          }
          best = lowest;
          best_off = -1;
        });
  }
}

template <class T>
void average_pool_typed(const PoolParams& p, const PoolDims& d, bool include_pad, const Tensor& xt, Tensor& yt) {
  using A = AccT<T>;
  for (int64_t plane = 0; plane < d.planes; ++plane) {
    const T* x = xt.data<T>() + plane * d.in_size;
    T* y = yt.data<T>() + plane * d.out_size;
    A sum = 0;
    int64_t count = 0;
    for_each_window(
        p, d,
        [&](int64_t off, bool in_padded) {
          if (off >= 0) sum += to_acc(x[off]);
          if (include_pad ? in_padded : off >= 0) ++count;
        },
        [&](int64_t o) {
          y[o] = from_acc<T>(count > 0 ? sum / static_cast<A>(count) : std::numeric_limits<A>::quiet_NaN());
          sum = 0;
          count = 0;
        });
  }
}

template <class A>
A lp_term(A v, int64_t lp) {
  A a = std::fabs(v);
  if (lp == 1) return a;
  if (lp == 2) return a * a;
  return std::pow(a, static_cast<A>(lp));
}
template <class A>
A lp_root(A sum, int64_t lp) {
  if (lp == 1) return sum;
  if (lp == 2) return std::sqrt(sum);
  return std::pow(sum, A(1) / static_cast<A>(lp));
}

template <class T>
void lp_pool_typed(const PoolParams& p, const PoolDims& d, int64_t lp, const Tensor& xt, Tensor& yt) {
  using A = AccT<T>;
  for (int64_t plane = 0; plane < d.planes; ++plane) {
    const T* x = xt.data<T>() + plane * d.in_size;
    T* y = yt.data<T>() + plane * d.out_size;
    A sum = 0;
    for_each_window(
        p, d,
        [&](int64_t off, bool) {
          if (off >= 0) sum += lp_term(to_acc(x[off]), lp);
        },
        [&](int64_t o) {
          y[o] = from_acc<T>(lp_root(sum, lp));
          sum = 0;
        });
  }
}

}  // namespace

Status max_pool(const PoolParams& p, const Tensor& x, Tensor& y, Tensor* indices, bool column_major) {
  PoolDims d;
  KESTREL_RETURN_IF_ERROR(check_pool("MaxPool", p, x, y, &d));
  if (indices && (indices->dtype() != DType::kI64 || indices->dims() != y.dims()))
    return core::invalid_argument(str_cat("MaxPool: indices ", indices->type_string(), " must be i64 shaped like Y"));
  bool ok = true;
  switch (x.dtype()) {
    case DType::kI8:
      max_pool_typed<int8_t>(p, d, x, y, indices, column_major);
      break;
    case DType::kU8:
      max_pool_typed<uint8_t>(p, d, x, y, indices, column_major);
      break;
    default:
      ok = visit_float(x.dtype(), [&](auto tag) { max_pool_typed<decltype(tag)>(p, d, x, y, indices, column_major); });
  }
  return ok ? Status::ok()
            : core::invalid_argument(str_cat("MaxPool: unsupported dtype ", core::dtype_name(x.dtype())));
}

Status average_pool(const PoolParams& p, bool count_include_pad, const Tensor& x, Tensor& y) {
  PoolDims d;
  KESTREL_RETURN_IF_ERROR(check_pool("AveragePool", p, x, y, &d));
  bool ok = visit_float(x.dtype(), [&](auto tag) { average_pool_typed<decltype(tag)>(p, d, count_include_pad, x, y); });
  return ok ? Status::ok()
            : core::invalid_argument(str_cat("AveragePool: unsupported dtype ", core::dtype_name(x.dtype())));
}

Status lp_pool(const PoolParams& p, int64_t lp, const Tensor& x, Tensor& y) {
  PoolDims d;
  KESTREL_RETURN_IF_ERROR(check_pool("LpPool", p, x, y, &d));
  if (lp < 1) return core::invalid_argument(str_cat("LpPool: p must be >= 1, is ", lp));
  bool ok = visit_float(x.dtype(), [&](auto tag) { lp_pool_typed<decltype(tag)>(p, d, lp, x, y); });
  return ok ? Status::ok() : core::invalid_argument(str_cat("LpPool: unsupported dtype ", core::dtype_name(x.dtype())));
}

Status global_pool(GlobalPoolKind kind, int64_t lp, const Tensor& x, Tensor& y) {
  if (x.rank() < 2)
    return core::invalid_argument(str_cat("global pool: input must have rank >= 2, is ", x.type_string()));
  if (y.dtype() != x.dtype() || y.rank() != x.rank() || y.dim(0) != x.dim(0) || y.dim(1) != x.dim(1) ||
      y.num_elements() != x.dim(0) * x.dim(1))
    return core::invalid_argument(
        str_cat("global pool: output ", y.type_string(), " does not match ", x.type_string()));
  if (kind == GlobalPoolKind::kLp && lp < 1) return core::invalid_argument("GlobalLpPool: p must be >= 1");
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t size = planes == 0 ? 0 : x.num_elements() / planes;
  bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = AccT<T>;
    for (int64_t pl = 0; pl < planes; ++pl) {
      const T* xp = x.data<T>() + pl * size;
      A r = kind == GlobalPoolKind::kMax ? -std::numeric_limits<A>::infinity() : A(0);
      for (int64_t i = 0; i < size; ++i) {
        A v = to_acc(xp[i]);
        if (kind == GlobalPoolKind::kAverage)
          r += v;
        else if (kind == GlobalPoolKind::kLp)
          r += lp_term(v, lp);
        else if (v > r || (std::isnan(v) && !std::isnan(r)))
          r = v;
      }
      if (kind == GlobalPoolKind::kAverage)
        r = size > 0 ? r / static_cast<A>(size) : std::numeric_limits<A>::quiet_NaN();
      if (kind == GlobalPoolKind::kLp) r = lp_root(r, lp);
      y.data<T>()[pl] = from_acc<T>(r);
    }
  });
  return ok ? Status::ok()
            : core::invalid_argument(str_cat("global pool: unsupported dtype ", core::dtype_name(x.dtype())));
}

}  // namespace kestrel::kernels::ref
