// Schemas of ops that belong to no larger family: Unique (data-dependent output shapes),
// ReverseSequence and Shrink.
#include <string>

#include "core/str_util.h"
#include "ir/ops/axis_helpers.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

Status infer_unique(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(int64_t sorted, ctx.attr_int("sorted", 1));
  if (sorted != 0 && sorted != 1) return ctx.fail("sorted must be 0 or 1, is ", sorted);
  const DType dt = ctx.input_dtype(0);
  const Shape& x = ctx.input_shape(0);
  Shape y = Shape({Dim::unknown()});
  Dim items = x.fully_known() ? Dim(x.num_elements()) : Dim::unknown();
  if (ctx.node().has_attr("axis")) {
    KESTREL_ASSIGN_OR_RETURN(int64_t axis, ctx.attr_int("axis"));
    if (!x.rank_known()) {
      y = Shape::unknown_rank();
      items = Dim::unknown();
    } else {
      KESTREL_ASSIGN_OR_RETURN(axis, infer_axis(ctx, axis, x.rank()));
      y = x;
      y[axis] = Dim::unknown();
      items = x[axis];
    }
  }
  ctx.set_output(0, dt, y);
  if (ctx.num_outputs() > 1) ctx.set_output(1, DType::kI64, Shape({Dim::unknown()}));
  if (ctx.num_outputs() > 2) ctx.set_output(2, DType::kI64, Shape({items}));
  if (ctx.num_outputs() > 3) ctx.set_output(3, DType::kI64, Shape({Dim::unknown()}));
  return Status::ok();
}

Status infer_reverse_sequence(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(int64_t batch_axis, ctx.attr_int("batch_axis", 1));
  KESTREL_ASSIGN_OR_RETURN(int64_t time_axis, ctx.attr_int("time_axis", 0));
  if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0)))
    return ctx.fail("batch_axis and time_axis must be 0 and 1 in some order, are ", batch_axis, " and ", time_axis);
  const DType lt = ctx.input_dtype(1);
  if (lt != DType::kUndefined && lt != DType::kI64 && lt != DType::kI32)
    return ctx.fail("sequence_lens must be int64, is ", core::dtype_name(lt));
  const Shape& x = ctx.input_shape(0);
  const Shape& l = ctx.input_shape(1);
  if (x.rank_known() && x.rank() < 2) return ctx.fail("input must have rank >= 2, has shape ", x.to_string());
  if (l.rank_known() && l.rank() != 1) return ctx.fail("sequence_lens must be 1-D, has shape ", l.to_string());
  if (x.rank_known() && l.rank_known() && x[batch_axis].known() && l[0].known() && x[batch_axis].value != l[0].value)
    return ctx.fail("sequence_lens has ", l[0].value, " entries for a batch of ", x[batch_axis].value);
  return same_as_input(ctx);
}

Status infer_shrink(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (dt == DType::kString || dt == DType::kBool) return ctx.fail("input must be numeric, is ", core::dtype_name(dt));
  KESTREL_RETURN_IF_ERROR(ctx.attr_float("lambd", 0.5f).status());
  KESTREL_RETURN_IF_ERROR(ctx.attr_float("bias", 0.f).status());
  return same_as_input(ctx);
}

}  // namespace

void register_misc_ops(OpRegistry& r) {
  OpSchema u;
  u.name = "Unique";
  u.min_inputs = u.max_inputs = 1;
  u.min_outputs = 1;
  u.max_outputs = 4;
  u.infer = infer_unique;
  u.data_dependent_shape = true;
  u.doc = "unique elements (or slices along axis), first indices, inverse indices and counts";
  r.add(std::move(u));
  add_op(r, "ReverseSequence", 2, 2, 1, 1, infer_reverse_sequence,
         "reverses the first sequence_lens[b] time steps of each batch entry");
  add_op(r, "Shrink", 1, 1, 1, 1, infer_shrink, "x + bias below -lambd, x - bias above lambd, 0 between");
}

}  // namespace kestrel::ir
