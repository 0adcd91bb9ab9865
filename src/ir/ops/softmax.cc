// Schemas of Softmax, LogSoftmax and Hardmax (opset 13: along `axis`, default -1; older forms are
// rewritten by the importer).
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

Status infer_softmax(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, ctx.attr_int("axis", -1));
  const Shape& xs = ctx.input_shape(0);
  if (xs.rank_known()) {
    auto a = core::normalize_axis(axis, xs.rank());
    if (!a.is_ok()) return ctx.fail(a.status().message(), " (input ", xs.to_string(), ")");
  }
  return same_as_input(ctx);
}

}  // namespace

void register_softmax_ops(OpRegistry& r) {
  add_op(r, "Softmax", 1, 1, 1, 1, infer_softmax, "exp(x) / sum(exp(x)) along axis");
  add_op(r, "LogSoftmax", 1, 1, 1, 1, infer_softmax, "log(softmax(x)) along axis");
  add_op(r, "Hardmax", 1, 1, 1, 1, infer_softmax, "one-hot of the first maximum along axis");
}

}  // namespace kestrel::ir
