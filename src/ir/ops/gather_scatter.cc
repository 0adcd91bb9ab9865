// Schemas of the indexing ops: Gather, GatherElements, GatherND, ScatterElements, ScatterND,
// OneHot, NonZero, Compress (the last two have data-dependent output shapes).
#include <algorithm>

#include "core/str_util.h"
#include "ir/ops/axis_helpers.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

Status infer_gather(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_index_dtype(ctx, 1, "indices"));
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, ctx.attr_int("axis", 0));
  const DType dt = ctx.input_dtype(0);
  const Shape& data = ctx.input_shape(0);
  const Shape& idx = ctx.input_shape(1);
  if (!data.rank_known() || !idx.rank_known()) {
    ctx.set_output(0, dt, Shape::unknown_rank());
    return Status::ok();
  }
  if (data.rank() == 0) return ctx.fail("data must have rank >= 1");
  KESTREL_ASSIGN_OR_RETURN(axis, infer_axis(ctx, axis, data.rank()));
  // A known index value out of range fails at load (e.g. a constant index into a known dim).
  if (auto v = input_ints(ctx, 1); v && data[axis].known()) {
    const int64_t dim = data[axis].value;
    for (int64_t i : *v)
      if (i < -dim || i >= dim)
        return ctx.fail("index ", i, " is out of range for dim ", axis, " of ", data.to_string());
  }
  std::vector<Dim> out;
  for (int64_t i = 0; i < axis; ++i) out.push_back(data[i]);
  for (int64_t i = 0; i < idx.rank(); ++i) out.push_back(idx[i]);
  for (int64_t i = axis + 1; i < data.rank(); ++i) out.push_back(data[i]);
  ctx.set_output(0, dt, Shape(std::move(out)));
  return Status::ok();
}

// GatherElements / ScatterElements: same ranks; indices no larger than data outside axis.
Status check_elements(InferContext& ctx, int64_t* axis) {
  KESTREL_RETURN_IF_ERROR(expect_index_dtype(ctx, 1, "indices"));
  const Shape& data = ctx.input_shape(0);
  const Shape& idx = ctx.input_shape(1);
  if (data.rank_known() && data.rank() == 0) return ctx.fail("data must have rank >= 1");
  if (data.rank_known()) {
    KESTREL_ASSIGN_OR_RETURN(*axis, infer_axis(ctx, *axis, data.rank()));
  }
  if (!data.rank_known() || !idx.rank_known()) return Status::ok();
  if (data.rank() != idx.rank())
    return ctx.fail("indices ", idx.to_string(), " must have the rank of data ", data.to_string());
  for (int64_t d = 0; d < data.rank(); ++d)
    if (d != *axis && data[d].known() && idx[d].known() && idx[d].value > data[d].value)
      return ctx.fail("indices ", idx.to_string(), " exceed data ", data.to_string(), " in dim ", d);
  return Status::ok();
}

Status infer_gather_elements(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, ctx.attr_int("axis", 0));
  KESTREL_RETURN_IF_ERROR(check_elements(ctx, &axis));
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(1));
  return Status::ok();
}

Status infer_scatter_elements(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, ctx.attr_int("axis", 0));
  KESTREL_RETURN_IF_ERROR(check_elements(ctx, &axis));
  KESTREL_ASSIGN_OR_RETURN(std::string red, ctx.attr_string("reduction", std::string("none")));
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    return ctx.fail("reduction must be none, add, mul, max or min, got '", red, "'");
  if (ctx.input_dtype(2) != ctx.input_dtype(0) && ctx.input_dtype(2) != DType::kUndefined &&
      ctx.input_dtype(0) != DType::kUndefined)
    return ctx.fail("updates must have the dtype of data");
  const Shape& idx = ctx.input_shape(1);
  const Shape& upd = ctx.input_shape(2);
  if (idx.rank_known() && upd.rank_known()) {
    bool same = idx.rank() == upd.rank();
    for (int64_t d = 0; same && d < idx.rank(); ++d)
      if (idx[d].known() && upd[d].known() && idx[d].value != upd[d].value) same = false;
    if (!same) return ctx.fail("updates ", upd.to_string(), " must have the shape of indices ", idx.to_string());
  }
  return same_as_input(ctx);
}

