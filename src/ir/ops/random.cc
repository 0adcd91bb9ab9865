// Schemas of the random ops: RandomNormal, RandomUniform, RandomNormalLike, RandomUniformLike,
// Bernoulli and Multinomial. All are nondeterministic: never constant-folded, CSE'd or removed.
#include "core/str_util.h"
#include "ir/onnx_types.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

bool is_random_float(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kF64 || t == DType::kBF16;
}

// The `dtype` attribute (an ONNX type code), or `fallback` when absent.
core::Result<DType> dtype_attr(const InferContext& ctx, DType fallback) {
  if (!ctx.node().has_attr("dtype")) return fallback;
  KESTREL_ASSIGN_OR_RETURN(int64_t code, ctx.attr_int("dtype"));
  DType t = dtype_from_onnx(code);
  if (t == DType::kUndefined)
    return core::unsupported(core::str_cat(ctx.node().describe(), ": dtype ", code, " is not supported"));
  return t;
}

Status check_seed(const InferContext& ctx) {
  if (ctx.node().has_attr("seed")) {
    KESTREL_ASSIGN_OR_RETURN(float seed, ctx.attr_float("seed"));
    (void)seed;
  }
  return Status::ok();
}

Status infer_random(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(check_seed(ctx));
  KESTREL_ASSIGN_OR_RETURN(DType t, dtype_attr(ctx, DType::kF32));
  if (!is_random_float(t)) return ctx.fail("dtype must be a float type, is ", core::dtype_name(t));
  KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ctx.attr_ints("shape"));
  for (int64_t d : shape)
    if (d < 0) return ctx.fail("shape [", core::join(shape), "] has a negative dimension");
  if (!core::checked_num_elements(shape).is_ok()) return ctx.fail("shape [", core::join(shape), "] is too large");
  ctx.set_output(0, t, Shape(core::Dims(shape)));
  return Status::ok();
}

Status infer_random_like(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(check_seed(ctx));
  KESTREL_ASSIGN_OR_RETURN(DType t, dtype_attr(ctx, ctx.input_dtype(0)));
  if (t != DType::kUndefined && !is_random_float(t))
    return ctx.fail("output dtype must be a float type, is ", core::dtype_name(t),
                    ctx.node().has_attr("dtype") ? "" : " (the input's; set the dtype attribute)");
  ctx.set_output(0, t, ctx.input_shape(0));
  return Status::ok();
}

Status infer_bernoulli(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(check_seed(ctx));
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  KESTREL_ASSIGN_OR_RETURN(DType t, dtype_attr(ctx, ctx.input_dtype(0)));
  if (t == DType::kString) return ctx.fail("dtype must be numeric or bool");
  ctx.set_output(0, t, ctx.input_shape(0));
  return Status::ok();
}

Status infer_multinomial(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(check_seed(ctx));
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  KESTREL_RETURN_IF_ERROR(expect_rank(ctx, 0, 2));
  KESTREL_ASSIGN_OR_RETURN(DType t, dtype_attr(ctx, DType::kI32));
  if (t != DType::kI32 && t != DType::kI64) return ctx.fail("dtype must be int32 or int64, is ", core::dtype_name(t));
  KESTREL_ASSIGN_OR_RETURN(int64_t samples, ctx.attr_int("sample_size", 1));
  if (samples < 0) return ctx.fail("sample_size must be >= 0, is ", samples);
  const Shape& in = ctx.input_shape(0);
  ctx.set_output(0, t, Shape(std::vector<Dim>{in.rank_known() ? in[0] : Dim::unknown(), Dim(samples)}));
  return Status::ok();
}

void add_random_op(OpRegistry& r, const char* name, int inputs, InferFn fn, const char* doc, uint64_t shape_only) {
  OpSchema s;
  s.name = name;
  s.min_inputs = s.max_inputs = inputs;
  s.infer = std::move(fn);
  s.doc = doc;
  s.shape_only_inputs = shape_only;
  s.nondeterministic = true;
  r.add(std::move(s));
}

}  // namespace

void register_random_ops(OpRegistry& r) {
  add_random_op(r, "RandomNormal", 0, infer_random, "normal samples (mean, scale) of the given shape and dtype", 0);
  add_random_op(r, "RandomUniform", 0, infer_random, "uniform samples in [low, high) of the given shape and dtype", 0);
  add_random_op(r, "RandomNormalLike", 1, infer_random_like, "normal samples shaped like the input", 1);
  add_random_op(r, "RandomUniformLike", 1, infer_random_like, "uniform samples shaped like the input", 1);
  add_random_op(r, "Bernoulli", 1, infer_bernoulli, "1 with probability p, else 0", 0);
  add_random_op(r, "Multinomial", 1, infer_multinomial, "class indices drawn from softmax(input) per row", 0);
}

}  // namespace kestrel::ir
