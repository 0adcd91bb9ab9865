// Reference reduction kernels.
#include "kernels/reference/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>

#include "core/str_util.h"
#include "kernels/reference/broadcast.h"

namespace kestrel::kernels::ref {

using core::DType;
using core::str_cat;

namespace {

template <class T>
constexpr bool is_half_v = std::is_same_v<T, core::Float16> || std::is_same_v<T, core::BFloat16>;

// Comparison type: float for f16/bf16, T itself otherwise (exact for 64-bit integers).
template <class T>
using CmpT = std::conditional_t<is_half_v<T>, float, T>;

template <class T>
CmpT<T> load(T v) {
  if constexpr (is_half_v<T>) return static_cast<float>(v);
  else return v;
}

template <class T>
double to_double(T v) {
  return static_cast<double>(load(v));
}

// double -> T: rounding for floats; truncating and saturating for integers (NaN -> 0).
template <class T>
T from_double(double v) {
  if constexpr (is_half_v<T>) {
    return T(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

template <class T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

// Offsets into the reduced output seen from the input's dims: 0 along reduced dims.
core::Dims kept_strides(const core::Dims& dims, const std::vector<bool>& reduced) {
  core::Dims s(dims.size(), 0);
  int64_t stride = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    if (reduced[d]) continue;
    s[d] = stride;
    stride *= dims[d];
  }
  return s;
}

// Float path (also integer L2 / LogSum / LogSumExp): accumulate in double.
template <class T>
void reduce_in_double(ReduceOp op, const Tensor& x, const core::Dims& ys, int64_t count, Tensor& y) {
  const int64_t m = y.num_elements();
  const double inf = std::numeric_limits<double>::infinity();
  double init = 0;
  if (op == ReduceOp::kMax) init = -inf;
  if (op == ReduceOp::kMin) init = inf;
  if (op == ReduceOp::kProd) init = 1;
  std::vector<double> acc(static_cast<size_t>(m), init);
  const T* px = x.data<T>();
  std::vector<double> peak;
  if (op == ReduceOp::kLogSumExp) {
    // exp() of the raw values overflows for x > ~709: subtract each output's maximum first.
    peak.assign(static_cast<size_t>(m), -inf);
    for_each_broadcast<1>(x.dims(), {ys}, [&](int64_t i, const std::array<int64_t, 1>& o) {
      double v = to_double(px[i]);
      double& p = peak[static_cast<size_t>(o[0])];
      if (std::isnan(v) || v > p) p = std::isnan(p) ? p : v;
    });
  }
  for_each_broadcast<1>(x.dims(), {ys}, [&](int64_t i, const std::array<int64_t, 1>& o) {
    const double v = to_double(px[i]);
    double& a = acc[static_cast<size_t>(o[0])];
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean:
      case ReduceOp::kLogSum: a += v; break;
      case ReduceOp::kMax:
        if (std::isnan(v) || v > a) a = std::isnan(a) ? a : v;
        break;
      case ReduceOp::kMin:
        if (std::isnan(v) || v < a) a = std::isnan(a) ? a : v;
        break;
      case ReduceOp::kProd: a *= v; break;
      case ReduceOp::kL1: a += std::fabs(v); break;
      case ReduceOp::kL2:
      case ReduceOp::kSumSquare: a += v * v; break;
      case ReduceOp::kLogSumExp: {
        double p = peak[static_cast<size_t>(o[0])];
        if (std::isfinite(p)) a += std::exp(v - p);
        break;
      }
    }
  });
  T* py = y.data<T>();
  for (int64_t j = 0; j < m; ++j) {
    double a = acc[static_cast<size_t>(j)];
    switch (op) {
      case ReduceOp::kMean: a = count == 0 ? std::numeric_limits<double>::quiet_NaN() : a / static_cast<double>(count); break;
      case ReduceOp::kL2: a = std::sqrt(a); break;
      case ReduceOp::kLogSum: a = std::log(a); break;
      case ReduceOp::kLogSumExp: {
        double p = peak[static_cast<size_t>(j)];
        a = std::isfinite(p) ? p + std::log(a) : p;  // NaN, +inf, or -inf for an empty / all -inf slice
        break;
      }
      default: break;
    }
    py[j] = from_double<T>(a);
  }
}

// Integer Sum/Mean/Prod/L1/SumSquare: exact, wrapping modulo 2^64 (no signed-overflow UB), then
// converted to T (modular). Max/Min compare in T.
template <class T>
void reduce_integer(ReduceOp op, const Tensor& x, const core::Dims& ys, int64_t count, Tensor& y) {
  const int64_t m = y.num_elements();
  const T* px = x.data<T>();
  T* py = y.data<T>();
  if (op == ReduceOp::kMax || op == ReduceOp::kMin) {
    const bool is_max = op == ReduceOp::kMax;
    std::fill(py, py + m, is_max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
    for_each_broadcast<1>(x.dims(), {ys}, [&](int64_t i, const std::array<int64_t, 1>& o) {
      T& a = py[o[0]];
      if (is_max ? px[i] > a : px[i] < a) a = px[i];
    });
    return;
  }
  std::vector<uint64_t> acc(static_cast<size_t>(m), op == ReduceOp::kProd ? 1 : 0);
  for_each_broadcast<1>(x.dims(), {ys}, [&](int64_t i, const std::array<int64_t, 1>& o) {
    const uint64_t v = static_cast<uint64_t>(px[i]);
    uint64_t& a = acc[static_cast<size_t>(o[0])];
    switch (op) {
      case ReduceOp::kProd: a *= v; break;
      case ReduceOp::kL1:
        if constexpr (std::is_signed_v<T>) a += px[i] < 0 ? 0 - v : v;
        else a += v;
        break;
      case ReduceOp::kSumSquare: a += v * v; break;
      default: a += v; break;  // Sum, Mean
    }
  });
  for (int64_t j = 0; j < m; ++j) {
    uint64_t a = acc[static_cast<size_t>(j)];
    if (op == ReduceOp::kMean) {
      if (count == 0) {
        a = 0;
      } else if constexpr (std::is_signed_v<T>) {
        a = static_cast<uint64_t>(static_cast<int64_t>(a) / count);
      } else {
        a /= static_cast<uint64_t>(count);
      }
    }
    py[j] = static_cast<T>(a);
  }
}

void reduce_bool(bool is_max, const Tensor& x, const core::Dims& ys, Tensor& y) {
  bool* py = y.data<bool>();
  const bool* px = x.data<bool>();
  std::fill(py, py + y.num_elements(), !is_max);
  for_each_broadcast<1>(x.dims(), {ys}, [&](int64_t i, const std::array<int64_t, 1>& o) {
    if (is_max) py[o[0]] = py[o[0]] || px[i];
    else py[o[0]] = py[o[0]] && px[i];
  });
}

struct AxisLayout {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisLayout axis_layout(const core::Dims& dims, int64_t axis) {
  AxisLayout l;
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
    int64_t v = dims[static_cast<size_t>(d)];
    if (d < axis) l.outer *= v;
    else if (d == axis) l.n = v;
    else l.inner *= v;
  }
  return l;
}

Status check_axis(const Tensor& x, int64_t axis, const char* op) {
  if (axis < 0 || axis >= x.rank())
    return core::invalid_argument(str_cat(op, ": axis ", axis, " is out of range for ", x.type_string()));
  return Status::ok();
}

}  // namespace

core::Result<std::vector<bool>> reduce_mask(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<bool> mask(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return core::invalid_argument(str_cat("axis ", a, " is out of range for rank ", rank));
    size_t d = static_cast<size_t>(a < 0 ? a + rank : a);
    if (mask[d]) return core::invalid_argument(str_cat("axis ", a, " is repeated in axes [", core::join(axes), "]"));
    mask[d] = true;
  }
  return mask;
}

Status reduce(ReduceOp op, const Tensor& x, const std::vector<bool>& reduced, Tensor& y) {
  if (reduced.size() != static_cast<size_t>(x.rank()))
    return core::invalid_argument(str_cat("reduce: ", reduced.size(), " axis flags for ", x.type_string()));
  if (y.dtype() != x.dtype())
    return core::invalid_argument(str_cat("reduce: output ", y.type_string(), " for input ", x.type_string()));
  int64_t kept = 1, count = 1;
  for (size_t d = 0; d < reduced.size(); ++d) (reduced[d] ? count : kept) *= x.dims()[d];
  if (y.num_elements() != kept)
    return core::invalid_argument(str_cat("reduce: output ", y.type_string(), " does not hold the ", kept,
                                          " kept elements of ", x.type_string()));
  const core::Dims ys = kept_strides(x.dims(), reduced);
  Status st = Status::ok();
  bool ok = core::visit_numeric_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      if (op == ReduceOp::kMax || op == ReduceOp::kMin) reduce_bool(op == ReduceOp::kMax, x, ys, y);
      else st = core::invalid_argument("reduce: bool tensors support only ReduceMax and ReduceMin");
    } else if constexpr (std::is_integral_v<T>) {
      if (op == ReduceOp::kL2 || op == ReduceOp::kLogSum || op == ReduceOp::kLogSumExp)
        reduce_in_double<T>(op, x, ys, count, y);
      else
        reduce_integer<T>(op, x, ys, count, y);
    } else {
      reduce_in_double<T>(op, x, ys, count, y);
    }
  });
  if (!ok) return core::invalid_argument(str_cat("reduce: unsupported dtype ", core::dtype_name(x.dtype())));
  return st;
}