Status infer_gather_nd(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_index_dtype(ctx, 1, "indices"));
  KESTREL_ASSIGN_OR_RETURN(int64_t b, ctx.attr_int("batch_dims", 0));
  const DType dt = ctx.input_dtype(0);
  const Shape& data = ctx.input_shape(0);
  const Shape& idx = ctx.input_shape(1);
  if (!data.rank_known() || !idx.rank_known()) {
    ctx.set_output(0, dt, Shape::unknown_rank());
    return Status::ok();
  }
  const int64_t r = data.rank(), q = idx.rank();
  if (q < 1) return ctx.fail("indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q))
    return ctx.fail("batch_dims ", b, " must be in [0, min(rank(data), rank(indices)))");
  for (int64_t d = 0; d < b; ++d)
    if (data[d].known() && idx[d].known() && data[d].value != idx[d].value)
      return ctx.fail("batch dim ", d, " differs between data ", data.to_string(), " and indices ", idx.to_string());
  const Dim& kd = idx[q - 1];
  if (!kd.known()) {
    ctx.set_output(0, dt, Shape::unknown_rank());
    return Status::ok();
  }
  const int64_t k = kd.value;
  if (k < 1 || k > r - b) return ctx.fail("indices' last dim ", k, " must be in [1, ", r - b, "]");
  std::vector<Dim> out;
  for (int64_t d = 0; d < q - 1; ++d) out.push_back(d < b && !idx[d].known() ? data[d] : idx[d]);
  for (int64_t d = b + k; d < r; ++d) out.push_back(data[d]);
  ctx.set_output(0, dt, Shape(std::move(out)));
  return Status::ok();
}

Status infer_scatter_nd(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_index_dtype(ctx, 1, "indices"));
  KESTREL_ASSIGN_OR_RETURN(std::string red, ctx.attr_string("reduction", std::string("none")));
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    return ctx.fail("reduction must be none, add, mul, max or min, got '", red, "'");
  if (ctx.input_dtype(2) != ctx.input_dtype(0) && ctx.input_dtype(2) != DType::kUndefined &&
      ctx.input_dtype(0) != DType::kUndefined)
    return ctx.fail("updates must have the dtype of data");
  const Shape& data = ctx.input_shape(0);
  const Shape& idx = ctx.input_shape(1);
  const Shape& upd = ctx.input_shape(2);
  if (data.rank_known() && idx.rank_known() && upd.rank_known()) {
    if (idx.rank() < 1) return ctx.fail("indices must have rank >= 1");
    const Dim& kd = idx[idx.rank() - 1];
    if (kd.known()) {
      const int64_t k = kd.value;
      if (k < 1 || k > data.rank()) return ctx.fail("indices' last dim ", k, " must be in [1, ", data.rank(), "]");
      std::vector<Dim> want;
      for (int64_t d = 0; d < idx.rank() - 1; ++d) want.push_back(idx[d]);
      for (int64_t d = k; d < data.rank(); ++d) want.push_back(data[d]);
      bool ok = upd.rank() == static_cast<int64_t>(want.size());
      for (int64_t d = 0; ok && d < upd.rank(); ++d)
        if (upd[d].known() && want[static_cast<size_t>(d)].known() &&
            upd[d].value != want[static_cast<size_t>(d)].value)
          ok = false;
      if (!ok)
        return ctx.fail("updates ", upd.to_string(), " must have shape ", Shape(want).to_string(), " for data ",
                        data.to_string(), " and indices ", idx.to_string());
    }
  }
  return same_as_input(ctx);
}

