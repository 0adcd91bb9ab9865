// Reference kernels of the shape ops.
#include "kernels/reference/shape.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#include "core/str_util.h"
#include "kernels/reference/broadcast.h"
#include "kernels/reference/data_movement.h"

namespace kestrel::kernels::ref {

using core::DType;
using core::str_cat;

Status copy_reshaped(const Tensor& x, Tensor& y) {
  if (x.dtype() != y.dtype() || x.num_elements() != y.num_elements())
    return core::invalid_argument(str_cat("cannot reshape ", x.type_string(), " into ", y.type_string()));
  return core::copy_tensor_data(x, y);
}

Status shape_of(const core::Dims& dims, int64_t start, int64_t end, Tensor& y) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  const int64_t n = std::max<int64_t>(end - start, 0);
  KESTREL_RETURN_IF_ERROR(check_output(y, {n}, DType::kI64, "Shape"));
  for (int64_t i = 0; i < n; ++i) y.data<int64_t>()[i] = dims[static_cast<size_t>(start + i)];
  return Status::ok();
}

Status size_of(const core::Dims& dims, Tensor& y) {
  KESTREL_RETURN_IF_ERROR(check_output(y, {}, DType::kI64, "Size"));
  KESTREL_ASSIGN_OR_RETURN(int64_t n, core::checked_num_elements(dims));
  y.data<int64_t>()[0] = n;
  return Status::ok();
}

Status expand(const Tensor& x, Tensor& y) {
  if (x.dtype() != y.dtype()) return core::invalid_argument("Expand: output dtype differs from input");
  if (x.rank() > y.rank())
    return core::invalid_argument(str_cat("Expand: cannot broadcast ", x.type_string(), " to ", y.type_string()));
  for (int64_t i = 0; i < x.rank(); ++i) {
    int64_t xd = x.dims()[static_cast<size_t>(i)], yd = y.dims()[static_cast<size_t>(y.rank() - x.rank() + i)];
    if (xd != 1 && xd != yd)
      return core::invalid_argument(str_cat("Expand: cannot broadcast ", x.type_string(), " to ", y.type_string()));
  }
  const std::array<core::Dims, 1> strides{broadcast_strides(x.dims(), y.dims())};
  visit_storage(x.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const S* in = x.data<S>();
    S* out = y.data<S>();
    for_each_broadcast<1>(y.dims(), strides,
                          [&](int64_t i, const std::array<int64_t, 1>& off) { out[i] = in[off[0]]; });
  });
  return Status::ok();
}

Status constant_of_shape(const Tensor& value, Tensor& y) {
  if (value.num_elements() != 1 || value.dtype() != y.dtype())
    return core::invalid_argument(str_cat("ConstantOfShape: value must be one element of ", core::dtype_name(y.dtype()),
                                          ", is ", value.type_string()));
  visit_storage(y.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const S v = value.data<S>()[0];
    std::fill_n(y.data<S>(), y.num_elements(), v);
  });
  return Status::ok();
}

core::Result<int64_t> range_count(const Tensor& start, const Tensor& limit, const Tensor& delta) {
  if (start.dtype() != limit.dtype() || start.dtype() != delta.dtype())
    return core::invalid_argument("Range: start, limit and delta must have the same dtype");
  if (start.num_elements() != 1 || limit.num_elements() != 1 || delta.num_elements() != 1)
    return core::invalid_argument("Range: start, limit and delta must be scalars");
  const DType t = start.dtype();
  if (core::is_float(t)) {
    const double s = start.element_as_double(0), l = limit.element_as_double(0), d = delta.element_as_double(0);
    if (!std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d))
      return core::invalid_argument("Range: start, limit and delta must be finite");
    if (d == 0) return core::invalid_argument("Range: delta must not be 0");
    const double c = std::ceil((l - s) / d);
    if (!(c <= static_cast<double>(core::kMaxElements))) return core::out_of_range("Range: too many elements");
    return c > 0 ? static_cast<int64_t>(c) : int64_t{0};
  }
  if (!core::is_integer(t)) return core::invalid_argument(str_cat("Range: unsupported dtype ", core::dtype_name(t)));
  // Exact integer arithmetic; 128 bits hold any int64 difference.
  const __int128 s = start.element_as_int64(0), l = limit.element_as_int64(0), d = delta.element_as_int64(0);
  if (d == 0) return core::invalid_argument("Range: delta must not be 0");
  const __int128 diff = l - s;
  const __int128 c = diff / d + ((diff % d != 0 && ((diff < 0) == (d < 0))) ? 1 : 0);
  if (c > core::kMaxElements) return core::out_of_range("Range: too many elements");
  return c > 0 ? static_cast<int64_t>(c) : int64_t{0};
}

Status range(const Tensor& start, const Tensor& limit, const Tensor& delta, Tensor& y) {
  KESTREL_ASSIGN_OR_RETURN(int64_t n, range_count(start, limit, delta));
  KESTREL_RETURN_IF_ERROR(check_output(y, {n}, start.dtype(), "Range"));
  Status st = Status::ok();
  core::visit_numeric_dtype(start.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* out = y.data<T>();
    if constexpr (std::is_same_v<T, core::Float16> || std::is_same_v<T, core::BFloat16>) {
      const float s = static_cast<float>(start.data<T>()[0]), d = static_cast<float>(delta.data<T>()[0]);
      for (int64_t i = 0; i < n; ++i) out[i] = T(s + static_cast<float>(i) * d);
    } else if constexpr (std::is_floating_point_v<T>) {
      const T s = start.data<T>()[0], d = delta.data<T>()[0];
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(s + static_cast<T>(i) * d);
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // Every value lies between start and limit, so it fits T; compute in 128 bits regardless.
      const __int128 s = start.data<T>()[0], d = delta.data<T>()[0];
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(s + static_cast<__int128>(i) * d);
    } else {
      st = core::invalid_argument("Range: bool is not a number type");
    }
  });
  return st;
}

Status eye_like(int64_t k, Tensor& y) {
  if (y.rank() != 2) return core::invalid_argument(str_cat("EyeLike: output must be 2-D, is ", y.type_string()));
  const int64_t rows = y.dims()[0], cols = y.dims()[1];
  bool ok = core::visit_numeric_dtype(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T one;
    if constexpr (std::is_same_v<T, core::Float16> || std::is_same_v<T, core::BFloat16>)
      one = T(1.0f);
    else
      one = static_cast<T>(1);
    T* out = y.data<T>();
    std::fill_n(out, y.num_elements(), T{});
    for (int64_t r = 0; r < rows; ++r) {
      if (k > 0 && k >= cols - r) break;  // keeps r + k from overflowing for any k
      const int64_t c = r + k;
      if (c >= 0 && c < cols) out[r * cols + c] = one;
    }
  });
  if (!ok) return core::invalid_argument(str_cat("EyeLike: unsupported dtype ", core::dtype_name(y.dtype())));
  return Status::ok();
}

}  // namespace kestrel::kernels::ref
