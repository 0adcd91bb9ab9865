// Kernel bindings for Gemm and MatMul.
#include "kernels/reference/matmul.h"

#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

void register_matmul_kernels(KernelRegistry& r) {
  r.add("Gemm", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    const ir::Node& n = info.node;
    ref::GemmParams p;
    KESTREL_ASSIGN_OR_RETURN(int64_t ta, n.attr_int("transA", 0));
    KESTREL_ASSIGN_OR_RETURN(int64_t tb, n.attr_int("transB", 0));
    KESTREL_ASSIGN_OR_RETURN(p.alpha, n.attr_float("alpha", 1.0f));
    KESTREL_ASSIGN_OR_RETURN(p.beta, n.attr_float("beta", 1.0f));
    p.trans_a = ta != 0;
    p.trans_b = tb != 0;
    return make_kernel([p](KernelContext& ctx) {
      return ref::gemm(p, ctx.input(0), ctx.input(1), ctx.input_or_null(2), ctx.output(0));
    });
  });
  r.add("MatMul", [](const KernelCreateInfo&) -> Result<std::unique_ptr<OpKernel>> {
    return make_kernel([](KernelContext& ctx) { return ref::matmul(ctx.input(0), ctx.input(1), ctx.output(0)); });
  });
}

}  // namespace kestrel::runtime
