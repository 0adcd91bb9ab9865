// Reference normalization kernels.
#include "kernels/reference/normalization.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/str_util.h"
#include "kernels/reference/broadcast.h"
#include "kernels/reference/float_types.h"

namespace kestrel::kernels::ref {

using core::str_cat;

namespace {

Status check_same(const char* op, const Tensor& x, const Tensor& y) {
  if (y.dtype() != x.dtype() || y.dims() != x.dims())
    return core::invalid_argument(str_cat(op, ": output ", y.type_string(), " must match input ", x.type_string()));
  return Status::ok();
}

Status check_param(const char* op, const char* name, const Tensor& t, int64_t n) {
  if (!core::is_float(t.dtype()) || t.num_elements() != n)
    return core::invalid_argument(
        str_cat(op, ": ", name, " ", t.type_string(), " must be a float tensor of ", n, " elements"));
  return Status::ok();
}

Status bad_dtype(const char* op, const Tensor& x) {
  return core::invalid_argument(str_cat(op, ": unsupported dtype ", core::dtype_name(x.dtype())));
}

// Parameter tensor (any float dtype) as a vector of A.
template <class A>
std::vector<A> params_as(const Tensor& t) {
  std::vector<double> d = core::tensor_to_doubles(t);
  return std::vector<A>(d.begin(), d.end());
}

// Two-pass mean and biased variance of n values read through get(i).
template <class A, class Get>
void moments(int64_t n, Get&& get, A* mean, A* var) {
  A sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += get(i);
  *mean = n > 0 ? sum / static_cast<A>(n) : A(0);
  A sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    A d = get(i) - *mean;
    sq += d * d;
  }
  *var = n > 0 ? sq / static_cast<A>(n) : A(0);
}

}  // namespace

Status batch_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean, const Tensor& var,
                  float epsilon, Tensor& y) {
  if (x.rank() < 2)
    return core::invalid_argument(str_cat("BatchNormalization: input must have rank >= 2, is ", x.type_string()));
  KESTREL_RETURN_IF_ERROR(check_same("BatchNormalization", x, y));
  const int64_t n = x.dim(0), c = x.dim(1), inner = c == 0 || n == 0 ? 0 : x.num_elements() / (n * c);
  KESTREL_RETURN_IF_ERROR(check_param("BatchNormalization", "scale", scale, c));
  KESTREL_RETURN_IF_ERROR(check_param("BatchNormalization", "B", bias, c));
  KESTREL_RETURN_IF_ERROR(check_param("BatchNormalization", "input_mean", mean, c));
  KESTREL_RETURN_IF_ERROR(check_param("BatchNormalization", "input_var", var, c));
  bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = AccT<T>;
    auto s = params_as<A>(scale), b = params_as<A>(bias), m = params_as<A>(mean), v = params_as<A>(var);
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t ch = 0; ch < c; ++ch) {
        const size_t k = static_cast<size_t>(ch);
        const A inv = A(1) / std::sqrt(v[k] + static_cast<A>(epsilon));
        const int64_t base = (i * c + ch) * inner;
        for (int64_t j = 0; j < inner; ++j)
          yp[base + j] = from_acc<T>((to_acc(xp[base + j]) - m[k]) * inv * s[k] + b[k]);
      }
  });
  return ok ? Status::ok() : bad_dtype("BatchNormalization", x);
}

