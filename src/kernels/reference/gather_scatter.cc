// Reference kernels of the indexing ops.
#include "kernels/reference/gather_scatter.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "core/str_util.h"
#include "kernels/reference/data_movement.h"

namespace kestrel::kernels::ref {

using core::Dims;
using core::DType;
using core::str_cat;

namespace {

// Index i into a dim of size dim: negative counts from the back; outside [-dim, dim) is an error.
inline Status resolve_index(int64_t& i, int64_t dim, const char* op, int64_t axis) {
  if (i < -dim || i >= dim)
    return core::out_of_range(str_cat(op, ": index ", i, " is out of range for dim ", axis, " of size ", dim));
  if (i < 0) i += dim;
  return Status::ok();
}

int64_t prod(const Dims& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < d.size(); ++i) p *= d[i];
  return p;
}

}  // namespace

Status gather(const Tensor& data, const Tensor& indices, int64_t axis, Tensor& y) {
  if (data.rank() == 0) return core::invalid_argument("Gather: data must have rank >= 1");
  KESTREL_ASSIGN_OR_RETURN(axis, core::normalize_axis(axis, data.rank(), "Gather axis"));
  if (indices.dtype() != DType::kI64 && indices.dtype() != DType::kI32)
    return core::invalid_argument(
        str_cat("Gather indices must be int32 or int64, got ", core::dtype_name(indices.dtype())));
  // Indices are read in place (no copy: a run allocates nothing), checked before anything is written.
  auto index = [&](int64_t j) {
    return indices.dtype() == DType::kI64 ? indices.data<int64_t>()[j] : int64_t{indices.data<int32_t>()[j]};
  };
  const size_t a = static_cast<size_t>(axis);
  const int64_t dim = data.dims()[a];
  const int64_t n = indices.num_elements();
  for (int64_t j = 0; j < n; ++j) {
    int64_t i = index(j);
    KESTREL_RETURN_IF_ERROR(resolve_index(i, dim, "Gather", axis));
  }
  const int64_t ir = indices.rank(), r = data.rank();
  bool ok = y.defined() && y.dtype() == data.dtype() && y.rank() == r - 1 + ir &&
            (y.num_elements() == 0 || y.raw_data() != nullptr);
  for (int64_t d = 0; ok && d < y.rank(); ++d)
    ok = y.dim(d) == (d < axis ? data.dim(d) : d < axis + ir ? indices.dim(d - axis) : data.dim(d - ir + 1));
  if (!ok) {
    Dims out(data.dims().begin(), data.dims().begin() + axis);
    out.insert(out.end(), indices.dims().begin(), indices.dims().end());
    out.insert(out.end(), data.dims().begin() + axis + 1, data.dims().end());
    return check_output(y, out, data.dtype(), "Gather");
  }
  const int64_t outer = prod(data.dims(), 0, a), inner = prod(data.dims(), a + 1, data.dims().size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j) {
      int64_t i = index(j);
      if (i < 0) i += dim;
      copy_elements(data, (o * dim + i) * inner, y, (o * n + j) * inner, inner);
    }
  return Status::ok();
}

namespace {

// Shared shape checks of GatherElements / ScatterElements: same rank, and indices no larger than
// data outside the axis.
Status check_elements_shapes(const Tensor& data, const Tensor& indices, int64_t axis, const char* op) {
  if (indices.rank() != data.rank())
    return core::invalid_argument(
        str_cat(op, ": indices ", indices.type_string(), " must have the rank of data ", data.type_string()));
  for (int64_t d = 0; d < data.rank(); ++d)
    if (d != axis && indices.dims()[static_cast<size_t>(d)] > data.dims()[static_cast<size_t>(d)])
      return core::invalid_argument(
          str_cat(op, ": indices ", indices.type_string(), " exceed data ", data.type_string(), " in dim ", d));
  return Status::ok();
}

// Calls f(position in indices, offset in data) for every element of indices, the data offset
// having the index value along axis (already resolved) and the position elsewhere.
template <class F>
void for_each_element_index(const Tensor& data, const Tensor& indices, const std::vector<int64_t>& idx, int64_t axis,
                            F&& f) {
  const Dims ds = core::row_major_strides(data.dims());
  const size_t rank = static_cast<size_t>(data.rank());
  std::vector<int64_t> pos(rank, 0);
  const int64_t total = indices.num_elements();
  int64_t base = 0;  // offset of pos in data, without the axis term
  for (int64_t i = 0; i < total; ++i) {
    f(i, base + idx[static_cast<size_t>(i)] * ds[static_cast<size_t>(axis)]);
    for (size_t d = rank; d-- > 0;) {
      const int64_t step = static_cast<int64_t>(d) == axis ? 0 : ds[d];
      base += step;
      if (++pos[d] < indices.dims()[d]) break;
      base -= step * indices.dims()[d];
      pos[d] = 0;
    }
  }
}

}  // namespace

