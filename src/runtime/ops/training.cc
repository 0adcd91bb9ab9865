// Kernel bindings for the optimizer ops (ai.onnx.preview.training): attributes into params, then
// one reference step per optimized tensor of the variadic groups.
#include "kernels/reference/training.h"

#include <string>

#include "ir/op_schema.h"
#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

namespace {

// Number of optimized tensors when inputs are R, T and `groups` groups (checked by the schema;
// checked again here since a kernel may be created for a node that skipped inference).
Result<size_t> tensor_count(const KernelCreateInfo& info, size_t groups) {
  const size_t ins = info.node.num_inputs(), outs = info.node.num_outputs();
  if (ins < 2 + groups || (ins - 2) % groups != 0 || outs != (ins - 2) / groups * (groups - 1))
    return info.fail("has ", ins, " inputs and ", outs, " outputs, which do not form R, T and ", groups,
                     " groups of inputs with ", groups - 1, " groups of outputs");
  return (ins - 2) / groups;
}

// 0 standard, 1 nesterov, -1 neither. Out of line: GCC 12 sees the inlined SSO compare of an
// 8-character literal as maybe-uninitialized.
[[gnu::noinline]] int momentum_mode(const std::string& mode) {
  return mode == "standard" ? 0 : mode == "nesterov" ? 1 : -1;
}

Status check_inputs(KernelContext& ctx) {
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (!ctx.has_input(i)) return core::invalid_argument(core::str_cat("input ", i, " is missing"));
  return Status::ok();
}

}  // namespace

void register_training_kernels(KernelRegistry& r) {
  const std::string domain = ir::kOnnxTrainingDomain;
  r.add(domain, "Adagrad", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(size_t n, tensor_count(info, 3));
    ref::AdagradParams p;
    KESTREL_ASSIGN_OR_RETURN(float norm, info.node.attr_float("norm_coefficient", 0.f));
    KESTREL_ASSIGN_OR_RETURN(float decay, info.node.attr_float("decay_factor", 0.f));
    KESTREL_ASSIGN_OR_RETURN(float eps, info.node.attr_float("epsilon", 1e-6f));
    p.norm_coefficient = norm;
    p.decay_factor = decay;
    p.epsilon = eps;
    return make_kernel([n, p](KernelContext& ctx) -> Status {
      KESTREL_RETURN_IF_ERROR(check_inputs(ctx));
      for (size_t j = 0; j < n; ++j)
        KESTREL_RETURN_IF_ERROR(ref::adagrad(ctx.input(0), ctx.input(1), ctx.input(2 + j), ctx.input(2 + n + j),
                                             ctx.input(2 + 2 * n + j), p, ctx.output(j), ctx.output(n + j)));
      return Status::ok();
    });
  });
  r.add(domain, "Adam", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(size_t n, tensor_count(info, 4));
    ref::AdamParams p;
    KESTREL_ASSIGN_OR_RETURN(float alpha, info.node.attr_float("alpha", 0.9f));
    KESTREL_ASSIGN_OR_RETURN(float beta, info.node.attr_float("beta", 0.999f));
    KESTREL_ASSIGN_OR_RETURN(float eps, info.node.attr_float("epsilon", 1e-6f));
    KESTREL_ASSIGN_OR_RETURN(float norm, info.node.attr_float("norm_coefficient", 0.f));
    KESTREL_ASSIGN_OR_RETURN(float post, info.node.attr_float("norm_coefficient_post", 0.f));
    p.alpha = alpha;
    p.beta = beta;
    p.epsilon = eps;
    p.norm_coefficient = norm;
    p.norm_coefficient_post = post;
    return make_kernel([n, p](KernelContext& ctx) -> Status {
      KESTREL_RETURN_IF_ERROR(check_inputs(ctx));
      for (size_t j = 0; j < n; ++j)
        KESTREL_RETURN_IF_ERROR(ref::adam(ctx.input(0), ctx.input(1), ctx.input(2 + j), ctx.input(2 + n + j),
                                          ctx.input(2 + 2 * n + j), ctx.input(2 + 3 * n + j), p, ctx.output(j),
                                          ctx.output(n + j), ctx.output(2 * n + j)));
      return Status::ok();
    });
  });
  r.add(domain, "Momentum", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(size_t n, tensor_count(info, 3));
    ref::MomentumParams p;
    KESTREL_ASSIGN_OR_RETURN(float alpha, info.node.attr_float("alpha"));
    KESTREL_ASSIGN_OR_RETURN(float beta, info.node.attr_float("beta"));
    KESTREL_ASSIGN_OR_RETURN(float norm, info.node.attr_float("norm_coefficient"));
    KESTREL_ASSIGN_OR_RETURN(std::string mode, info.node.attr_string("mode"));
    const int kind = momentum_mode(mode);
    if (kind < 0) return info.fail("mode must be 'standard' or 'nesterov', is '", mode, "'");
    p.alpha = alpha;
    p.beta = beta;
    p.norm_coefficient = norm;
    p.nesterov = kind == 1;
    return make_kernel([n, p](KernelContext& ctx) -> Status {
      KESTREL_RETURN_IF_ERROR(check_inputs(ctx));
      for (size_t j = 0; j < n; ++j)
        KESTREL_RETURN_IF_ERROR(ref::momentum(ctx.input(0), ctx.input(1), ctx.input(2 + j), ctx.input(2 + n + j),
                                              ctx.input(2 + 2 * n + j), p, ctx.output(j), ctx.output(n + j)));
      return Status::ok();
    });
  });
}

}  // namespace kestrel::runtime