Status arg_reduce(bool is_max, const Tensor& x, int64_t axis, bool select_last_index, Tensor& y) {
  const char* op = is_max ? "ArgMax" : "ArgMin";
  KESTREL_RETURN_IF_ERROR(check_axis(x, axis, op));
  if (y.dtype() != DType::kI64) return core::invalid_argument(str_cat(op, ": output must be int64"));
  const AxisLayout l = axis_layout(x.dims(), axis);
  if (y.num_elements() != l.outer * l.inner)
    return core::invalid_argument(str_cat(op, ": output ", y.type_string(), " does not fit input ", x.type_string()));
  if (l.n == 0 && y.num_elements() > 0) return core::invalid_argument(str_cat(op, ": axis ", axis, " is empty"));
  int64_t* out = y.data<int64_t>();
  Status st = Status::ok();
  bool ok = core::visit_numeric_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      st = core::invalid_argument(str_cat(op, " does not take bool"));
    } else {
      const T* px = x.data<T>();
      for (int64_t o = 0; o < l.outer; ++o) {
        for (int64_t i = 0; i < l.inner; ++i) {
          const T* p = px + o * l.n * l.inner + i;
          int64_t best = 0;
          CmpT<T> bv = load(p[0]);
          for (int64_t j = 1; j < l.n; ++j) {
            CmpT<T> v = load(p[j * l.inner]);
            bool take;
            if (is_nan(bv)) take = select_last_index && is_nan(v);  // the first NaN wins, as in numpy
            else if (is_nan(v)) take = true;
            else if (v == bv) take = select_last_index;
            else take = is_max ? v > bv : v < bv;
            if (take) {
              best = j;
              bv = v;
            }
          }
          out[o * l.inner + i] = best;
        }
      }
    }
  });
  if (!ok) return core::invalid_argument(str_cat(op, ": unsupported dtype ", core::dtype_name(x.dtype())));
  return st;
}

