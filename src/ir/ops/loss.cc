// Schemas of the loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opset 13 form:
// reduction none/sum/mean, optional class weights, optional ignore_index, optional log_prob output).
#include "core/str_util.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

Status check_reduction(const InferContext& ctx, std::string* reduction) {
  KESTREL_ASSIGN_OR_RETURN(*reduction, ctx.attr_string("reduction", "mean"));
  if (*reduction != "none" && *reduction != "sum" && *reduction != "mean")
    return ctx.fail("reduction must be none, sum or mean, is '", *reduction, "'");
  KESTREL_ASSIGN_OR_RETURN(int64_t ignore_index, ctx.attr_int("ignore_index", 0));
  (void)ignore_index;
  return Status::ok();
}

// Input [N, C, d1..dk], target [N, d1..dk], weight [C]; the loss has target's shape (none) or is a scalar.
Status infer_loss(InferContext& ctx) {
  std::string reduction;
  KESTREL_RETURN_IF_ERROR(check_reduction(ctx, &reduction));
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  const DType dtype = ctx.input_dtype(0);
  const DType tdtype = ctx.input_dtype(1);
  if (tdtype != DType::kUndefined && tdtype != DType::kI32 && tdtype != DType::kI64)
    return ctx.fail("target (input 1) must be int32 or int64, is ", core::dtype_name(tdtype));
  const Shape& x = ctx.input_shape(0);
  const Shape& t = ctx.input_shape(1);
  if (x.rank_known() && x.rank() < 2)
    return ctx.fail("input 0 must have rank >= 2 ([N, C, d...]), has shape ", x.to_string());
  if (x.rank_known() && t.rank_known()) {
    if (t.rank() != x.rank() - 1)
      return ctx.fail("target shape ", t.to_string(), " does not match input shape ", x.to_string(),
                      " (expected [N, d...])");
    for (int64_t i = 0; i < t.rank(); ++i) {
      const Dim& xd = x[i == 0 ? 0 : i + 1];
      if (xd.known() && t[i].known() && xd.value != t[i].value)
        return ctx.fail("target shape ", t.to_string(), " does not match input shape ", x.to_string(),
                        " (expected [N, d...])");
    }
  }
  if (ctx.has_input(2)) {
    if (ctx.input_dtype(2) != dtype && ctx.input_dtype(2) != DType::kUndefined)
      return ctx.fail("weight (input 2) must have the input's dtype ", core::dtype_name(dtype), ", is ",
                      core::dtype_name(ctx.input_dtype(2)));
    const Shape& w = ctx.input_shape(2);
    if (w.rank_known() && w.rank() != 1) return ctx.fail("weight (input 2) must be 1-D [C], has shape ", w.to_string());
    if (w.rank_known() && x.rank_known() && w[0].known() && x[1].known() && w[0].value != x[1].value)
      return ctx.fail("weight has ", w[0].value, " entries but there are ", x[1].value, " classes");
  }
  if (reduction == "none") {
    Shape out = t;
    if (!out.rank_known() && x.rank_known()) {
      std::vector<Dim> dims{x[0]};
      for (int64_t i = 2; i < x.rank(); ++i) dims.push_back(x[i]);
      out = Shape(std::move(dims));
    }
    ctx.set_output(0, dtype, std::move(out));
  } else {
    ctx.set_output(0, dtype, Shape(std::vector<Dim>{}));
  }
  if (ctx.num_outputs() > 1) ctx.set_output(1, dtype, x);
  return Status::ok();
}

}  // namespace

void register_loss_ops(OpRegistry& r) {
  add_op(r, "NegativeLogLikelihoodLoss", 2, 3, 1, 1, infer_loss,
         "-input[n, target[n, d...], d...] * weight[target], reduced by `reduction`");
  add_op(r, "SoftmaxCrossEntropyLoss", 2, 3, 1, 2, infer_loss,
         "NegativeLogLikelihoodLoss of log_softmax(scores, axis 1); optional log_prob output");
}

}  // namespace kestrel::ir