Status gather_elements(const Tensor& data, const Tensor& indices, int64_t axis, Tensor& y) {
  if (data.rank() == 0) return core::invalid_argument("GatherElements: data must have rank >= 1");
  KESTREL_ASSIGN_OR_RETURN(axis, core::normalize_axis(axis, data.rank(), "GatherElements axis"));
  KESTREL_RETURN_IF_ERROR(check_elements_shapes(data, indices, axis, "GatherElements"));
  KESTREL_ASSIGN_OR_RETURN(auto idx, read_indices(indices, "GatherElements indices"));
  const int64_t dim = data.dims()[static_cast<size_t>(axis)];
  for (int64_t& i : idx) KESTREL_RETURN_IF_ERROR(resolve_index(i, dim, "GatherElements", axis));
  KESTREL_RETURN_IF_ERROR(check_output(y, indices.dims(), data.dtype(), "GatherElements"));
  visit_storage(data.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const S* in = data.data<S>();
    S* out = y.data<S>();
    for_each_element_index(data, indices, idx, axis, [&](int64_t i, int64_t off) { out[i] = in[off]; });
  });
  return Status::ok();
}

namespace {

// For GatherND / ScatterND: the data offset of every index tuple (k values each) after the batch
// dims, checked and resolved. Tuples are grouped per batch in order.
core::Result<std::vector<int64_t>> nd_offsets(const Tensor& data, const Tensor& indices, int64_t batch_dims,
                                              const char* op) {
  const int64_t r = data.rank(), q = indices.rank();
  if (q < 1) return core::invalid_argument(str_cat(op, ": indices must have rank >= 1"));
  if (batch_dims < 0 || batch_dims >= std::min(q, r))
    return core::invalid_argument(
        str_cat(op, ": batch_dims ", batch_dims, " must be in [0, min(rank(data), rank(indices)))"));
  const int64_t k = indices.dims().back();
  if (k < 1 || k > r - batch_dims)
    return core::invalid_argument(str_cat(op, ": indices' last dim ", k, " must be in [1, ", r - batch_dims, "]"));
  for (int64_t d = 0; d < batch_dims; ++d)
    if (indices.dims()[static_cast<size_t>(d)] != data.dims()[static_cast<size_t>(d)])
      return core::invalid_argument(str_cat(op, ": batch dim ", d, " differs between data ", data.type_string(),
                                            " and indices ", indices.type_string()));
  KESTREL_ASSIGN_OR_RETURN(auto idx, read_indices(indices, op));
  const Dims ds = core::row_major_strides(data.dims());
  const size_t b = static_cast<size_t>(batch_dims);
  const int64_t batches = prod(data.dims(), 0, b);
  const int64_t batch_stride = prod(data.dims(), b, data.dims().size());
  const int64_t tuples = indices.num_elements() / k;
  const int64_t per_batch = batches == 0 ? 0 : tuples / batches;
  std::vector<int64_t> offsets(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = per_batch == 0 ? 0 : (t / per_batch) * batch_stride;
    for (int64_t j = 0; j < k; ++j) {
      int64_t i = idx[static_cast<size_t>(t * k + j)];
      const size_t d = b + static_cast<size_t>(j);
      KESTREL_RETURN_IF_ERROR(resolve_index(i, data.dims()[d], op, static_cast<int64_t>(d)));
      off += i * ds[d];
    }
    offsets[static_cast<size_t>(t)] = off;
  }
  return offsets;
}

}  // namespace