Status top_k(const TopKParams& p, const Tensor& x, Tensor& values, Tensor& indices) {
  KESTREL_RETURN_IF_ERROR(check_axis(x, p.axis, "TopK"));
  const AxisLayout l = axis_layout(x.dims(), p.axis);
  if (p.k < 0 || p.k > l.n)
    return core::invalid_argument(str_cat("TopK: k = ", p.k, " is outside [0, ", l.n, "] for axis ", p.axis, " of ",
                                          x.type_string()));
  if (values.dtype() != x.dtype() || indices.dtype() != DType::kI64 ||
      values.num_elements() != l.outer * p.k * l.inner || indices.num_elements() != values.num_elements())
    return core::invalid_argument(str_cat("TopK: outputs ", values.type_string(), " and ", indices.type_string(),
                                          " do not fit k = ", p.k, " of ", x.type_string()));
  Status st = Status::ok();
  bool ok = core::visit_numeric_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      st = core::invalid_argument("TopK does not take bool");
    } else {
      const T* px = x.data<T>();
      T* pv = values.data<T>();
      int64_t* pi = indices.data<int64_t>();
      // NaN sorts above every number; equal values keep index order.
      auto greater = [](CmpT<T> a, CmpT<T> b) {
        if (is_nan(a)) return !is_nan(b);
        if (is_nan(b)) return false;
        return a > b;
      };
      std::vector<int64_t> idx(static_cast<size_t>(l.n));
      for (int64_t o = 0; o < l.outer; ++o) {
        for (int64_t i = 0; i < l.inner; ++i) {
          const T* src = px + o * l.n * l.inner + i;
          std::iota(idx.begin(), idx.end(), int64_t{0});
          auto before = [&](int64_t a, int64_t b) {
            CmpT<T> va = load(src[a * l.inner]), vb = load(src[b * l.inner]);
            if (greater(va, vb)) return p.largest;
            if (greater(vb, va)) return !p.largest;
            return a < b;
          };
          std::partial_sort(idx.begin(), idx.begin() + p.k, idx.end(), before);
          for (int64_t r = 0; r < p.k; ++r) {
            int64_t dst = (o * p.k + r) * l.inner + i;
            pv[dst] = src[idx[static_cast<size_t>(r)] * l.inner];
            pi[dst] = idx[static_cast<size_t>(r)];
          }
        }
      }
    }
  });
  if (!ok) return core::invalid_argument(str_cat("TopK: unsupported dtype ", core::dtype_name(x.dtype())));
  return st;
}

