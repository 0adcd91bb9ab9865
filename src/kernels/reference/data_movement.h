// Shared pieces of the data-movement reference kernels (shape, transform, gather_scatter): ops
// that only copy elements never look at their values, so they work on every dtype through one
// storage type per element size (strings through std::string).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

// Calls f(S{}) with S the storage type of `t`: uint8_t/uint16_t/uint32_t/uint64_t by element size,
// std::string for strings. Returns false (without calling f) for kUndefined.
template <class F>
bool visit_storage(core::DType t, F&& f) {
  if (t == core::DType::kString) {
    f(std::string{});
    return true;
  }
  switch (core::dtype_size(t)) {
    case 1:
      f(uint8_t{});
      return true;
    case 2:
      f(uint16_t{});
      return true;
    case 4:
      f(uint32_t{});
      return true;
    case 8:
      f(uint64_t{});
      return true;
    default:
      return false;
  }
}

// Copies n elements src[src_off ..] -> dst[dst_off ..] (same dtype; offsets in elements; the
// caller has checked the ranges). Non-overlapping.
inline void copy_elements(const core::Tensor& src, int64_t src_off, core::Tensor& dst, int64_t dst_off, int64_t n) {
  if (n <= 0) return;
  if (src.dtype() == core::DType::kString) {
    const std::string* s = src.data<std::string>() + src_off;
    std::string* d = dst.data<std::string>() + dst_off;
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
    return;
  }
  const size_t es = core::dtype_size(src.dtype());
  std::memcpy(static_cast<char*>(dst.raw_data()) + static_cast<size_t>(dst_off) * es,
              static_cast<const char*>(src.raw_data()) + static_cast<size_t>(src_off) * es,
              static_cast<size_t>(n) * es);
}

// Reads an index tensor (int32 or int64, as ONNX allows) as int64s; error for other dtypes.
inline core::Result<std::vector<int64_t>> read_indices(const core::Tensor& t, const char* what = "indices") {
  std::vector<int64_t> v(static_cast<size_t>(t.num_elements()));
  if (t.dtype() == core::DType::kI64) {
    if (!v.empty()) std::memcpy(v.data(), t.raw_data(), v.size() * sizeof(int64_t));
  } else if (t.dtype() == core::DType::kI32) {
    const int32_t* p = t.data<int32_t>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = p[i];
  } else {
    return core::invalid_argument(std::string(what) + " must be int32 or int64, got " + core::dtype_name(t.dtype()));
  }
  return v;
}

// The output must have been allocated with `dims` and the input's dtype (executor or binding).
inline core::Status check_output(const core::Tensor& y, const core::Dims& dims, core::DType dtype, const char* op) {
  if (!y.defined() || y.dims() != dims || y.dtype() != dtype || (y.num_elements() > 0 && y.raw_data() == nullptr))
    return core::internal_error(std::string(op) + ": output is " + (y.defined() ? y.type_string() : "unallocated") +
                                ", expected " + core::dtype_name(dtype) + core::dims_to_string(dims));
  return core::Status::ok();
}

}  // namespace kestrel::kernels::ref
