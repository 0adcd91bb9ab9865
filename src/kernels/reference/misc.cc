// Reference Unique, ReverseSequence and Shrink kernels.
#include "kernels/reference/misc.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "core/str_util.h"
#include "kernels/reference/data_movement.h"
#include "kernels/reference/numeric.h"

namespace kestrel::kernels::ref {

using core::DType;
using core::str_cat;

namespace {

// Total order used by Unique: NaN after every number and equal to NaN; otherwise operator<.
template <class T>
int compare(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool> || std::is_integral_v<T>) {
    return a < b ? -1 : (b < a ? 1 : 0);
  } else {
    const auto fa = load_as<double>(a), fb = load_as<double>(b);
    const bool na = std::isnan(fa), nb = std::isnan(fb);
    if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
    return fa < fb ? -1 : (fb < fa ? 1 : 0);
  }
}

template <class T>
core::Result<UniqueResult> unique_typed(const Tensor& x, std::optional<int64_t> axis, bool sorted) {
  const core::Dims& dims = x.dims();
  int64_t outer = 1, n = x.num_elements(), inner = 1;
  if (axis) {
    const auto a = static_cast<size_t>(*axis);
    n = dims[a];
    for (size_t d = 0; d < a; ++d) outer *= dims[d];
    for (size_t d = a + 1; d < dims.size(); ++d) inner *= dims[d];
  }
  const T* px = x.data<T>();
  // Item j's elements in order: (o, j, i) for o < outer, i < inner.
  auto cmp_items = [&](int64_t u, int64_t v) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int c = compare(px[(o * n + u) * inner + i], px[(o * n + v) * inner + i]);
        if (c) return c;
      }
    return 0;
  };
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t u, int64_t v) { return cmp_items(u, v) < 0; });
  // Groups of equal items in sorted order; the stable sort puts each group's first occurrence first.
  std::vector<int64_t> first, count;
  std::vector<int64_t> group_of(static_cast<size_t>(n));
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || cmp_items(order[k - 1], order[k]) != 0) {
      first.push_back(order[k]);
      count.push_back(0);
    }
    group_of[static_cast<size_t>(order[k])] = static_cast<int64_t>(first.size()) - 1;
    ++count.back();
  }
  const auto u = static_cast<int64_t>(first.size());
  // Output position of each group: sorted order, or by first occurrence.
  std::vector<int64_t> pos(static_cast<size_t>(u));
  std::iota(pos.begin(), pos.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_first(static_cast<size_t>(u));
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t a, int64_t b) { return first[static_cast<size_t>(a)] < first[static_cast<size_t>(b)]; });
    for (int64_t k = 0; k < u; ++k) pos[static_cast<size_t>(by_first[static_cast<size_t>(k)])] = k;
  }
  UniqueResult r;
  core::Dims ydims = axis ? dims : core::Dims{u};
  if (axis) ydims[static_cast<size_t>(*axis)] = u;
  KESTREL_ASSIGN_OR_RETURN(r.y, Tensor::allocate(x.dtype(), ydims));
  KESTREL_ASSIGN_OR_RETURN(r.indices, Tensor::allocate(DType::kI64, {u}));
  KESTREL_ASSIGN_OR_RETURN(r.counts, Tensor::allocate(DType::kI64, {u}));
  KESTREL_ASSIGN_OR_RETURN(r.inverse, Tensor::allocate(DType::kI64, {n}));
  T* py = r.y.data<T>();
  for (int64_t g = 0; g < u; ++g) {
    const int64_t p = pos[static_cast<size_t>(g)], src = first[static_cast<size_t>(g)];
    r.indices.data<int64_t>()[p] = src;
    r.counts.data<int64_t>()[p] = count[static_cast<size_t>(g)];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) py[(o * u + p) * inner + i] = px[(o * n + src) * inner + i];
  }
  for (int64_t j = 0; j < n; ++j)
    r.inverse.data<int64_t>()[j] = pos[static_cast<size_t>(group_of[static_cast<size_t>(j)])];
  return r;
}

template <class T>
T truncate_to(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T(0);
    v = std::trunc(v);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return store_as<T>(v);
  }
}

}  // namespace

core::Result<UniqueResult> unique(const Tensor& x, std::optional<int64_t> axis, bool sorted) {
  if (axis && (*axis < 0 || *axis >= x.rank()))
    return core::invalid_argument(str_cat("Unique: axis ", *axis, " is out of range for ", x.type_string()));
  core::Result<UniqueResult> r = core::invalid_argument("Unique: input has no dtype");
  core::visit_dtype(x.dtype(), [&](auto tag) { r = unique_typed<decltype(tag)>(x, axis, sorted); });
  return r;
}

Status reverse_sequence(const Tensor& x, const Tensor& seq_lens, int64_t batch_axis, int64_t time_axis, Tensor& y) {
  if (x.rank() < 2)
    return core::invalid_argument(str_cat("ReverseSequence: input must have rank >= 2, is ", x.type_string()));
  if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0)))
    return core::invalid_argument("ReverseSequence: batch_axis and time_axis must be 0 and 1 in some order");
  KESTREL_RETURN_IF_ERROR(check_output(y, x.dims(), x.dtype(), "ReverseSequence"));
  const int64_t batch = x.dim(batch_axis), steps = x.dim(time_axis);
  if (seq_lens.rank() != 1 || seq_lens.dim(0) != batch)
    return core::invalid_argument(str_cat("ReverseSequence: sequence_lens ", seq_lens.type_string(), " must have ",
                                          batch, " entries, one per batch entry"));
  KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> lens, read_indices(seq_lens, "ReverseSequence sequence_lens"));
  for (int64_t len : lens)
    if (len < 0 || len > steps)
      return core::out_of_range(str_cat("ReverseSequence: sequence length ", len, " is outside [0, ", steps, "]"));
  const int64_t inner = x.num_elements() / std::max<int64_t>(batch * steps, 1);
  auto offset = [&](int64_t b, int64_t t) { return (batch_axis == 0 ? b * steps + t : t * batch + b) * inner; };
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = lens[static_cast<size_t>(b)];
    for (int64_t t = 0; t < steps; ++t) copy_elements(x, offset(b, t < len ? len - 1 - t : t), y, offset(b, t), inner);
  }
  return Status::ok();
}

Status shrink(float lambd, float bias, const Tensor& x, Tensor& y) {
  KESTREL_RETURN_IF_ERROR(check_output(y, x.dims(), x.dtype(), "Shrink"));
  const bool ok = visit_arith_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = AccOf<T>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const A l = static_cast<A>(lambd), b = static_cast<A>(bias);
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      const A v = load_as<A>(px[i]);
      py[i] = truncate_to<T>(static_cast<double>(v < -l ? v + b : (v > l ? v - b : A(0))));
    }
  });
  if (!ok) return core::invalid_argument(str_cat("Shrink: input must be numeric, is ", x.type_string()));
  return Status::ok();
}

}  // namespace kestrel::kernels::ref
