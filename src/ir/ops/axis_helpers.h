// Axis and dim checks shared by the data-movement schemas (shape, transform, gather_scatter).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/shape.h"
#include "ir/op_schema.h"
#include "ir/types.h"

namespace kestrel::ir {

// Normalizes an axis in [-rank, rank) (or [-rank, rank] when `inclusive`) to a non-negative one;
// the error names the node.
inline core::Result<int64_t> infer_axis(const InferContext& ctx, int64_t axis, int64_t rank, const char* what = "axis",
                                        bool inclusive = false) {
  int64_t hi = inclusive ? rank : rank - 1;
  if (axis < -rank || axis > hi)
    return ctx.fail(what, " ", axis, " is out of range for rank ", rank, " (allowed [", -rank, ", ", hi, "])");
  return axis < 0 ? axis + rank : axis;
}

// Normalizes a list of axes; repeated axes are an error.
inline core::Result<std::vector<int64_t>> infer_axes(const InferContext& ctx, const std::vector<int64_t>& axes,
                                                     int64_t rank, const char* what = "axes") {
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
  for (int64_t a : axes) {
    KESTREL_ASSIGN_OR_RETURN(int64_t n, infer_axis(ctx, a, rank, what));
    if (seen[static_cast<size_t>(n)]) return ctx.fail(what, " contains axis ", a, " more than once");
    seen[static_cast<size_t>(n)] = true;
    out.push_back(n);
  }
  return out;
}

// Known dims: each value is a valid size and their product stays within core::kMaxElements.
inline core::Status check_known_dims(const InferContext& ctx, const Shape& s, const char* what = "output") {
  if (!s.rank_known()) return core::Status::ok();
  int64_t prod = 1;
  for (int64_t i = 0; i < s.rank(); ++i) {
    if (!s[i].known()) continue;
    int64_t d = s[i].value;
    if (d > core::kMaxElements || (d > 0 && prod > core::kMaxElements / d))
      return ctx.fail(what, " shape ", s.to_string(), " has too many elements");
    prod *= d;
  }
  return core::Status::ok();
}

// The dtype an index input must have (int32 or int64; undefined is accepted while unknown).
inline core::Status expect_index_dtype(const InferContext& ctx, size_t input, const char* what) {
  DType t = ctx.input_dtype(input);
  if (t != DType::kUndefined && t != DType::kI32 && t != DType::kI64)
    return ctx.fail(what, " must be int32 or int64, is ", core::dtype_name(t));
  return core::Status::ok();
}

// A shape-like input (axes, shape, pads...) must be 1-D; returns its length when known.
inline core::Result<std::optional<int64_t>> vector_length(const InferContext& ctx, size_t input, const char* what) {
  const Shape& s = ctx.input_shape(input);
  if (!s.rank_known()) return std::optional<int64_t>();
  if (s.rank() != 1) return ctx.fail(what, " must be a 1-D tensor, has shape ", s.to_string());
  if (!s[0].known()) return std::optional<int64_t>();
  return std::optional<int64_t>(s[0].value);
}

}  // namespace kestrel::ir
