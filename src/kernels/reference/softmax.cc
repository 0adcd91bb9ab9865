// Reference Softmax, LogSoftmax and Hardmax.
#include "kernels/reference/softmax.h"

#include <cmath>

#include "core/str_util.h"
#include "kernels/reference/float_types.h"

namespace kestrel::kernels::ref {

Status softmax(SoftmaxKind kind, int64_t axis, const Tensor& x, Tensor& y) {
  if (axis < 0 || axis >= x.rank())
    return core::invalid_argument(core::str_cat("softmax: axis ", axis, " out of range for ", x.type_string()));
  if (y.dtype() != x.dtype() || y.dims() != x.dims())
    return core::invalid_argument(core::str_cat("softmax: output ", y.type_string(), " must match ", x.type_string()));
  const int64_t len = x.dim(axis);
  int64_t inner = 1;
  for (int64_t i = axis + 1; i < x.rank(); ++i) inner *= x.dim(i);
  const int64_t outer = len * inner == 0 ? 0 : x.num_elements() / (len * inner);
  bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = AccT<T>;
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        const int64_t base = o * len * inner + in;
        auto at = [&](int64_t k) { return base + k * inner; };
        A mx = to_acc(xp[at(0)]);
        int64_t arg = 0;
        for (int64_t k = 1; k < len; ++k) {
          A v = to_acc(xp[at(k)]);
          if (v > mx) {
            mx = v;
            arg = k;
          }
        }
        if (kind == SoftmaxKind::kHardmax) {
          for (int64_t k = 0; k < len; ++k) yp[at(k)] = from_acc<T>(k == arg ? A(1) : A(0));
          continue;
        }
        A sum = 0;
        for (int64_t k = 0; k < len; ++k) sum += std::exp(to_acc(xp[at(k)]) - mx);
        if (kind == SoftmaxKind::kSoftmax) {
          for (int64_t k = 0; k < len; ++k) yp[at(k)] = from_acc<T>(std::exp(to_acc(xp[at(k)]) - mx) / sum);
        } else {
          const A log_sum = std::log(sum);
          for (int64_t k = 0; k < len; ++k) yp[at(k)] = from_acc<T>(to_acc(xp[at(k)]) - mx - log_sum);
        }
      }
  });
  return ok ? Status::ok()
            : core::invalid_argument(core::str_cat("softmax: unsupported dtype ", core::dtype_name(x.dtype())));
}

}  // namespace kestrel::kernels::ref