Status batch_norm_training(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& input_mean,
                           const Tensor& input_var, float epsilon, float momentum, Tensor& y, Tensor* running_mean,
                           Tensor* running_var) {
  if (x.rank() < 2)
    return core::invalid_argument(str_cat("BatchNormalization: input must have rank >= 2, is ", x.type_string()));
  KESTREL_RETURN_IF_ERROR(check_same("BatchNormalization", x, y));
  const int64_t n = x.dim(0), c = x.dim(1), inner = c == 0 || n == 0 ? 0 : x.num_elements() / (n * c);
  KESTREL_RETURN_IF_ERROR(check_param("BatchNormalization", "scale", scale, c));
  KESTREL_RETURN_IF_ERROR(check_param("BatchNormalization", "B", bias, c));
  KESTREL_RETURN_IF_ERROR(check_param("BatchNormalization", "input_mean", input_mean, c));
  KESTREL_RETURN_IF_ERROR(check_param("BatchNormalization", "input_var", input_var, c));
  if (running_mean) KESTREL_RETURN_IF_ERROR(check_same("BatchNormalization", input_mean, *running_mean));
  if (running_var) KESTREL_RETURN_IF_ERROR(check_same("BatchNormalization", input_var, *running_var));
  std::vector<double> batch_mean(static_cast<size_t>(c)), batch_var(static_cast<size_t>(c));
  bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = AccT<T>;
    auto s = params_as<A>(scale), b = params_as<A>(bias);
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    const int64_t count = n * inner;
    for (int64_t ch = 0; ch < c; ++ch) {
      const size_t k = static_cast<size_t>(ch);
      // Element j of the channel: batch j / inner, offset j % inner.
      auto at = [&](int64_t j) { return (j / inner * c + ch) * inner + j % inner; };
      A mean = std::numeric_limits<A>::quiet_NaN(), var = std::numeric_limits<A>::quiet_NaN();
      if (count > 0) moments<A>(count, [&](int64_t j) { return to_acc(xp[at(j)]); }, &mean, &var);
      batch_mean[k] = static_cast<double>(mean);
      batch_var[k] = static_cast<double>(var);
      const A inv = A(1) / std::sqrt(var + static_cast<A>(epsilon));
      for (int64_t j = 0; j < count; ++j) yp[at(j)] = from_acc<T>((to_acc(xp[at(j)]) - mean) * inv * s[k] + b[k]);
    }
  });
  if (!ok) return bad_dtype("BatchNormalization", x);
  // Running statistics in double, stored in each output's own float dtype.
  auto update = [&](const Tensor& in, const std::vector<double>& batch, Tensor& out) {
    std::vector<double> prev = core::tensor_to_doubles(in);
    visit_float(out.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const double m = static_cast<double>(momentum);
      for (size_t k = 0; k < batch.size(); ++k) {
        const double v = prev[k] * m + batch[k] * (1.0 - m);
        if constexpr (std::is_same_v<T, double>)
          out.data<T>()[k] = v;
        else
          out.data<T>()[k] = T(static_cast<float>(v));
      }
    });
  };
  if (running_mean) update(input_mean, batch_mean, *running_mean);
  if (running_var) update(input_var, batch_var, *running_var);
  return Status::ok();
}

Status instance_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, float epsilon, Tensor& y) {
  if (x.rank() < 2)
    return core::invalid_argument(str_cat("InstanceNormalization: input must have rank >= 2, is ", x.type_string()));
  KESTREL_RETURN_IF_ERROR(check_same("InstanceNormalization", x, y));
  const int64_t n = x.dim(0), c = x.dim(1), inner = c == 0 || n == 0 ? 0 : x.num_elements() / (n * c);
  KESTREL_RETURN_IF_ERROR(check_param("InstanceNormalization", "scale", scale, c));
  KESTREL_RETURN_IF_ERROR(check_param("InstanceNormalization", "B", bias, c));
  bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = AccT<T>;
    auto s = params_as<A>(scale), b = params_as<A>(bias);
    for (int64_t i = 0; i < n * c; ++i) {
      const T* xp = x.data<T>() + i * inner;
      T* yp = y.data<T>() + i * inner;
      const size_t ch = static_cast<size_t>(i % c);
      A mean, var;
      moments<A>(
          inner, [&](int64_t j) { return to_acc(xp[j]); }, &mean, &var);
      const A inv = A(1) / std::sqrt(var + static_cast<A>(epsilon));
      for (int64_t j = 0; j < inner; ++j) yp[j] = from_acc<T>(s[ch] * (to_acc(xp[j]) - mean) * inv + b[ch]);
    }
  });
  return ok ? Status::ok() : bad_dtype("InstanceNormalization", x);
}

