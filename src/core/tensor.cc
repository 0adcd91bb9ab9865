// Tensor allocation, views and element access.
#include "core/tensor.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/buffer.h"
#include "core/str_util.h"

namespace kestrel::core {

int64_t saturating_int64(double v) {
  if (!(v == v)) return 0;  // NaN
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return static_cast<int64_t>(v);
}

Result<Tensor> Tensor::allocate(DType dtype, Dims dims) {
  // dtype_size is 0 for kUndefined and for values outside the enum (e.g. from the C API).
  if (dtype_size(dtype) == 0) return invalid_argument("cannot allocate a tensor of undefined or invalid dtype");
  KESTREL_ASSIGN_OR_RETURN(int64_t n, checked_num_elements(dims));
  size_t es = dtype_size(dtype);
  if (static_cast<uint64_t>(n) > (uint64_t{1} << 62) / es)
    return out_of_range(str_cat("tensor ", dims_to_string(dims), " is too large"));
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.numel_ = n;
  if (dtype == DType::kString) {
    void* raw = std::aligned_alloc(kAlignment, align_up(static_cast<size_t>(n) * es + 1));
    if (!raw) return Status(StatusCode::kOutOfMemory, "cannot allocate string tensor");
    auto* s = static_cast<std::string*>(raw);
    for (int64_t i = 0; i < n; ++i) new (s + i) std::string();
    t.data_ = s;
    t.owner_ = std::shared_ptr<void>(s, [n](void* p) {
      auto* strs = static_cast<std::string*>(p);
      for (int64_t i = 0; i < n; ++i) strs[i].~basic_string();
      std::free(p);
    });
    return t;
  }
  KESTREL_ASSIGN_OR_RETURN(t.owner_, allocate_aligned(static_cast<size_t>(n) * es));
  t.data_ = t.owner_.get();
  return t;
}

Tensor Tensor::view(DType dtype, Dims dims, void* data) { return wrap(dtype, std::move(dims), data, nullptr); }

Tensor Tensor::wrap(DType dtype, Dims dims, void* data, std::shared_ptr<void> owner) {
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = kestrel::core::num_elements(dims);
  t.dims_ = std::move(dims);
  t.data_ = data;
  t.owner_ = std::move(owner);
  return t;
}

Result<Tensor> Tensor::reshaped(Dims dims) const {
  KESTREL_ASSIGN_OR_RETURN(int64_t n, checked_num_elements(dims));
  if (n != numel_)
    return invalid_argument(str_cat("cannot reshape ", type_string(), " to ", dims_to_string(dims)));
  Tensor t = *this;
  t.dims_ = std::move(dims);
  return t;
}

Result<Tensor> Tensor::clone() const {
  KESTREL_ASSIGN_OR_RETURN(Tensor t, allocate(dtype_, dims_));
  KESTREL_RETURN_IF_ERROR(copy_tensor_data(*this, t));
  return t;
}

Status copy_tensor_data(const Tensor& src, Tensor& dst) {
  if (src.dtype() != dst.dtype() || src.num_elements() != dst.num_elements())
    return invalid_argument(str_cat("copy from ", src.type_string(), " to ", dst.type_string()));
  if (src.dtype() == DType::kString) {
    const auto* s = src.data<std::string>();
    auto* d = dst.data<std::string>();
    for (int64_t i = 0; i < src.num_elements(); ++i) d[i] = s[i];
  } else if (src.nbytes() > 0 && src.raw_data() != dst.raw_data()) {
    std::memmove(dst.raw_data(), src.raw_data(), src.nbytes());
  }
  return Status::ok();
}

double Tensor::element_as_double(int64_t i) const {
  double r = 0;
  visit_numeric_dtype(dtype_, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
      r = static_cast<float>(data<T>()[i]);
    else
      r = static_cast<double>(data<T>()[i]);
  });
  return r;
}

int64_t Tensor::element_as_int64(int64_t i) const {
  int64_t r = 0;
  visit_numeric_dtype(dtype_, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
      r = saturating_int64(static_cast<float>(data<T>()[i]));
    else if constexpr (std::is_floating_point_v<T>)
      r = saturating_int64(data<T>()[i]);
    else
      r = static_cast<int64_t>(data<T>()[i]);
  });
  return r;
}

std::string Tensor::type_string() const { return std::string(dtype_name(dtype_)) + dims_to_string(dims_); }

std::vector<int64_t> tensor_to_int64s(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.num_elements()));
  for (int64_t i = 0; i < t.num_elements(); ++i) v[static_cast<size_t>(i)] = t.element_as_int64(i);
  return v;
}

std::vector<double> tensor_to_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (int64_t i = 0; i < t.num_elements(); ++i) v[static_cast<size_t>(i)] = t.element_as_double(i);
  return v;
}

}  // namespace kestrel::core