Status gather_nd(const Tensor& data, const Tensor& indices, int64_t batch_dims, Tensor& y) {
  KESTREL_ASSIGN_OR_RETURN(auto offsets, nd_offsets(data, indices, batch_dims, "GatherND"));
  const int64_t k = indices.dims().back();
  Dims out(indices.dims().begin(), indices.dims().end() - 1);
  out.insert(out.end(), data.dims().begin() + batch_dims + k, data.dims().end());
  KESTREL_RETURN_IF_ERROR(check_output(y, out, data.dtype(), "GatherND"));
  const int64_t slice = prod(data.dims(), static_cast<size_t>(batch_dims + k), data.dims().size());
  for (size_t t = 0; t < offsets.size(); ++t)
    copy_elements(data, offsets[t], y, static_cast<int64_t>(t) * slice, slice);
  return Status::ok();
}

core::Result<ScatterReduction> parse_scatter_reduction(const std::string& s) {
  if (s == "none") return ScatterReduction::kNone;
  if (s == "add") return ScatterReduction::kAdd;
  if (s == "mul") return ScatterReduction::kMul;
  if (s == "max") return ScatterReduction::kMax;
  if (s == "min") return ScatterReduction::kMin;
  return core::invalid_argument(str_cat("reduction must be none, add, mul, max or min, got '", s, "'"));
}

namespace {

template <class T>
void combine(T& dst, const T& src, ScatterReduction red) {
  if constexpr (std::is_same_v<T, std::string>) {
    dst = src;  // only kNone reaches here for strings
  } else if constexpr (std::is_same_v<T, bool>) {
    switch (red) {
      case ScatterReduction::kNone:
        dst = src;
        break;
      case ScatterReduction::kAdd:
      case ScatterReduction::kMax:
        dst = dst || src;
        break;
      case ScatterReduction::kMul:
      case ScatterReduction::kMin:
        dst = dst && src;
        break;
    }
  } else if constexpr (std::is_same_v<T, core::Float16> || std::is_same_v<T, core::BFloat16>) {
    const float a = static_cast<float>(dst), b = static_cast<float>(src);
    switch (red) {
      case ScatterReduction::kNone:
        dst = src;
        break;
      case ScatterReduction::kAdd:
        dst = T(a + b);
        break;
      case ScatterReduction::kMul:
        dst = T(a * b);
        break;
      case ScatterReduction::kMax:
        dst = T(std::fmax(a, b));
        break;
      case ScatterReduction::kMin:
        dst = T(std::fmin(a, b));
        break;
    }
  } else if constexpr (std::is_integral_v<T>) {
    // Integer add/mul wrap (in 64-bit unsigned arithmetic, so never undefined).
    switch (red) {
      case ScatterReduction::kNone:
        dst = src;
        break;
      case ScatterReduction::kAdd:
        dst = static_cast<T>(static_cast<uint64_t>(dst) + static_cast<uint64_t>(src));
        break;
      case ScatterReduction::kMul:
        dst = static_cast<T>(static_cast<uint64_t>(dst) * static_cast<uint64_t>(src));
        break;
      case ScatterReduction::kMax:
        dst = dst < src ? src : dst;
        break;
      case ScatterReduction::kMin:
        dst = src < dst ? src : dst;
        break;
    }
  } else {
    switch (red) {
      case ScatterReduction::kNone:
        dst = src;
        break;
      case ScatterReduction::kAdd:
        dst = dst + src;
        break;
      case ScatterReduction::kMul:
        dst = dst * src;
        break;
      case ScatterReduction::kMax:
        dst = std::fmax(dst, src);
        break;
      case ScatterReduction::kMin:
        dst = std::fmin(dst, src);
        break;
    }
  }
}

Status check_scatter_types(const Tensor& data, const Tensor& updates, ScatterReduction red, const Tensor& y,
                           const char* op) {
  if (updates.dtype() != data.dtype())
    return core::invalid_argument(
        str_cat(op, ": updates ", updates.type_string(), " must have the dtype of data ", data.type_string()));
  if (data.dtype() == DType::kString && red != ScatterReduction::kNone)
    return core::invalid_argument(str_cat(op, ": string tensors allow only reduction none"));
  return check_output(y, data.dims(), data.dtype(), op);
}

}  // namespace

