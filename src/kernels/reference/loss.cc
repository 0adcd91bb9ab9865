// Reference loss kernels.
#include "kernels/reference/loss.h"

#include <cmath>
#include <limits>
#include <vector>

#include "core/str_util.h"
#include "kernels/reference/scalar_io.h"

namespace kestrel::kernels::ref {

using core::DType;
using core::str_cat;

namespace {

// [N, C, D] view of an [N, C, d1..dk] tensor.
struct LossGeometry {
  int64_t n = 0, c = 0, d = 1;
};

core::Result<LossGeometry> loss_geometry(const Tensor& x, const Tensor& target, const Tensor* weight) {
  if (x.rank() < 2) return core::invalid_argument(str_cat("input must have rank >= 2, is ", x.type_string()));
  if (target.dtype() != DType::kI32 && target.dtype() != DType::kI64)
    return core::invalid_argument(str_cat("target must be int32 or int64, is ", target.type_string()));
  LossGeometry g;
  g.n = x.dim(0);
  g.c = x.dim(1);
  bool ok = target.rank() == x.rank() - 1 && target.dim(0) == g.n;
  for (int64_t i = 2; ok && i < x.rank(); ++i) {
    ok = target.dim(i - 1) == x.dim(i);
    g.d *= x.dim(i);
  }
  if (!ok)
    return core::invalid_argument(
        str_cat("target ", target.type_string(), " does not match input ", x.type_string(), " (expected [N, d...])"));
  if (weight) {
    if (weight->dtype() != x.dtype() || weight->rank() != 1 || weight->dim(0) != g.c)
      return core::invalid_argument(
          str_cat("weight must be ", core::dtype_name(x.dtype()), "[", g.c, "], is ", weight->type_string()));
  }
  return g;
}

// The NLL core on log-probabilities given as a callback lp(n, c, d).
template <class LogProb>
Status nll_core(const LossParams& p, const LossGeometry& g, LogProb&& lp, const Tensor& target, const Tensor* weight,
                Tensor& loss) {
  const int64_t samples = g.n * g.d;
  const int64_t want = p.reduction == LossReduction::kNone ? samples : 1;
  if (loss.num_elements() != want)
    return core::invalid_argument(str_cat("loss output ", loss.type_string(), " should have ", want, " elements"));
  std::vector<double> w;
  if (weight) w = core::tensor_to_doubles(*weight);
  std::vector<double> per_sample(static_cast<size_t>(samples), 0.0);
  double sum = 0, weight_sum = 0;
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t d = 0; d < g.d; ++d) {
      const int64_t s = n * g.d + d;
      const int64_t t = target.element_as_int64(s);
      if (p.ignore_index && t == *p.ignore_index) continue;
      if (t < 0 || t >= g.c)
        return core::out_of_range(str_cat("target value ", t, " at flat index ", s, " is outside [0, ", g.c, ")",
                                          p.ignore_index ? str_cat(" and is not ignore_index ", *p.ignore_index) : ""));
      const double wt = weight ? w[static_cast<size_t>(t)] : 1.0;
      const double v = -lp(n, t, d) * wt;
      per_sample[static_cast<size_t>(s)] = v;
      sum += v;
      weight_sum += wt;
    }
  }
  bool ok = visit_float(loss.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* out = loss.data<T>();
    switch (p.reduction) {
      case LossReduction::kNone:
        for (int64_t s = 0; s < samples; ++s) out[s] = store_double<T>(per_sample[static_cast<size_t>(s)]);
        break;
      case LossReduction::kSum:
        out[0] = store_double<T>(sum);
        break;
      case LossReduction::kMean:
        out[0] = store_double<T>(weight_sum == 0 ? std::numeric_limits<double>::quiet_NaN() : sum / weight_sum);
        break;
    }
  });
  if (!ok) return core::invalid_argument(str_cat("loss must be a float tensor, is ", loss.type_string()));
  return Status::ok();
}

}  // namespace

Status nll_loss(const LossParams& p, const Tensor& x, const Tensor& target, const Tensor* weight, Tensor& loss) {
  KESTREL_ASSIGN_OR_RETURN(LossGeometry g, loss_geometry(x, target, weight));
  if (loss.dtype() != x.dtype())
    return core::invalid_argument(str_cat("loss must have the input's dtype, is ", loss.type_string()));
  Status st;
  bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    auto lp = [&](int64_t n, int64_t c, int64_t d) { return load_double(px[(n * g.c + c) * g.d + d]); };
    st = nll_core(p, g, lp, target, weight, loss);
  });
  if (!ok) return core::invalid_argument(str_cat("input must be a float tensor, is ", x.type_string()));
  return st;
}

Status softmax_cross_entropy_loss(const LossParams& p, const Tensor& scores, const Tensor& target, const Tensor* weight,
                                  Tensor& loss, Tensor* log_prob) {
  KESTREL_ASSIGN_OR_RETURN(LossGeometry g, loss_geometry(scores, target, weight));
  if (loss.dtype() != scores.dtype())
    return core::invalid_argument(str_cat("loss must have the input's dtype, is ", loss.type_string()));
  if (log_prob && (log_prob->dtype() != scores.dtype() || log_prob->dims() != scores.dims()))
    return core::invalid_argument(str_cat("log_prob must be ", scores.type_string(), ", is ", log_prob->type_string()));
  std::vector<double> lsm(static_cast<size_t>(scores.num_elements()));
  bool ok = visit_float(scores.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = scores.data<T>();
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t d = 0; d < g.d; ++d) {
        auto at = [&](int64_t c) { return static_cast<size_t>((n * g.c + c) * g.d + d); };
        // Subtract the maximum first so exp() cannot overflow.
        double peak = -std::numeric_limits<double>::infinity();
        for (int64_t c = 0; c < g.c; ++c) peak = std::max(peak, load_double(px[at(c)]));
        double total = 0;
        for (int64_t c = 0; c < g.c; ++c) total += std::exp(load_double(px[at(c)]) - peak);
        const double log_total = std::log(total);
        for (int64_t c = 0; c < g.c; ++c) lsm[at(c)] = load_double(px[at(c)]) - peak - log_total;
      }
    }
    if (log_prob) {
      T* out = log_prob->data<T>();
      for (size_t i = 0; i < lsm.size(); ++i) out[i] = store_double<T>(lsm[i]);
    }
  });
  if (!ok) return core::invalid_argument(str_cat("scores must be a float tensor, is ", scores.type_string()));
  auto lp = [&](int64_t n, int64_t c, int64_t d) { return lsm[static_cast<size_t>((n * g.c + c) * g.d + d)]; };
  return nll_core(p, g, lp, target, weight, loss);
}

}  // namespace kestrel::kernels::ref
