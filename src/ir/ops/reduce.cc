// Schemas of the reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare (axes as
// optional input 1, keepdims, noop_with_empty_axes), ArgMax/ArgMin, TopK (k as input 1), CumSum.
#include <algorithm>

#include "core/str_util.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

constexpr uint64_t kInput1Value = uint64_t{1} << 1;

bool is_min_max(const std::string& op) { return op == "ReduceMax" || op == "ReduceMin"; }

Status check_numeric(const InferContext& ctx, bool allow_bool) {
  DType t = ctx.input_dtype(0);
  if (t == DType::kString || (t == DType::kBool && !allow_bool))
    return ctx.fail("input 0 must be a numeric tensor, is ", core::dtype_name(t));
  return Status::ok();
}

Status check_int_input(const InferContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i)) return Status::ok();
  DType t = ctx.input_dtype(i);
  if (t != DType::kUndefined && t != DType::kI64 && t != DType::kI32)
    return ctx.fail(what, " (input ", i, ") must be int64 or int32, is ", core::dtype_name(t));
  return Status::ok();
}

// Normalizes axis values against `rank`, rejecting out-of-range and repeated axes.
core::Result<std::vector<bool>> axis_mask(const InferContext& ctx, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) return ctx.fail("axis ", a, " is out of range for rank ", rank);
    size_t d = static_cast<size_t>(a < 0 ? a + rank : a);
    if (mask[d]) return ctx.fail("axis ", a, " is repeated in axes [", core::join(axes), "]");
    mask[d] = true;
  }
  return mask;
}

Status infer_reduce(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(check_numeric(ctx, is_min_max(ctx.node().op_type())));
  KESTREL_ASSIGN_OR_RETURN(int64_t keepdims, ctx.attr_int("keepdims", 1));
  KESTREL_ASSIGN_OR_RETURN(int64_t noop, ctx.attr_int("noop_with_empty_axes", 0));
  if (ctx.has_input(1) && ctx.input_dtype(1) != DType::kI64 && ctx.input_dtype(1) != DType::kUndefined)
    return ctx.fail("axes (input 1) must be int64, is ", core::dtype_name(ctx.input_dtype(1)));
  if (ctx.has_input(1) && ctx.input_shape(1).rank() > 1)
    return ctx.fail("axes (input 1) must be 1-D, has shape ", ctx.input_shape(1).to_string());
  const DType dtype = ctx.input_dtype(0);
  const Shape& in = ctx.input_shape(0);
  std::vector<int64_t> axes;
  if (ctx.has_input(1)) {
    auto known = input_ints(ctx, 1);
    if (!known) {
      // Axes known only at run time: with keepdims the rank is still known.
      bool keep_rank = keepdims && in.rank_known();
      ctx.set_output(0, dtype, keep_rank ? unknown_dims(in.rank()) : Shape::unknown_rank());
      return Status::ok();
    }
    axes = std::move(*known);
  }
  if (axes.empty() && noop) return same_as_input(ctx);
  if (!in.rank_known()) {
    ctx.set_output(0, dtype, Shape::unknown_rank());
    return Status::ok();
  }
  const int64_t rank = in.rank();
  std::vector<bool> mask(static_cast<size_t>(rank), true);  // no axes: reduce all
  if (!axes.empty()) {
    KESTREL_ASSIGN_OR_RETURN(mask, axis_mask(ctx, axes, rank));
  }
  std::vector<Dim> out;
  for (int64_t d = 0; d < rank; ++d) {
    if (!mask[static_cast<size_t>(d)]) out.push_back(in[d]);
    else if (keepdims) out.emplace_back(1);
  }
  ctx.set_output(0, dtype, Shape(std::move(out)));
  return Status::ok();
}

