// Schemas of shape ops: Reshape, Shape, Size, Squeeze, Unsqueeze, Flatten, Expand,
// ConstantOfShape, Range, EyeLike. Inputs that carry a shape are value inputs: when their data is
// unknown at load time, the output keeps the right rank with unknown dims where possible.
#include <cmath>
#include <limits>

#include "core/str_util.h"
#include "ir/onnx_types.h"
#include "ir/ops/axis_helpers.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

// a * b when it stays within core::kMaxElements (both non-negative).
bool mul_within_limit(int64_t a, int64_t b, int64_t* out) {
  if (b > core::kMaxElements || (b > 0 && a > core::kMaxElements / b)) return false;
  *out = a * b;
  return true;
}

Status infer_reshape(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  KESTREL_ASSIGN_OR_RETURN(auto len, vector_length(ctx, 1, "shape"));
  KESTREL_ASSIGN_OR_RETURN(int64_t allowzero, ctx.attr_int("allowzero", 0));
  auto target = input_ints(ctx, 1);
  if (!target) {
    ctx.set_output(0, dt, len ? unknown_dims(*len) : Shape::unknown_rank());
    return Status::ok();
  }
  const Shape& in = ctx.input_shape(0);
  std::vector<Dim> out;
  std::vector<bool> copied(target->size(), false);
  int64_t infer_at = -1;
  bool has_zero = false;
  for (size_t i = 0; i < target->size(); ++i) {
    int64_t v = (*target)[i];
    if (v == -1) {
      if (infer_at >= 0) return ctx.fail("shape ", core::dims_to_string(*target), " has more than one -1");
      infer_at = static_cast<int64_t>(i);
      out.emplace_back();
    } else if (v == 0 && !allowzero) {
      if (!in.rank_known()) {
        out.emplace_back();
      } else if (static_cast<int64_t>(i) >= in.rank()) {
        return ctx.fail("shape ", core::dims_to_string(*target), " copies dim ", i, " (0) but the input ",
                        in.to_string(), " has rank ", in.rank());
      } else {
        out.push_back(in[static_cast<int64_t>(i)]);
        copied[i] = true;
      }
    } else if (v < 0) {
      return ctx.fail("shape ", core::dims_to_string(*target), " has invalid dim ", v);
    } else {
      has_zero |= v == 0;
      out.emplace_back(v);
    }
  }
  if (allowzero && has_zero && infer_at >= 0)
    return ctx.fail("shape ", core::dims_to_string(*target), " has both 0 and -1 with allowzero=1");
  Shape result(out);
  KESTREL_RETURN_IF_ERROR(check_known_dims(ctx, result));
  if (!in.rank_known()) {
    ctx.set_output(0, dt, std::move(result));
    return Status::ok();
  }
  // Element counts, cancelling unknown input dims that are copied to the same position by 0.
  bool in_known = true, out_known = true;
  int64_t in_prod = 1, out_prod = 1;
  for (int64_t j = 0; j < in.rank(); ++j) {
    if (j < static_cast<int64_t>(copied.size()) && copied[static_cast<size_t>(j)] && !in[j].known()) continue;
    if (!in[j].known())
      in_known = false;
    else if (!mul_within_limit(in_prod, in[j].value, &in_prod))
      return ctx.fail("input shape ", in.to_string(), " is too large");
  }
  for (int64_t i = 0; i < result.rank(); ++i) {
    if (i == infer_at) continue;
    if (copied[static_cast<size_t>(i)] && !result[i].known()) continue;
    if (!result[i].known())
      out_known = false;
    else if (!mul_within_limit(out_prod, result[i].value, &out_prod))
      return ctx.fail("shape ", result.to_string(), " is too large");
  }
  if (infer_at >= 0) {
    if (in_known && out_known) {
      if (out_prod == 0)
        return ctx.fail("cannot infer the -1 in shape ", core::dims_to_string(*target),
                        ": the other dims multiply to 0");
      if (in_prod % out_prod != 0)
        return ctx.fail("cannot reshape ", in.to_string(), " to ", core::dims_to_string(*target));
      result[infer_at] = Dim(in_prod / out_prod);
    }
  } else if (in_known && out_known && in_prod != out_prod) {
    return ctx.fail("cannot reshape ", in.to_string(), " (", in_prod, " elements) to ", result.to_string(), " (",
                    out_prod, " elements)");
  }
  ctx.set_output(0, dt, std::move(result));
  return Status::ok();
}

