// Schema of kestrel.MatMulWeightInt8: MatMul / Gemm with a weight-only int8 B (int8 weight + f32
// scale per output channel), bias, residual and activation (docs/fused_ops.md).
#include "core/str_util.h"
#include "ir/ops/fused_activation.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

// Y = activation(matmul(A, W * scale) + bias + Z); W [K, N] (transB = 0) or [N, K] (transB = 1).
Status infer_matmul_weight_int8(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(read_fused_activation(ctx.node()).status());
  KESTREL_ASSIGN_OR_RETURN(int64_t tb, ctx.attr_int("transB", 0));
  if (tb != 0 && tb != 1) return ctx.fail("transB must be 0 or 1, is ", tb);
  const DType at = ctx.input_dtype(0);
  if (at != DType::kUndefined && at != DType::kF32) return ctx.fail("A must be float32, is ", core::dtype_name(at));
  const DType wt = ctx.input_dtype(1);
  if (wt != DType::kUndefined && wt != DType::kI8) return ctx.fail("W must be int8, is ", core::dtype_name(wt));
  const DType st = ctx.input_dtype(2);
  if (st != DType::kUndefined && st != DType::kF32) return ctx.fail("scale must be float32, is ", core::dtype_name(st));
  KESTREL_RETURN_IF_ERROR(expect_rank(ctx, 1, 2));
  KESTREL_RETURN_IF_ERROR(expect_rank(ctx, 2, 1));
  const Shape& as = ctx.input_shape(0);
  const Shape& ws = ctx.input_shape(1);
  const Shape& ss = ctx.input_shape(2);
  if (as.rank_known() && as.rank() < 1) return ctx.fail("A must have rank >= 1, is a scalar");
  Dim k, n;
  if (ws.rank_known()) {
    k = ws[tb ? 1 : 0];
    n = ws[tb ? 0 : 1];
  }
  if (ss.rank_known() && ss[0].known() && n.known() && ss[0].value != n.value)
    return ctx.fail("scale ", ss.to_string(), " must have N = ", n.value, " elements");
  if (!as.rank_known()) {
    ctx.set_output(0, DType::kF32, Shape::unknown_rank());
    return Status::ok();
  }
  const Dim& ka = as[as.rank() - 1];
  if (ka.known() && k.known() && ka.value != k.value)
    return ctx.fail("inner dimensions differ: A ", as.to_string(), " and W ", ws.to_string(),
                    tb ? " (transposed)" : "");
  std::vector<Dim> out(as.dims->begin(), as.dims->end() - 1);
  out.push_back(n);
  const Shape ys(std::move(out));
  if (ctx.has_input(3)) {
    const Shape& bs = ctx.input_shape(3);
    if (bs.rank_known() && bs.rank() != 1) return ctx.fail("bias must be 1-D [N], is ", bs.to_string());
    if (bs.rank_known() && bs[0].known() && n.known() && bs[0].value != n.value)
      return ctx.fail("bias ", bs.to_string(), " must have N = ", n.value, " elements");
  }
  KESTREL_RETURN_IF_ERROR(expect_residual_shape(ctx, 4, ys));
  ctx.set_output(0, DType::kF32, ys);
  return Status::ok();
}

}  // namespace

void register_weight_int8_ops(OpRegistry& r) {
  add_kestrel_op(r, "MatMulWeightInt8", 3, 5, infer_matmul_weight_int8,
                 "activation(matmul(A, W * scale per output channel) + bias + Z), W int8");
}

}  // namespace kestrel::ir