Status layer_norm(const Tensor& x, const Tensor& scale, const Tensor* bias, int64_t axis, float epsilon, Tensor& y,
                  Tensor* mean, Tensor* inv_std_dev) {
  if (axis < 0 || axis > x.rank())
    return core::invalid_argument(str_cat("LayerNormalization: axis ", axis, " out of range for ", x.type_string()));
  KESTREL_RETURN_IF_ERROR(check_same("LayerNormalization", x, y));
  const core::Dims norm_dims(x.dims().begin() + axis, x.dims().end());
  const int64_t norm = core::num_elements(norm_dims);
  const int64_t outer = norm == 0 ? 0 : x.num_elements() / norm;
  // Scale and bias broadcast (numpy-style, right-aligned) to the normalized dims.
  std::vector<double> s(static_cast<size_t>(norm)), b(static_cast<size_t>(norm), 0.0);
  for (const auto& [t, dst] : {std::pair<const Tensor*, std::vector<double>*>{&scale, &s}, {bias, &b}}) {
    if (!t) continue;
    core::Dims out;
    if (!core::is_float(t->dtype()) || t->rank() > static_cast<int64_t>(norm_dims.size()) ||
        !broadcast_dims({&t->dims(), &norm_dims}, &out) || out != norm_dims)
      return core::invalid_argument(str_cat("LayerNormalization: ", t->type_string(),
                                            " does not broadcast to the normalized shape ",
                                            core::dims_to_string(norm_dims)));
    std::vector<double> v = core::tensor_to_doubles(*t);
    std::array<core::Dims, 1> st = {broadcast_strides(t->dims(), norm_dims)};
    for_each_broadcast<1>(norm_dims, st, [&](int64_t i, const std::array<int64_t, 1>& off) {
      (*dst)[static_cast<size_t>(i)] = v[static_cast<size_t>(off[0])];
    });
  }
  for (Tensor* t : {mean, inv_std_dev})
    if (t && (!core::is_float(t->dtype()) || t->num_elements() != outer))
      return core::invalid_argument(
          str_cat("LayerNormalization: statistics output ", t->type_string(), " must have ", outer, " float elements"));
  bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = AccT<T>;
    for (int64_t i = 0; i < outer; ++i) {
      const T* xp = x.data<T>() + i * norm;
      T* yp = y.data<T>() + i * norm;
      A m, var;
      moments<A>(
          norm, [&](int64_t j) { return to_acc(xp[j]); }, &m, &var);
      const A inv = A(1) / std::sqrt(var + static_cast<A>(epsilon));
      for (int64_t j = 0; j < norm; ++j) {
        const size_t k = static_cast<size_t>(j);
        yp[j] = from_acc<T>((to_acc(xp[j]) - m) * inv * static_cast<A>(s[k]) + static_cast<A>(b[k]));
      }
      for (const auto& [t, v] : {std::pair<Tensor*, A>{mean, m}, {inv_std_dev, inv}}) {
        if (!t) continue;
        visit_float(t->dtype(), [&](auto otag) {
          using O = decltype(otag);
          t->template data<O>()[i] = from_acc<O>(static_cast<AccT<O>>(v));
        });
      }
    }
  });
  return ok ? Status::ok() : bad_dtype("LayerNormalization", x);
}

Status group_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, int64_t num_groups, float epsilon,
                  Tensor& y) {
  if (x.rank() < 2)
    return core::invalid_argument(str_cat("GroupNormalization: input must have rank >= 2, is ", x.type_string()));
  KESTREL_RETURN_IF_ERROR(check_same("GroupNormalization", x, y));
  const int64_t n = x.dim(0), c = x.dim(1);
  if (num_groups < 1 || c % num_groups != 0)
    return core::invalid_argument(
        str_cat("GroupNormalization: num_groups ", num_groups, " does not divide ", c, " channels"));
  const int64_t inner = c == 0 || n == 0 ? 0 : x.num_elements() / (n * c);
  const int64_t cpg = c / num_groups;
  const bool per_group = scale.num_elements() == num_groups && num_groups != c;
  const int64_t want = per_group ? num_groups : c;
  KESTREL_RETURN_IF_ERROR(check_param("GroupNormalization", "scale", scale, want));
  KESTREL_RETURN_IF_ERROR(check_param("GroupNormalization", "bias", bias, want));
  bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = AccT<T>;
    auto s = params_as<A>(scale), b = params_as<A>(bias);
    const int64_t gsize = cpg * inner;
    for (int64_t i = 0; i < n * num_groups; ++i) {
      const T* xp = x.data<T>() + i * gsize;
      T* yp = y.data<T>() + i * gsize;
      const int64_t g = i % num_groups;
      A m, var;
      moments<A>(
          gsize, [&](int64_t j) { return to_acc(xp[j]); }, &m, &var);
      const A inv = A(1) / std::sqrt(var + static_cast<A>(epsilon));
      for (int64_t j = 0; j < gsize; ++j) {
        const size_t k = static_cast<size_t>(per_group ? g : g * cpg + j / inner);
        yp[j] = from_acc<T>((to_acc(xp[j]) - m) * inv * s[k] + b[k]);
      }
    }
  });
  return ok ? Status::ok() : bad_dtype("GroupNormalization", x);
}