// Shape-15 start/end: negative counts from the back, then both clamp to [0, rank].
void shape_slice_bounds(int64_t rank, int64_t start, int64_t end, int64_t* b, int64_t* e) {
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  *b = std::clamp<int64_t>(start, 0, rank);
  *e = std::clamp<int64_t>(end, 0, rank);
}

Status infer_shape(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(int64_t start, ctx.attr_int("start", 0));
  KESTREL_ASSIGN_OR_RETURN(int64_t end, ctx.attr_int("end", std::numeric_limits<int64_t>::max()));
  const Shape& in = ctx.input_shape(0);
  if (!in.rank_known()) {
    ctx.set_output(0, DType::kI64, unknown_dims(1));
    return Status::ok();
  }
  int64_t b, e;
  shape_slice_bounds(in.rank(), start, end, &b, &e);
  ctx.set_output(0, DType::kI64, Shape(core::Dims{std::max<int64_t>(e - b, 0)}));
  return Status::ok();
}

Status infer_size(InferContext& ctx) {
  ctx.set_output(0, DType::kI64, Shape(core::Dims{}));
  return Status::ok();
}

Status infer_squeeze(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  const Shape& in = ctx.input_shape(0);
  std::optional<std::vector<int64_t>> axes;
  if (ctx.has_input(1)) {
    KESTREL_ASSIGN_OR_RETURN(auto len, vector_length(ctx, 1, "axes"));
    axes = input_ints(ctx, 1);
    if (!axes) {
      bool nonempty = len && *len > 0;
      ctx.set_output(
          0, dt,
          nonempty && in.rank_known() ? unknown_dims(std::max<int64_t>(in.rank() - *len, 0)) : Shape::unknown_rank());
      return Status::ok();
    }
  }
  if (!in.rank_known()) {
    ctx.set_output(0, dt, Shape::unknown_rank());
    return Status::ok();
  }
  std::vector<Dim> out;
  if (!axes || axes->empty()) {
    // Every 1 goes; a dim we do not know might be 1, so the rank is then unknown.
    for (int64_t i = 0; i < in.rank(); ++i) {
      if (!in[i].known()) {
        ctx.set_output(0, dt, Shape::unknown_rank());
        return Status::ok();
      }
      if (in[i].value != 1) out.push_back(in[i]);
    }
  } else {
    KESTREL_ASSIGN_OR_RETURN(auto norm, infer_axes(ctx, *axes, in.rank()));
    std::vector<bool> drop(static_cast<size_t>(in.rank()), false);
    for (int64_t a : norm) {
      if (in[a].known() && in[a].value != 1)
        return ctx.fail("cannot squeeze axis ", a, " of shape ", in.to_string(), ": its size is not 1");
      drop[static_cast<size_t>(a)] = true;
    }
    for (int64_t i = 0; i < in.rank(); ++i)
      if (!drop[static_cast<size_t>(i)]) out.push_back(in[i]);
  }
  ctx.set_output(0, dt, Shape(std::move(out)));
  return Status::ok();
}

Status infer_unsqueeze(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  const Shape& in = ctx.input_shape(0);
  KESTREL_ASSIGN_OR_RETURN(auto len, vector_length(ctx, 1, "axes"));
  auto axes = input_ints(ctx, 1);
  if (!axes) {
    ctx.set_output(0, dt, len && in.rank_known() ? unknown_dims(in.rank() + *len) : Shape::unknown_rank());
    return Status::ok();
  }
  if (!in.rank_known()) {
    ctx.set_output(0, dt, Shape::unknown_rank());
    return Status::ok();
  }
  const int64_t out_rank = in.rank() + static_cast<int64_t>(axes->size());
  KESTREL_ASSIGN_OR_RETURN(auto norm, infer_axes(ctx, *axes, out_rank));
  std::vector<bool> is_new(static_cast<size_t>(out_rank), false);
  for (int64_t a : norm) is_new[static_cast<size_t>(a)] = true;
  std::vector<Dim> out;
  int64_t j = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.push_back(is_new[static_cast<size_t>(i)] ? Dim(1) : in[j++]);
  ctx.set_output(0, dt, Shape(std::move(out)));
  return Status::ok();
}

