// Schemas of the pooling ops: MaxPool (optional Indices), AveragePool, LpPool and the global
// pools, sharing the window geometry of Conv (auto_pad, pads, strides, dilations, ceil_mode).
#include "core/str_util.h"
#include "ir/ops/infer_helpers.h"
#include "ir/ops/window_geometry.h"

namespace kestrel::ir {

using core::Status;

namespace {

Status infer_window_pool(InferContext& ctx, bool allow_int8) {
  DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !core::is_float(t) && !(allow_int8 && (t == DType::kI8 || t == DType::kU8)))
    return ctx.fail("dtype ", core::dtype_name(t), " is not supported");
  KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, ctx.attr_ints("kernel_shape"));
  if (kernel.empty()) return ctx.fail("kernel_shape must not be empty");
  KESTREL_ASSIGN_OR_RETURN(WindowAttrs a, read_window_attrs(ctx.node(), kernel, true));
  const Shape& xs = ctx.input_shape(0);
  const int64_t rank = static_cast<int64_t>(kernel.size()) + 2;
  if (xs.rank_known() && xs.rank() != rank)
    return ctx.fail("input ", xs.to_string(), " must have rank ", rank, " for kernel_shape [", core::join(kernel), "]");
  std::vector<Dim> out(static_cast<size_t>(rank));
  if (xs.rank_known()) {
    out[0] = xs[0];
    out[1] = xs[1];
    for (int64_t i = 2; i < rank; ++i) {
      if (!xs[i].known()) continue;
      auto w = forward_window(a, static_cast<size_t>(i - 2), xs[i].value);
      if (!w.is_ok()) return ctx.fail(w.status().message());
      out[static_cast<size_t>(i)] = Dim(w->out);
    }
  }
  ctx.set_output(0, t, Shape(out));
  if (ctx.num_outputs() > 1) ctx.set_output(1, DType::kI64, Shape(out));
  return Status::ok();
}

Status infer_max_pool(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(int64_t order, ctx.attr_int("storage_order", 0));
  if (order != 0 && order != 1) return ctx.fail("storage_order must be 0 or 1, got ", order);
  return infer_window_pool(ctx, true);
}

Status infer_average_pool(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(int64_t cip, ctx.attr_int("count_include_pad", 0));
  if (cip != 0 && cip != 1) return ctx.fail("count_include_pad must be 0 or 1, got ", cip);
  return infer_window_pool(ctx, false);
}

Status infer_lp_pool(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(read_lp_pool_p(ctx.node()).status());
  return infer_window_pool(ctx, false);
}

Status infer_global_pool(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  if (ctx.node().op_type() == "GlobalLpPool") KESTREL_RETURN_IF_ERROR(read_lp_pool_p(ctx.node()).status());
  const Shape& xs = ctx.input_shape(0);
  if (!xs.rank_known()) {
    ctx.set_output(0, ctx.input_dtype(0), Shape::unknown_rank());
    return Status::ok();
  }
  if (xs.rank() < 2) return ctx.fail("input must have rank >= 2 (N, C, spatial...), is ", xs.to_string());
  std::vector<Dim> out(static_cast<size_t>(xs.rank()), Dim(1));
  out[0] = xs[0];
  out[1] = xs[1];
  ctx.set_output(0, ctx.input_dtype(0), Shape(std::move(out)));
  return Status::ok();
}

}  // namespace

void register_pool_ops(OpRegistry& r) {
  add_op(r, "MaxPool", 1, 1, 1, 2, infer_max_pool, "max over sliding windows (+ argmax indices)");
  add_op(r, "AveragePool", 1, 1, 1, 1, infer_average_pool, "mean over sliding windows");
  add_op(r, "LpPool", 1, 1, 1, 1, infer_lp_pool, "Lp norm over sliding windows");
  add_op(r, "GlobalAveragePool", 1, 1, 1, 1, infer_global_pool, "mean over all spatial dims");
  add_op(r, "GlobalMaxPool", 1, 1, 1, 1, infer_global_pool, "max over all spatial dims");
  add_op(r, "GlobalLpPool", 1, 1, 1, 1, infer_global_pool, "Lp norm over all spatial dims");
}

}  // namespace kestrel::ir