Status scatter_elements(const Tensor& data, const Tensor& indices, const Tensor& updates, int64_t axis,
                        ScatterReduction red, Tensor& y) {
  if (data.rank() == 0) return core::invalid_argument("ScatterElements: data must have rank >= 1");
  KESTREL_ASSIGN_OR_RETURN(axis, core::normalize_axis(axis, data.rank(), "ScatterElements axis"));
  KESTREL_RETURN_IF_ERROR(check_elements_shapes(data, indices, axis, "ScatterElements"));
  if (updates.dims() != indices.dims())
    return core::invalid_argument(str_cat("ScatterElements: updates ", updates.type_string(),
                                          " must have the shape of indices ", indices.type_string()));
  KESTREL_RETURN_IF_ERROR(check_scatter_types(data, updates, red, y, "ScatterElements"));
  KESTREL_ASSIGN_OR_RETURN(auto idx, read_indices(indices, "ScatterElements indices"));
  const int64_t dim = data.dims()[static_cast<size_t>(axis)];
  for (int64_t& i : idx) KESTREL_RETURN_IF_ERROR(resolve_index(i, dim, "ScatterElements", axis));
  KESTREL_RETURN_IF_ERROR(core::copy_tensor_data(data, y));
  core::visit_dtype(data.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* upd = updates.data<T>();
    T* out = y.data<T>();
    for_each_element_index(data, indices, idx, axis, [&](int64_t i, int64_t off) { combine(out[off], upd[i], red); });
  });
  return Status::ok();
}

Status scatter_nd(const Tensor& data, const Tensor& indices, const Tensor& updates, ScatterReduction red, Tensor& y) {
  KESTREL_ASSIGN_OR_RETURN(auto offsets, nd_offsets(data, indices, 0, "ScatterND"));
  const int64_t k = indices.dims().back();
  Dims want(indices.dims().begin(), indices.dims().end() - 1);
  want.insert(want.end(), data.dims().begin() + k, data.dims().end());
  if (updates.dims() != want)
    return core::invalid_argument(
        str_cat("ScatterND: updates ", updates.type_string(), " must have shape ", core::dims_to_string(want)));
  KESTREL_RETURN_IF_ERROR(check_scatter_types(data, updates, red, y, "ScatterND"));
  KESTREL_RETURN_IF_ERROR(core::copy_tensor_data(data, y));
  const int64_t slice = prod(data.dims(), static_cast<size_t>(k), data.dims().size());
  core::visit_dtype(data.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* upd = updates.data<T>();
    T* out = y.data<T>();
    for (size_t t = 0; t < offsets.size(); ++t)
      for (int64_t j = 0; j < slice; ++j) combine(out[offsets[t] + j], upd[static_cast<int64_t>(t) * slice + j], red);
  });
  return Status::ok();
}

Status one_hot(const Tensor& indices, int64_t depth, const Tensor& values, int64_t axis, Tensor& y) {
  if (depth <= 0) return core::invalid_argument(str_cat("OneHot: depth must be positive, is ", depth));
  if (values.num_elements() != 2)
    return core::invalid_argument(
        str_cat("OneHot: values must have two elements [off, on], is ", values.type_string()));
  if (indices.dtype() == DType::kString || indices.dtype() == DType::kBool)
    return core::invalid_argument("OneHot: indices must be numbers");
  const int64_t rank = indices.rank() + 1;
  KESTREL_ASSIGN_OR_RETURN(axis, core::normalize_axis(axis, rank, "OneHot axis"));
  Dims out = indices.dims();
  out.insert(out.begin() + axis, depth);
  KESTREL_RETURN_IF_ERROR(check_output(y, out, values.dtype(), "OneHot"));
  const std::vector<double> idx = core::tensor_to_doubles(indices);
  const int64_t outer = prod(indices.dims(), 0, static_cast<size_t>(axis));
  const int64_t inner = prod(indices.dims(), static_cast<size_t>(axis), indices.dims().size());
  visit_storage(values.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const S off = values.data<S>()[0], on = values.data<S>()[1];
    S* o = y.data<S>();
    for (int64_t a = 0; a < outer; ++a) {
      for (int64_t i = 0; i < inner; ++i) {
        const double v = idx[static_cast<size_t>(a * inner + i)];
        int64_t hot = -1;
        if (std::isfinite(v) && v > -static_cast<double>(depth) - 1 && v < static_cast<double>(depth)) {
          hot = static_cast<int64_t>(v);  // truncates toward zero, like a cast to int
          if (hot < 0) hot += depth;
        }
        for (int64_t d = 0; d < depth; ++d) o[(a * depth + d) * inner + i] = d == hot ? on : off;
      }
    }
  });
  return Status::ok();
}