Status infer_one_hot(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, ctx.attr_int("axis", -1));
  const DType dt = ctx.input_dtype(2);
  const Shape& vs = ctx.input_shape(2);
  if (vs.rank_known() && vs.num_elements() >= 0 && vs.num_elements() != 2)
    return ctx.fail("values must have two elements [off, on], has shape ", vs.to_string());
  const Shape& ds = ctx.input_shape(1);
  if (ds.rank_known() && ds.num_elements() >= 0 && ds.num_elements() != 1)
    return ctx.fail("depth must be a scalar, has shape ", ds.to_string());
  const Shape& in = ctx.input_shape(0);
  if (!in.rank_known()) {
    ctx.set_output(0, dt, Shape::unknown_rank());
    return Status::ok();
  }
  KESTREL_ASSIGN_OR_RETURN(axis, infer_axis(ctx, axis, in.rank() + 1));
  Dim depth;
  if (const core::Tensor* t = ctx.input_value(1); t && t->num_elements() == 1 && t->raw_data()) {
    const int64_t d = t->element_as_int64(0);
    if (d <= 0) return ctx.fail("depth must be positive, is ", d);
    if (d > core::kMaxElements) return ctx.fail("depth ", d, " is too large");
    depth = Dim(d);
  }
  std::vector<Dim> out = *in.dims;
  out.insert(out.begin() + axis, depth);
  Shape result(std::move(out));
  KESTREL_RETURN_IF_ERROR(check_known_dims(ctx, result));
  ctx.set_output(0, dt, std::move(result));
  return Status::ok();
}

Status infer_nonzero(InferContext& ctx) {
  const Shape& in = ctx.input_shape(0);
  if (ctx.input_dtype(0) == DType::kString) return ctx.fail("NonZero does not take strings");
  std::vector<Dim> out{in.rank_known() ? Dim(std::max<int64_t>(in.rank(), 1)) : Dim::unknown(), Dim::unknown()};
  ctx.set_output(0, DType::kI64, Shape(std::move(out)));
  return Status::ok();
}

Status infer_compress(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  const Shape& in = ctx.input_shape(0);
  if (ctx.input_dtype(1) != DType::kBool && ctx.input_dtype(1) != DType::kUndefined)
    return ctx.fail("condition must be bool, is ", core::dtype_name(ctx.input_dtype(1)));
  KESTREL_RETURN_IF_ERROR(expect_rank(ctx, 1, 1));
  if (!ctx.node().has_attr("axis")) {
    ctx.set_output(0, dt, unknown_dims(1));
    return Status::ok();
  }
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, ctx.attr_int("axis"));
  if (!in.rank_known()) {
    ctx.set_output(0, dt, Shape::unknown_rank());
    return Status::ok();
  }
  KESTREL_ASSIGN_OR_RETURN(axis, infer_axis(ctx, axis, in.rank()));
  Shape out = in;
  out[axis] = Dim::unknown();
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

}  // namespace

void register_gather_scatter_ops(OpRegistry& r) {
  add_op(r, "Gather", 2, 2, 1, 1, infer_gather, "data indexed along axis by indices (negative count from the back)");
  add_op(r, "GatherElements", 2, 2, 1, 1, infer_gather_elements, "per-element gather along axis (take_along_axis)");
  add_op(r, "GatherND", 2, 2, 1, 1, infer_gather_nd, "gathers slices addressed by index tuples, after batch_dims");
  add_op(r, "ScatterElements", 3, 3, 1, 1, infer_scatter_elements,
         "data with updates written along axis (reduction none/add/mul/max/min)");
  add_op(r, "ScatterND", 3, 3, 1, 1, infer_scatter_nd,
         "data with update slices written at index tuples (reduction none/add/mul/max/min)");
  add_op(r, "OneHot", 3, 3, 1, 1, infer_one_hot, "one-hot encoding along axis with depth and [off, on] values", 0b10);
  OpSchema nz;
  nz.name = "NonZero";
  nz.min_inputs = nz.max_inputs = 1;
  nz.infer = infer_nonzero;
  nz.data_dependent_shape = true;
  nz.doc = "coordinates of the non-zero elements, int64 [rank, count]";
  r.add(std::move(nz));
  OpSchema c;
  c.name = "Compress";
  c.min_inputs = c.max_inputs = 2;
  c.infer = infer_compress;
  c.data_dependent_shape = true;
  c.doc = "slices (or flattened elements) where condition is true";
  r.add(std::move(c));
}

}  // namespace kestrel::ir