Status infer_arg_reduce(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(check_numeric(ctx, false));
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, ctx.attr_int("axis", 0));
  KESTREL_ASSIGN_OR_RETURN(int64_t keepdims, ctx.attr_int("keepdims", 1));
  KESTREL_ASSIGN_OR_RETURN(int64_t last, ctx.attr_int("select_last_index", 0));
  (void)last;
  const Shape& in = ctx.input_shape(0);
  if (!in.rank_known()) {
    ctx.set_output(0, DType::kI64, Shape::unknown_rank());
    return Status::ok();
  }
  const int64_t rank = in.rank();
  if (axis < -rank || axis >= rank) return ctx.fail("axis ", axis, " is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  if (in[axis].known() && in[axis].value == 0) return ctx.fail("cannot take ", ctx.node().op_type(), " over an empty axis");
  std::vector<Dim> out;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis) out.push_back(in[d]);
    else if (keepdims) out.emplace_back(1);
  }
  ctx.set_output(0, DType::kI64, Shape(std::move(out)));
  return Status::ok();
}

Status infer_top_k(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(check_numeric(ctx, false));
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, ctx.attr_int("axis", -1));
  KESTREL_ASSIGN_OR_RETURN(int64_t largest, ctx.attr_int("largest", 1));
  KESTREL_ASSIGN_OR_RETURN(int64_t sorted, ctx.attr_int("sorted", 1));
  (void)largest;
  (void)sorted;
  if (ctx.input_dtype(1) != DType::kI64 && ctx.input_dtype(1) != DType::kUndefined)
    return ctx.fail("K (input 1) must be int64, is ", core::dtype_name(ctx.input_dtype(1)));
  const DType dtype = ctx.input_dtype(0);
  const Shape& in = ctx.input_shape(0);
  if (!in.rank_known()) {
    ctx.set_output(0, dtype, Shape::unknown_rank());
    ctx.set_output(1, DType::kI64, Shape::unknown_rank());
    return Status::ok();
  }
  const int64_t rank = in.rank();
  if (axis < -rank || axis >= rank) return ctx.fail("axis ", axis, " is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  Dim kdim = Dim::unknown();
  if (auto k = input_ints(ctx, 1)) {
    if (k->size() != 1) return ctx.fail("K must hold one value, has ", k->size());
    int64_t kv = (*k)[0];
    if (kv < 0) return ctx.fail("K must not be negative, is ", kv);
    if (in[axis].known() && kv > in[axis].value)
      return ctx.fail("K = ", kv, " is larger than axis ", axis, " (size ", in[axis].value, ")");
    kdim = Dim(kv);
  }
  Shape out = in;
  out[axis] = kdim;
  ctx.set_output(0, dtype, out);
  ctx.set_output(1, DType::kI64, out);
  return Status::ok();
}

Status infer_cum_sum(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(check_numeric(ctx, false));
  KESTREL_RETURN_IF_ERROR(check_int_input(ctx, 1, "axis"));
  if (ctx.input_shape(1).rank() > 1 ||
      (ctx.input_shape(1).fully_known() && ctx.input_shape(1).num_elements() != 1))
    return ctx.fail("axis (input 1) must be a scalar, has shape ", ctx.input_shape(1).to_string());
  KESTREL_ASSIGN_OR_RETURN(int64_t exclusive, ctx.attr_int("exclusive", 0));
  KESTREL_ASSIGN_OR_RETURN(int64_t reverse, ctx.attr_int("reverse", 0));
  (void)exclusive;
  (void)reverse;
  if (auto axis = input_ints(ctx, 1); axis && axis->size() == 1 && ctx.input_shape(0).rank_known()) {
    int64_t rank = ctx.input_shape(0).rank();
    if ((*axis)[0] < -rank || (*axis)[0] >= rank)
      return ctx.fail("axis ", (*axis)[0], " is out of range for rank ", rank);
  }
  return same_as_input(ctx);
}

}  // namespace

void register_reduce_ops(OpRegistry& r) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
    add_op(r, op, 1, 2, 1, 1, infer_reduce, "reduction over `axes` (input 1; all when absent)", kInput1Value);
  add_op(r, "ArgMax", 1, 1, 1, 1, infer_arg_reduce, "index of the largest value along `axis` (int64)");
  add_op(r, "ArgMin", 1, 1, 1, 1, infer_arg_reduce, "index of the smallest value along `axis` (int64)");
  add_op(r, "TopK", 2, 2, 2, 2, infer_top_k, "k largest (or smallest) values along `axis` and their indices",
         kInput1Value);
  add_op(r, "CumSum", 2, 2, 1, 1, infer_cum_sum, "cumulative sum along the axis given as input 1");
}

}  // namespace kestrel::ir
