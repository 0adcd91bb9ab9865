// Kernel bindings for Einsum (equation resolved against the input shapes at each run) and Det.
#include "kernels/reference/linalg.h"

#include <string>
#include <vector>

#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

void register_linalg_kernels(KernelRegistry& r) {
  r.add("Einsum", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(std::string equation, info.node.attr_string("equation"));
    return make_kernel([equation](KernelContext& ctx) -> Status {
      std::vector<core::Dims> dims;
      std::vector<const Tensor*> inputs;
      for (size_t i = 0; i < ctx.num_inputs(); ++i) {
        if (!ctx.has_input(i)) return core::invalid_argument(core::str_cat("Einsum: input ", i, " is missing"));
        inputs.push_back(&ctx.input(i));
        dims.push_back(ctx.input(i).dims());
      }
      KESTREL_ASSIGN_OR_RETURN(ref::EinsumPlan plan, ref::einsum_plan(equation, dims));
      return ref::einsum(plan, inputs, ctx.output(0));
    });
  });
  r.add("Det", [](const KernelCreateInfo&) -> Result<std::unique_ptr<OpKernel>> {
    return make_kernel([](KernelContext& ctx) -> Status { return ref::det(ctx.input(0), ctx.output(0)); });
  });
}

}  // namespace kestrel::runtime
