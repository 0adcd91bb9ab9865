// Kernel binding for kestrel.Attention: the sgemm-based kernel for f32, else the reference.
#include "kernels/reference/attention.h"

#include "ir/op_schema.h"
#include "kernels/cpu/attention/attention.h"
#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

void register_attention_kernels(KernelRegistry& r) {
  r.add(ir::kKestrelDomain, "Attention", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(float scale, info.node.attr_float("scale", 1.0f));
    bool f32 = !info.input_types.empty();
    for (const ir::ValueType* t : info.input_types)
      if (t && t->dtype != core::DType::kF32) f32 = false;
    if (f32 && !info.options.reference_only) {
      const core::Isa isa = info.options.isa;
      return make_kernel(
          [scale, isa](KernelContext& ctx) {
            return kernels::cpu::attention(scale, ctx.input(0), ctx.input(1), ctx.input(2), ctx.input_or_null(3),
                                           ctx.output(0), ctx.pool(), isa);
          },
          "attention.sgemm");
    }
    return make_kernel([scale](KernelContext& ctx) {
      return ref::attention(scale, ctx.input(0), ctx.input(1), ctx.input(2), ctx.input_or_null(3), ctx.output(0));
    });
  });
}

}  // namespace kestrel::runtime