Status infer_flatten(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  const Shape& in = ctx.input_shape(0);
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, ctx.attr_int("axis", 1));
  if (!in.rank_known()) {
    ctx.set_output(0, dt, unknown_dims(2));
    return Status::ok();
  }
  KESTREL_ASSIGN_OR_RETURN(axis, infer_axis(ctx, axis, in.rank(), "axis", /*inclusive=*/true));
  Dim outer(1), inner(1);
  for (int64_t i = 0; i < in.rank(); ++i) (i < axis ? outer : inner) = dim_mul(i < axis ? outer : inner, in[i]);
  ctx.set_output(0, dt, Shape(std::vector<Dim>{outer, inner}));
  return Status::ok();
}

Status infer_expand(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  const Shape& in = ctx.input_shape(0);
  KESTREL_ASSIGN_OR_RETURN(auto len, vector_length(ctx, 1, "shape"));
  auto target = input_ints(ctx, 1);
  if (!target) {
    if (len && in.rank_known()) {
      // The rank is the larger of the two; input dims other than 1 survive broadcasting.
      int64_t rank = std::max(in.rank(), *len);
      Shape out = unknown_dims(rank);
      for (int64_t i = 0; i < in.rank(); ++i) {
        const Dim& d = in[i];
        if (d.known() && d.value != 1) out[rank - in.rank() + i] = d;
      }
      ctx.set_output(0, dt, std::move(out));
    } else {
      ctx.set_output(0, dt, Shape::unknown_rank());
    }
    return Status::ok();
  }
  for (int64_t v : *target)
    if (v < 0) return ctx.fail("shape ", core::dims_to_string(*target), " has a negative dim");
  Shape ts(*target);
  auto r = broadcast_shapes({&in, &ts});
  if (!r.is_ok()) return ctx.fail("cannot expand ", in.to_string(), " to ", ts.to_string(), ": ", r.status().message());
  KESTREL_RETURN_IF_ERROR(check_known_dims(ctx, *r));
  ctx.set_output(0, dt, std::move(r).value());
  return Status::ok();
}

Status infer_constant_of_shape(InferContext& ctx) {
  DType dt = DType::kF32;
  if (const Attribute* a = ctx.node().attr("value")) {
    if (!a->is<core::Tensor>()) return ctx.fail("attribute 'value' must be a tensor");
    const core::Tensor& v = a->get<core::Tensor>();
    if (v.num_elements() != 1)
      return ctx.fail("attribute 'value' must have exactly one element, has ", v.num_elements());
    dt = v.dtype();
  }
  if (ctx.input_dtype(0) != DType::kUndefined && ctx.input_dtype(0) != DType::kI64)
    return ctx.fail("input must be int64, is ", core::dtype_name(ctx.input_dtype(0)));
  KESTREL_ASSIGN_OR_RETURN(auto len, vector_length(ctx, 0, "input"));
  auto dims = input_ints(ctx, 0);
  if (!dims) {
    ctx.set_output(0, dt, len ? unknown_dims(*len) : Shape::unknown_rank());
    return Status::ok();
  }
  for (int64_t v : *dims)
    if (v < 0) return ctx.fail("shape ", core::dims_to_string(*dims), " has a negative dim");
  Shape out(*dims);
  KESTREL_RETURN_IF_ERROR(check_known_dims(ctx, out));
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

// Number of elements of Range(start, limit, delta): max(ceil((limit - start) / delta), 0).
core::Result<int64_t> range_count(const InferContext& ctx, const core::Tensor& start, const core::Tensor& limit,
                                  const core::Tensor& delta) {
  int64_t n;
  if (core::is_float(start.dtype())) {
    double s = start.element_as_double(0), l = limit.element_as_double(0), d = delta.element_as_double(0);
    if (!std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d))
      return ctx.fail("start, limit and delta must be finite");
    if (d == 0) return ctx.fail("delta must not be 0");
    double c = std::ceil((l - s) / d);
    if (!(c <= static_cast<double>(core::kMaxElements))) return ctx.fail("Range would have too many elements");
    n = c > 0 ? static_cast<int64_t>(c) : 0;
  } else {
    __int128 s = start.element_as_int64(0), l = limit.element_as_int64(0), d = delta.element_as_int64(0);
    if (d == 0) return ctx.fail("delta must not be 0");
    __int128 diff = l - s;
    __int128 c = diff / d + ((diff % d != 0 && ((diff < 0) == (d < 0))) ? 1 : 0);
    if (c > core::kMaxElements) return ctx.fail("Range would have too many elements");
    n = c > 0 ? static_cast<int64_t>(c) : 0;
  }
  return n;
}