namespace {

// Calls f(i) for every non-zero element i of x; false for a dtype that has no zero (string).
template <class F>
bool for_each_nonzero(const Tensor& x, F&& f) {
  return core::visit_numeric_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = x.data<T>();
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      bool nz;
      if constexpr (std::is_same_v<T, core::Float16> || std::is_same_v<T, core::BFloat16>)
        nz = static_cast<float>(p[i]) != 0.f;
      else
        nz = p[i] != T{};
      if (nz) f(i);
    }
  });
}

}  // namespace

core::Result<int64_t> count_nonzero(const Tensor& x) {
  int64_t n = 0;
  if (!for_each_nonzero(x, [&](int64_t) { ++n; }))
    return core::invalid_argument(str_cat("NonZero: unsupported dtype ", core::dtype_name(x.dtype())));
  return n;
}

Status nonzero(const Tensor& x, Tensor& y) {
  KESTREL_ASSIGN_OR_RETURN(int64_t n, count_nonzero(x));
  const int64_t rows = std::max<int64_t>(x.rank(), 1);
  KESTREL_RETURN_IF_ERROR(check_output(y, {rows, n}, DType::kI64, "NonZero"));
  if (x.rank() == 0) {
    if (n == 1) y.data<int64_t>()[0] = 0;
    return Status::ok();
  }
  const Dims strides = core::row_major_strides(x.dims());
  int64_t* out = y.data<int64_t>();
  int64_t col = 0;
  for_each_nonzero(x, [&](int64_t i) {
    for (int64_t d = 0; d < rows; ++d)
      out[d * n + col] = (i / strides[static_cast<size_t>(d)]) % x.dims()[static_cast<size_t>(d)];
    ++col;
  });
  return Status::ok();
}

namespace {

struct CompressPlan {
  Dims out;
  int64_t outer = 1, dim = 0, inner = 1;
  std::vector<int64_t> selected;
};

core::Result<CompressPlan> plan_compress(const Tensor& x, const Tensor& condition, std::optional<int64_t> axis) {
  if (condition.dtype() != DType::kBool || condition.rank() != 1)
    return core::invalid_argument(
        str_cat("Compress: condition must be a 1-D bool tensor, is ", condition.type_string()));
  CompressPlan p;
  if (axis) {
    KESTREL_ASSIGN_OR_RETURN(int64_t a, core::normalize_axis(*axis, x.rank(), "Compress axis"));
    p.dim = x.dims()[static_cast<size_t>(a)];
    p.outer = prod(x.dims(), 0, static_cast<size_t>(a));
    p.inner = prod(x.dims(), static_cast<size_t>(a) + 1, x.dims().size());
    p.out = x.dims();
    axis = a;
  } else {
    p.dim = x.num_elements();
  }
  const bool* c = condition.data<bool>();
  for (int64_t i = 0; i < condition.num_elements(); ++i) {
    if (!c[i]) continue;
    if (i >= p.dim)
      return core::out_of_range(str_cat("Compress: condition selects index ", i, " but the dim has size ", p.dim));
    p.selected.push_back(i);
  }
  const int64_t n = static_cast<int64_t>(p.selected.size());
  if (axis)
    p.out[static_cast<size_t>(*axis)] = n;
  else
    p.out = {n};
  return p;
}

}  // namespace

core::Result<Dims> compress_dims(const Tensor& x, const Tensor& condition, std::optional<int64_t> axis) {
  KESTREL_ASSIGN_OR_RETURN(CompressPlan p, plan_compress(x, condition, axis));
  return p.out;
}

Status compress(const Tensor& x, const Tensor& condition, std::optional<int64_t> axis, Tensor& y) {
  KESTREL_ASSIGN_OR_RETURN(CompressPlan p, plan_compress(x, condition, axis));
  KESTREL_RETURN_IF_ERROR(check_output(y, p.out, x.dtype(), "Compress"));
  const int64_t n = static_cast<int64_t>(p.selected.size());
  for (int64_t o = 0; o < p.outer; ++o)
    for (int64_t j = 0; j < n; ++j)
      copy_elements(x, (o * p.dim + p.selected[static_cast<size_t>(j)]) * p.inner, y, (o * n + j) * p.inner, p.inner);
  return Status::ok();
}

}  // namespace kestrel::kernels::ref
