// Reference optimizer kernels: element loops in double over f32/f64 tensors.
#include "kernels/reference/training.h"

#include <cmath>
#include <initializer_list>
#include <utility>

#include "core/str_util.h"

namespace kestrel::kernels::ref {

using core::DType;
using core::Result;
using core::str_cat;

namespace {

bool is_f32_or_f64(DType t) {
  return t == DType::kF32 || t == DType::kF64;
}

double load(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kF32 ? static_cast<double>(t.data<float>()[i]) : t.data<double>()[i];
}

void store(Tensor& t, int64_t i, double v) {
  if (t.dtype() == DType::kF32)
    t.data<float>()[i] = static_cast<float>(v);
  else
    t.data<double>()[i] = v;
}

struct Scalars {
  double r;
  int64_t t;
};

Result<Scalars> read_scalars(const char* op, const Tensor& r, const Tensor& t) {
  if (!is_f32_or_f64(r.dtype()) || r.num_elements() != 1)
    return core::invalid_argument(str_cat(op, ": R must be one float or double, is ", r.type_string()));
  if (t.dtype() != DType::kI64 || t.num_elements() != 1)
    return core::invalid_argument(str_cat(op, ": T must be one int64, is ", t.type_string()));
  const int64_t count = t.data<int64_t>()[0];
  if (count < 0) return core::invalid_argument(str_cat(op, ": T (the update count) must be >= 0, is ", count));
  return Scalars{load(r, 0), count};
}

// `ins` (name, tensor) must be f32/f64 with X's dims; `outs` must match the tensor each replaces.
Status check_tensors(const char* op, std::initializer_list<std::pair<const char*, const Tensor*>> ins,
                     std::initializer_list<std::pair<const Tensor*, const Tensor*>> outs) {
  const Tensor& x = *ins.begin()->second;
  for (const auto& [name, t] : ins) {
    if (!is_f32_or_f64(t->dtype()))
      return core::invalid_argument(str_cat(op, ": ", name, " must be float or double, is ", t->type_string()));
    if (t->dims() != x.dims())
      return core::invalid_argument(
          str_cat(op, ": ", name, " ", t->type_string(), " must have the shape of X ", x.type_string()));
  }
  for (const auto& [out, in] : outs)
    if (out->dtype() != in->dtype() || out->dims() != in->dims())
      return core::invalid_argument(
          str_cat(op, ": output ", out->type_string(), " must match the tensor it replaces, ", in->type_string()));
  return Status::ok();
}

}  // namespace

Status adagrad(const Tensor& r, const Tensor& t, const Tensor& x, const Tensor& g, const Tensor& h,
               const AdagradParams& p, Tensor& x_new, Tensor& h_new) {
  KESTREL_ASSIGN_OR_RETURN(Scalars s, read_scalars("Adagrad", r, t));
  KESTREL_RETURN_IF_ERROR(check_tensors("Adagrad", {{"X", &x}, {"G", &g}, {"H", &h}}, {{&x_new, &x}, {&h_new, &h}}));
  const double rate = s.r / (1.0 + static_cast<double>(s.t) * p.decay_factor);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const double xi = load(x, i);
    const double gr = p.norm_coefficient * xi + load(g, i);
    const double hn = load(h, i) + gr * gr;
    store(h_new, i, hn);
    store(x_new, i, xi - rate * gr / (std::sqrt(hn) + p.epsilon));
  }
  return Status::ok();
}

Status adam(const Tensor& r, const Tensor& t, const Tensor& x, const Tensor& g, const Tensor& v, const Tensor& h,
            const AdamParams& p, Tensor& x_new, Tensor& v_new, Tensor& h_new) {
  KESTREL_ASSIGN_OR_RETURN(Scalars s, read_scalars("Adam", r, t));
  KESTREL_RETURN_IF_ERROR(
      check_tensors("Adam", {{"X", &x}, {"G", &g}, {"V", &v}, {"H", &h}}, {{&x_new, &x}, {&v_new, &v}, {&h_new, &h}}));
  double rate = s.r;
  if (s.t > 0) {
    const double tt = static_cast<double>(s.t);
    rate = s.r * std::sqrt(1.0 - std::pow(p.beta, tt)) / (1.0 - std::pow(p.alpha, tt));
  }
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const double xi = load(x, i);
    const double gr = p.norm_coefficient * xi + load(g, i);
    const double vn = p.alpha * load(v, i) + (1.0 - p.alpha) * gr;
    const double hn = p.beta * load(h, i) + (1.0 - p.beta) * gr * gr;
    store(v_new, i, vn);
    store(h_new, i, hn);
    store(x_new, i, (1.0 - p.norm_coefficient_post) * (xi - rate * vn / (std::sqrt(hn) + p.epsilon)));
  }
  return Status::ok();
}

Status momentum(const Tensor& r, const Tensor& t, const Tensor& x, const Tensor& g, const Tensor& v,
                const MomentumParams& p, Tensor& x_new, Tensor& v_new) {
  KESTREL_ASSIGN_OR_RETURN(Scalars s, read_scalars("Momentum", r, t));
  KESTREL_RETURN_IF_ERROR(check_tensors("Momentum", {{"X", &x}, {"G", &g}, {"V", &v}}, {{&x_new, &x}, {&v_new, &v}}));
  // The first step (T = 0) takes the whole gradient: there is no earlier momentum to blend with.
  const double beta = s.t > 0 ? p.beta : 1.0;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const double xi = load(x, i);
    const double gr = p.norm_coefficient * xi + load(g, i);
    const double vn = p.alpha * load(v, i) + beta * gr;
    store(v_new, i, vn);
    store(x_new, i, xi - s.r * (p.nesterov ? gr + p.alpha * vn : vn));
  }
  return Status::ok();
}

}  // namespace kestrel::kernels::ref
