// Schemas of the normalization ops: BatchNormalization (inference and training), InstanceNormalization,
// LayerNormalization, GroupNormalization, LRN, LpNormalization, MeanVarianceNormalization.
#include "core/str_util.h"
#include "ir/onnx_types.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

// Input i must be a 1-D float tensor of `n` elements (n unknown: only the rank is checked).
Status expect_channel_param(const InferContext& ctx, size_t i, const Dim& n, const char* name) {
  if (!ctx.has_input(i)) return Status::ok();
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, i));
  const Shape& s = ctx.input_shape(i);
  if (!s.rank_known()) return Status::ok();
  if (s.rank() != 1) return ctx.fail(name, " must be 1-D, is ", s.to_string());
  if (s[0].known() && n.known() && s[0].value != n.value)
    return ctx.fail(name, " ", s.to_string(), " must have ", n.value, " elements (the channel count)");
  return Status::ok();
}

Dim channels(const InferContext& ctx) {
  const Shape& s = ctx.input_shape(0);
  return s.rank_known() && s.rank() >= 2 ? s[1] : Dim::unknown();
}

Status expect_min_rank(const InferContext& ctx, int64_t r) {
  const Shape& s = ctx.input_shape(0);
  if (s.rank_known() && s.rank() < r) return ctx.fail("input must have rank >= ", r, ", is ", s.to_string());
  return Status::ok();
}

Status infer_batch_norm(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(int64_t training, ctx.attr_int("training_mode", 0));
  if (training != 0 && training != 1) return ctx.fail("training_mode must be 0 or 1, is ", training);
  KESTREL_RETURN_IF_ERROR(ctx.attr_float("momentum", 0.9f).status());
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  KESTREL_RETURN_IF_ERROR(expect_min_rank(ctx, 2));
  const Dim c = channels(ctx);
  const char* names[] = {"", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i) KESTREL_RETURN_IF_ERROR(expect_channel_param(ctx, i, c, names[i]));
  ctx.set_output(0, ctx.input_type(0));
  // Running statistics (training mode: updated; inference: the inputs passed through) keep the
  // types of input_mean / input_var.
  if (ctx.num_outputs() > 1) ctx.set_output(1, ctx.input_type(3));
  if (ctx.num_outputs() > 2) ctx.set_output(2, ctx.input_type(4));
  return Status::ok();
}

Status infer_instance_norm(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  KESTREL_RETURN_IF_ERROR(expect_min_rank(ctx, 2));
  KESTREL_RETURN_IF_ERROR(expect_channel_param(ctx, 1, channels(ctx), "scale"));
  KESTREL_RETURN_IF_ERROR(expect_channel_param(ctx, 2, channels(ctx), "B"));
  return same_as_input(ctx);
}

Status infer_group_norm(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  KESTREL_RETURN_IF_ERROR(expect_min_rank(ctx, 2));
  KESTREL_ASSIGN_OR_RETURN(int64_t groups, ctx.attr_int("num_groups"));
  if (groups < 1) return ctx.fail("num_groups must be >= 1, is ", groups);
  const Dim c = channels(ctx);
  if (c.known() && c.value % groups != 0)
    return ctx.fail("num_groups ", groups, " does not divide ", c.value, " channels");
  // Opset 21 has one scale/bias per channel, opset 18 one per group: both are accepted.
  for (size_t i : {size_t{1}, size_t{2}}) {
    const char* name = i == 1 ? "scale" : "bias";
    KESTREL_RETURN_IF_ERROR(expect_float(ctx, i));
    const Shape& s = ctx.input_shape(i);
    if (!s.rank_known()) continue;
    if (s.rank() != 1) return ctx.fail(name, " must be 1-D, is ", s.to_string());
    if (s[0].known() && c.known() && s[0].value != c.value && s[0].value != groups)
      return ctx.fail(name, " ", s.to_string(), " must have ", c.value, " (channels) or ", groups,
                      " (groups) elements");
  }
  return same_as_input(ctx);
}

