// Kernel binding for kestrel.Attention (reference scaled-dot-product attention).
#include "kernels/reference/attention.h"

#include "ir/op_schema.h"
#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

void register_attention_kernels(KernelRegistry& r) {
  r.add(ir::kKestrelDomain, "Attention", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(float scale, info.node.attr_float("scale", 1.0f));
    return make_kernel([scale](KernelContext& ctx) {
      return ref::attention(scale, ctx.input(0), ctx.input(1), ctx.input(2), ctx.input_or_null(3), ctx.output(0));
    });
  });
}

}  // namespace kestrel::runtime
