// Schemas of elementwise ops: unary math and activations, broadcasting binary ops, comparisons,
// logical ops, Where, Clip, Cast, variadic Sum/Mean/Max/Min.
#include "core/str_util.h"
#include "ir/onnx_types.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

Status infer_unary(InferContext& ctx) { return same_as_input(ctx); }

Status infer_predicate(InferContext& ctx) {
  ctx.set_output(0, DType::kBool, ctx.input_shape(0));
  return Status::ok();
}

Status infer_binary(InferContext& ctx) {
  if (ctx.input_dtype(0) != ctx.input_dtype(1) && ctx.input_dtype(0) != DType::kUndefined &&
      ctx.input_dtype(1) != DType::kUndefined)
    return ctx.fail("inputs have different dtypes: ", core::dtype_name(ctx.input_dtype(0)), " and ",
                    core::dtype_name(ctx.input_dtype(1)));
  KESTREL_ASSIGN_OR_RETURN(Shape s, broadcast_inputs(ctx));
  ctx.set_output(0, ctx.input_dtype(0), std::move(s));
  return Status::ok();
}

Status infer_pow(InferContext& ctx) {  // exponent may have another dtype
  KESTREL_ASSIGN_OR_RETURN(Shape s, broadcast_inputs(ctx));
  ctx.set_output(0, ctx.input_dtype(0), std::move(s));
  return Status::ok();
}

Status infer_compare(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(infer_binary(ctx));
  ctx.outputs()[0].dtype = DType::kBool;
  return Status::ok();
}

Status infer_variadic(InferContext& ctx) {
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && ctx.input_dtype(i) != ctx.input_dtype(0))
      return ctx.fail("inputs have different dtypes");
  KESTREL_ASSIGN_OR_RETURN(Shape s, broadcast_inputs(ctx));
  ctx.set_output(0, ctx.input_dtype(0), std::move(s));
  return Status::ok();
}

Status infer_where(InferContext& ctx) {
  if (ctx.input_dtype(0) != DType::kBool && ctx.input_dtype(0) != DType::kUndefined)
    return ctx.fail("condition must be bool");
  KESTREL_ASSIGN_OR_RETURN(Shape s, broadcast_inputs(ctx));
  ctx.set_output(0, ctx.input_dtype(1), std::move(s));
  return Status::ok();
}

Status infer_cast(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(int64_t to, ctx.attr_int("to"));
  DType t = dtype_from_onnx(to);
  if (t == DType::kUndefined) return core::unsupported(ctx.node().describe() + ": Cast to ONNX type " + std::to_string(to) + " is not supported");
  ctx.set_output(0, t, ctx.input_shape(0));
  return Status::ok();
}

Status infer_gelu(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  core::Result<std::string> approx = ctx.attr_string("approximate", std::string("none"));
  if (!approx.is_ok()) return approx.status();
  if (*approx != "none" && *approx != "tanh")
    return ctx.fail("approximate must be \"none\" or \"tanh\", is \"", *approx, "\"");
  return same_as_input(ctx);
}

Status infer_cast_like(InferContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(1), ctx.input_shape(0));
  return Status::ok();
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  for (const char* op : {"Abs", "Neg", "Sqrt", "Exp", "Log", "Erf", "Tanh", "Sigmoid", "Relu", "Floor", "Ceil",
                         "Reciprocal", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh",
                         "Atanh", "Sign", "Round", "Not", "Softplus", "Softsign", "Identity", "LeakyRelu", "Elu",
                         "Selu", "Celu", "HardSigmoid", "HardSwish", "ThresholdedRelu", "Mish", "BitwiseNot"})
    add_op(r, op, 1, 1, 1, 1, infer_unary, "elementwise unary");
  add_op(r, "Gelu", 1, 1, 1, 1, infer_gelu, "0.5 x (1 + erf(x / sqrt 2)), or the tanh form (opset 20)");
  add_op(r, "IsNaN", 1, 1, 1, 1, infer_predicate, "x is NaN");
  add_op(r, "IsInf", 1, 1, 1, 1, infer_predicate, "x is +-inf (detect_positive, detect_negative)");
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Mod", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"})
    add_op(r, op, 2, 2, 1, 1, infer_binary, "elementwise binary with numpy broadcasting");
  add_op(r, "PRelu", 2, 2, 1, 1, infer_binary, "x < 0 ? slope * x : x");
  add_op(r, "Pow", 2, 2, 1, 1, infer_pow, "x ^ y with broadcasting");
  for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"})
    add_op(r, op, 2, 2, 1, 1, infer_compare, "comparison with broadcasting -> bool");
  for (const char* op : {"And", "Or", "Xor"}) add_op(r, op, 2, 2, 1, 1, infer_compare, "logical op on bool");
  for (const char* op : {"Sum", "Mean", "Max", "Min"})
    add_op(r, op, 1, -1, 1, 1, infer_variadic, "variadic elementwise with broadcasting");
  add_op(r, "Where", 3, 3, 1, 1, infer_where, "cond ? x : y with broadcasting");
  add_op(r, "Clip", 1, 3, 1, 1, infer_unary, "min(max(x, min), max)");
  add_op(r, "Cast", 1, 1, 1, 1, infer_cast, "convert to dtype `to`");
  add_op(r, "CastLike", 2, 2, 1, 1, infer_cast_like, "convert to the dtype of input 1");
}

}  // namespace kestrel::ir