Status infer_range(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.input_dtype(i) != dt) return ctx.fail("start, limit and delta must have the same dtype");
    const Shape& s = ctx.input_shape(i);
    if (s.rank_known() && !(s.rank() == 0 || (s.rank() == 1 && (!s[0].known() || s[0].value == 1))))
      return ctx.fail("input ", i, " must be a scalar, has shape ", s.to_string());
  }
  if (dt != DType::kUndefined && !core::is_float(dt) && !core::is_integer(dt))
    return ctx.fail("Range takes numbers, got ", core::dtype_name(dt));
  const core::Tensor* v[3] = {ctx.input_value(0), ctx.input_value(1), ctx.input_value(2)};
  for (const auto* t : v) {
    if (!t || (t->raw_data() == nullptr && t->num_elements() > 0)) {
      ctx.set_output(0, dt, unknown_dims(1));
      return Status::ok();
    }
    if (t->num_elements() != 1) return ctx.fail("start, limit and delta must have one element each");
  }
  KESTREL_ASSIGN_OR_RETURN(int64_t n, range_count(ctx, *v[0], *v[1], *v[2]));
  ctx.set_output(0, dt, Shape(core::Dims{n}));
  return Status::ok();
}

Status infer_eye_like(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_rank(ctx, 0, 2));
  DType dt = ctx.input_dtype(0);
  if (ctx.node().has_attr("dtype")) {
    KESTREL_ASSIGN_OR_RETURN(int64_t code, ctx.attr_int("dtype"));
    dt = dtype_from_onnx(code);
    if (dt == DType::kUndefined || dt == DType::kString)
      return core::unsupported(ctx.node().describe() + ": EyeLike dtype " + std::to_string(code) + " is not supported");
  }
  KESTREL_RETURN_IF_ERROR(ctx.attr_int("k", 0).status());
  ctx.set_output(0, dt, ctx.input_shape(0).rank_known() ? ctx.input_shape(0) : unknown_dims(2));
  return Status::ok();
}

}  // namespace

void register_shape_ops(OpRegistry& r) {
  add_op(r, "Reshape", 2, 2, 1, 1, infer_reshape, "same data, new shape (0 copies a dim unless allowzero, one -1)",
         0b10);
  add_op(r, "Squeeze", 1, 2, 1, 1, infer_squeeze, "removes size-1 axes (all of them without axes)", 0b10);
  add_op(r, "Unsqueeze", 2, 2, 1, 1, infer_unsqueeze, "inserts size-1 axes at the output positions `axes`", 0b10);
  add_op(r, "Flatten", 1, 1, 1, 1, infer_flatten, "2-D view [prod(dims[:axis]), prod(dims[axis:])]");
  add_op(r, "Expand", 2, 2, 1, 1, infer_expand, "broadcasts the input to (input shape bcast `shape`)", 0b10);
  add_op(r, "ConstantOfShape", 1, 1, 1, 1, infer_constant_of_shape, "tensor of shape `input` filled with `value`", 0b1);
  add_op(r, "Range", 3, 3, 1, 1, infer_range, "start, start + delta, ... up to (not including) limit", 0b111);
  add_op(r, "EyeLike", 1, 1, 1, 1, infer_eye_like, "2-D tensor with ones on diagonal k, zeros elsewhere");
  for (const char* op : {"Shape", "Size"}) {
    OpSchema s;
    s.name = op;
    s.min_inputs = s.max_inputs = 1;
    s.infer = std::string(op) == "Shape" ? InferFn(infer_shape) : InferFn(infer_size);
    s.shape_only_inputs = 0b1;
    s.doc = std::string(op) == "Shape" ? "dims[start:end] of the input as int64" : "element count of the input";
    r.add(std::move(s));
  }
}

}  // namespace kestrel::ir