Status lrn(const Tensor& x, int64_t size, float alpha, float beta, float bias, Tensor& y) {
  if (x.rank() < 2) return core::invalid_argument(str_cat("LRN: input must have rank >= 2, is ", x.type_string()));
  KESTREL_RETURN_IF_ERROR(check_same("LRN", x, y));
  if (size < 1) return core::invalid_argument(str_cat("LRN: size must be >= 1, is ", size));
  const int64_t n = x.dim(0), c = x.dim(1), inner = c == 0 || n == 0 ? 0 : x.num_elements() / (n * c);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = AccT<T>;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t j = 0; j < inner; ++j) {
          A sq = 0;
          for (int64_t k = std::max<int64_t>(0, ch - before); k <= std::min(c - 1, ch + after); ++k) {
            A v = to_acc(x.data<T>()[(i * c + k) * inner + j]);
            sq += v * v;
          }
          const int64_t at = (i * c + ch) * inner + j;
          A d =
              std::pow(static_cast<A>(bias) + static_cast<A>(alpha) / static_cast<A>(size) * sq, static_cast<A>(beta));
          y.data<T>()[at] = from_acc<T>(to_acc(x.data<T>()[at]) / d);
        }
  });
  return ok ? Status::ok() : bad_dtype("LRN", x);
}

Status lp_norm(const Tensor& x, int64_t axis, int64_t p, Tensor& y) {
  if (axis < 0 || axis >= x.rank())
    return core::invalid_argument(str_cat("LpNormalization: axis ", axis, " out of range for ", x.type_string()));
  if (p != 1 && p != 2) return core::invalid_argument(str_cat("LpNormalization: p must be 1 or 2, is ", p));
  KESTREL_RETURN_IF_ERROR(check_same("LpNormalization", x, y));
  const int64_t len = x.dim(axis);
  int64_t inner = 1;
  for (int64_t i = axis + 1; i < x.rank(); ++i) inner *= x.dim(i);
  const int64_t outer = len * inner == 0 ? 0 : x.num_elements() / (len * inner);
  bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = AccT<T>;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        const int64_t base = o * len * inner + in;
        A norm = 0;
        for (int64_t k = 0; k < len; ++k) {
          A v = to_acc(x.data<T>()[base + k * inner]);
          norm += p == 1 ? std::fabs(v) : v * v;
        }
        if (p == 2) norm = std::sqrt(norm);
        for (int64_t k = 0; k < len; ++k) {
          A v = to_acc(x.data<T>()[base + k * inner]);
          y.data<T>()[base + k * inner] = from_acc<T>(norm == A(0) ? A(0) : v / norm);
        }
      }
  });
  return ok ? Status::ok() : bad_dtype("LpNormalization", x);
}

Status mean_variance_norm(const Tensor& x, const std::vector<int64_t>& axes, Tensor& y) {
  KESTREL_RETURN_IF_ERROR(check_same("MeanVarianceNormalization", x, y));
  core::Dims kept = x.dims();
  std::vector<bool> seen(static_cast<size_t>(x.rank()), false);
  for (int64_t a : axes) {
    if (a < 0 || a >= x.rank() || seen[static_cast<size_t>(a)])
      return core::invalid_argument(
          str_cat("MeanVarianceNormalization: bad or repeated axis ", a, " for ", x.type_string()));
    seen[static_cast<size_t>(a)] = true;
    kept[static_cast<size_t>(a)] = 1;
  }
  const int64_t groups = core::num_elements(kept);
  const int64_t per = groups == 0 ? 0 : x.num_elements() / groups;
  // Strides of the kept index seen from x's dims: reduced axes contribute nothing.
  const std::array<core::Dims, 1> st = {broadcast_strides(kept, x.dims())};
  std::vector<int64_t> group_of(static_cast<size_t>(x.num_elements()));
  for_each_broadcast<1>(
      x.dims(), st, [&](int64_t i, const std::array<int64_t, 1>& off) { group_of[static_cast<size_t>(i)] = off[0]; });
  bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = AccT<T>;
    const T* xp = x.data<T>();
    std::vector<A> mean(static_cast<size_t>(groups), A(0)), var(static_cast<size_t>(groups), A(0));
    for (int64_t i = 0; i < x.num_elements(); ++i)
      mean[static_cast<size_t>(group_of[static_cast<size_t>(i)])] += to_acc(xp[i]);
    for (auto& m : mean) m /= static_cast<A>(per);
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      const size_t g = static_cast<size_t>(group_of[static_cast<size_t>(i)]);
      A d = to_acc(xp[i]) - mean[g];
      var[g] += d * d;
    }
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      const size_t g = static_cast<size_t>(group_of[static_cast<size_t>(i)]);
      A sd = std::sqrt(var[g] / static_cast<A>(per));
      y.data<T>()[i] = from_acc<T>((to_acc(xp[i]) - mean[g]) / (sd + static_cast<A>(1e-9)));
    }
  });
  return ok ? Status::ok() : bad_dtype("MeanVarianceNormalization", x);
}

}  // namespace kestrel::kernels::ref