Status infer_layer_norm(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, ctx.attr_int("axis", -1));
  KESTREL_ASSIGN_OR_RETURN(int64_t stash, ctx.attr_int("stash_type", 1));
  DType stash_dtype = dtype_from_onnx(stash);
  if (!core::is_float(stash_dtype)) return ctx.fail("stash_type ", stash, " is not a float type");
  for (size_t i : {size_t{1}, size_t{2}})
    if (ctx.has_input(i)) KESTREL_RETURN_IF_ERROR(expect_float(ctx, i));
  ctx.set_output(0, ctx.input_type(0));
  const Shape& xs = ctx.input_shape(0);
  Shape stats = Shape::unknown_rank();
  if (xs.rank_known()) {
    const int64_t r = xs.rank();
    if (axis < -r || axis > r) return ctx.fail("axis ", axis, " is out of range for rank ", r);
    if (axis < 0) axis += r;
    std::vector<Dim> d = *xs.dims;
    for (int64_t i = axis; i < r; ++i) d[static_cast<size_t>(i)] = Dim(1);
    stats = Shape(std::move(d));
    for (size_t i : {size_t{1}, size_t{2}}) {
      if (!ctx.has_input(i) || !ctx.input_shape(i).rank_known()) continue;
      const Shape& ps = ctx.input_shape(i);
      if (ps.rank() > r - axis)
        return ctx.fail(i == 1 ? "Scale " : "B ", ps.to_string(), " has more dims than the normalized shape");
      for (int64_t j = 0; j < ps.rank(); ++j) {
        const Dim& pd = ps[j];
        const Dim& xd = xs[r - ps.rank() + j];
        if (pd.known() && pd.value != 1 && xd.known() && xd.value != pd.value)
          return ctx.fail(i == 1 ? "Scale " : "B ", ps.to_string(), " does not broadcast to the normalized dims of ",
                          xs.to_string());
      }
    }
  }
  for (size_t o = 1; o < ctx.num_outputs(); ++o) ctx.set_output(o, stash_dtype, stats);
  return Status::ok();
}

Status infer_lrn(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  KESTREL_RETURN_IF_ERROR(expect_min_rank(ctx, 2));
  KESTREL_ASSIGN_OR_RETURN(int64_t size, ctx.attr_int("size"));
  if (size < 1) return ctx.fail("size must be >= 1, is ", size);
  return same_as_input(ctx);
}

Status infer_lp_norm(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, ctx.attr_int("axis", -1));
  KESTREL_ASSIGN_OR_RETURN(int64_t p, ctx.attr_int("p", 2));
  if (p != 1 && p != 2) return ctx.fail("p must be 1 or 2, is ", p);
  const Shape& xs = ctx.input_shape(0);
  if (xs.rank_known() && (axis < -xs.rank() || axis >= xs.rank()))
    return ctx.fail("axis ", axis, " is out of range for ", xs.to_string());
  return same_as_input(ctx);
}

Status infer_mvn(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.attr_ints("axes", std::vector<int64_t>{0, 2, 3}));
  const Shape& xs = ctx.input_shape(0);
  if (xs.rank_known()) {
    std::vector<bool> seen(static_cast<size_t>(xs.rank()), false);
    for (int64_t a : axes) {
      auto n = core::normalize_axis(a, xs.rank());
      if (!n.is_ok()) return ctx.fail("axes: ", n.status().message(), " (input ", xs.to_string(), ")");
      if (seen[static_cast<size_t>(*n)]) return ctx.fail("axes repeat axis ", a);
      seen[static_cast<size_t>(*n)] = true;
    }
  }
  return same_as_input(ctx);
}

}  // namespace

void register_normalization_ops(OpRegistry& r) {
  add_op(r, "BatchNormalization", 5, 5, 1, 3, infer_batch_norm, "(x - mean) / sqrt(var + eps) * scale + B per channel; training_mode=1: batch statistics, updated running ones");
  add_op(r, "InstanceNormalization", 3, 3, 1, 1, infer_instance_norm, "normalize each [n, c] plane");
  add_op(r, "LayerNormalization", 2, 3, 1, 3, infer_layer_norm, "normalize over dims [axis, rank)");
  add_op(r, "GroupNormalization", 3, 3, 1, 1, infer_group_norm, "normalize each group of channels");
  add_op(r, "LRN", 1, 1, 1, 1, infer_lrn, "local response normalization across channels");
  add_op(r, "LpNormalization", 1, 1, 1, 1, infer_lp_norm, "x / ||x||_p along axis");
  add_op(r, "MeanVarianceNormalization", 1, 1, 1, 1, infer_mvn, "(x - mean) / std over axes");
}

}  // namespace kestrel::ir