Status cum_sum(const CumSumParams& p, const Tensor& x, Tensor& y) {
  KESTREL_RETURN_IF_ERROR(check_axis(x, p.axis, "CumSum"));
  if (y.dtype() != x.dtype() || y.dims() != x.dims())
    return core::invalid_argument(str_cat("CumSum: output ", y.type_string(), " for input ", x.type_string()));
  const AxisLayout l = axis_layout(x.dims(), p.axis);
  Status st = Status::ok();
  bool ok = core::visit_numeric_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      st = core::invalid_argument("CumSum does not take bool");
    } else {
      // Floats accumulate in double; integers wrap modulo 2^64 (no signed-overflow UB).
      using Acc = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for (int64_t o = 0; o < l.outer; ++o) {
        for (int64_t i = 0; i < l.inner; ++i) {
          Acc acc = 0;
          for (int64_t s = 0; s < l.n; ++s) {
            int64_t j = p.reverse ? l.n - 1 - s : s;
            int64_t off = (o * l.n + j) * l.inner + i;
            Acc v;
            if constexpr (std::is_integral_v<T>) v = static_cast<uint64_t>(px[off]);
            else v = to_double(px[off]);
            if (!p.exclusive) acc += v;
            if constexpr (std::is_integral_v<T>) py[off] = static_cast<T>(acc);
            else py[off] = from_double<T>(acc);
            if (p.exclusive) acc += v;
          }
        }
      }
    }
  });
  if (!ok) return core::invalid_argument(str_cat("CumSum: unsupported dtype ", core::dtype_name(x.dtype())));
  return st;
}

}  // namespace kestrel::kernels::ref
