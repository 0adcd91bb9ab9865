// Schemas of ONNX's optimizer ops (domain ai.onnx.preview.training, opset 1): Adagrad, Adam and
// Momentum. Each takes R, T and then k groups of n tensors (X..., G..., then the state tensors),
// and returns (k - 1) groups: the new X... and the new state tensors.
#include <string>

#include "core/str_util.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

bool is_f32_or_f64(DType t) {
  return t == DType::kF32 || t == DType::kF64;
}

// Input i must hold one element (rank 0, or every dim 1) of an allowed dtype.
Status expect_one_element(const InferContext& ctx, size_t i, const char* name, bool integer) {
  const DType t = ctx.input_dtype(i);
  if (integer && t != DType::kUndefined && t != DType::kI64)
    return ctx.fail(name, " must be int64, is ", core::dtype_name(t));
  if (!integer && t != DType::kUndefined && !is_f32_or_f64(t))
    return ctx.fail(name, " must be float or double, is ", core::dtype_name(t));
  const Shape& s = ctx.input_shape(i);
  if (!s.rank_known()) return Status::ok();
  for (int64_t d = 0; d < s.rank(); ++d)
    if (s[d].known() && s[d].value != 1) return ctx.fail(name, " must be a scalar, has shape ", s.to_string());
  return Status::ok();
}

// `groups` input groups after R and T (X, G, then groups - 2 state tensors); the outputs are X and
// the states. `state_names` name the state groups in errors.
Status infer_optimizer(InferContext& ctx, int groups, std::initializer_list<const char*> state_names) {
  const size_t variadic = ctx.num_inputs() < 2 ? 0 : ctx.num_inputs() - 2;
  if (variadic == 0 || variadic % static_cast<size_t>(groups) != 0)
    return ctx.fail("expects R, T and ", groups, " groups of equally many tensors, has ", ctx.num_inputs(), " inputs");
  const size_t n = variadic / static_cast<size_t>(groups);
  if (ctx.num_outputs() != n * static_cast<size_t>(groups - 1))
    return ctx.fail("optimizes ", n, " tensors and so must have ", n * static_cast<size_t>(groups - 1),
                    " outputs, has ", ctx.num_outputs());
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (!ctx.has_input(i)) return ctx.fail("input ", i, " is missing (no input is optional)");
  KESTREL_RETURN_IF_ERROR(expect_one_element(ctx, 0, "R", false));
  KESTREL_RETURN_IF_ERROR(expect_one_element(ctx, 1, "T", true));
  std::vector<std::string> names = {"X", "G"};
  for (const char* s : state_names) names.push_back(s);
  for (size_t j = 0; j < n; ++j) {
    const size_t x = 2 + j;
    const Shape& xs = ctx.input_shape(x);
    for (size_t g = 0; g < static_cast<size_t>(groups); ++g) {
      const size_t i = 2 + g * n + j;
      const DType t = ctx.input_dtype(i);
      if (t != DType::kUndefined && !is_f32_or_f64(t))
        return ctx.fail(names[g], j + 1, " must be float or double, is ", core::dtype_name(t));
      const Shape& s = ctx.input_shape(i);
      if (g == 0 || !s.rank_known() || !xs.rank_known()) continue;
      bool same = s.rank() == xs.rank();
      for (int64_t d = 0; same && d < s.rank(); ++d)
        if (s[d].known() && xs[d].known() && s[d].value != xs[d].value) same = false;
      if (!same)
        return ctx.fail(names[g], j + 1, " ", s.to_string(), " must have the shape of X", j + 1, " ", xs.to_string());
    }
    // Outputs: X_new, then each state group (skipping G).
    ctx.set_output(j, ctx.input_type(x));
    for (size_t g = 2; g < static_cast<size_t>(groups); ++g)
      ctx.set_output((g - 1) * n + j, ctx.input_type(2 + g * n + j));
  }
  return Status::ok();
}

Status infer_adagrad(InferContext& ctx) {
  // The spec puts no range on the coefficients; they only need to be floats.
  for (const char* a : {"decay_factor", "epsilon", "norm_coefficient"})
    KESTREL_RETURN_IF_ERROR(ctx.attr_float(a, 0.f).status());
  return infer_optimizer(ctx, 3, {"H"});
}

Status infer_adam(InferContext& ctx) {
  for (const char* a : {"alpha", "beta", "epsilon", "norm_coefficient", "norm_coefficient_post"})
    KESTREL_RETURN_IF_ERROR(ctx.attr_float(a, 0.f).status());
  return infer_optimizer(ctx, 4, {"V", "H"});
}

// Out of line: GCC 12 sees the inlined SSO compare of an 8-character literal as maybe-uninitialized.
[[gnu::noinline]] bool momentum_mode_is_valid(const std::string& mode) {
  return mode == "standard" || mode == "nesterov";
}

Status infer_momentum(InferContext& ctx) {
  // All four attributes are required by the spec (no defaults).
  KESTREL_RETURN_IF_ERROR(ctx.attr_float("alpha").status());
  KESTREL_RETURN_IF_ERROR(ctx.attr_float("beta").status());
  KESTREL_RETURN_IF_ERROR(ctx.attr_float("norm_coefficient").status());
  KESTREL_ASSIGN_OR_RETURN(std::string mode, ctx.attr_string("mode"));
  if (!momentum_mode_is_valid(mode)) return ctx.fail("mode must be 'standard' or 'nesterov', is '", mode, "'");
  return infer_optimizer(ctx, 3, {"V"});
}

void add_training_op(OpRegistry& r, const char* name, int groups, InferFn fn, const char* doc) {
  OpSchema s;
  s.domain = kOnnxTrainingDomain;
  s.name = name;
  s.min_inputs = 2 + groups;
  s.max_inputs = -1;
  s.min_outputs = groups - 1;
  s.max_outputs = -1;
  s.infer = std::move(fn);
  s.doc = doc;
  r.add(std::move(s));
}

}  // namespace

void register_training_ops(OpRegistry& r) {
  add_training_op(r, "Adagrad", 3, infer_adagrad, "one ADAGRAD step: (R, T, X..., G..., H...) -> (X_new..., H_new...)");
  add_training_op(r, "Adam", 4, infer_adam,
                  "one Adam step: (R, T, X..., G..., V..., H...) -> (X_new..., V_new..., H_new...)");
  add_training_op(r, "Momentum", 3, infer_momentum,
                  "one SGD step with standard or Nesterov momentum: (R, T, X..., G..., V...) -> (X_new..., V_new...)");
}

}  // namespace kestrel::ir
