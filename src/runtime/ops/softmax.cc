// Kernel bindings for Softmax, LogSoftmax and Hardmax.
#include "kernels/cpu/norm/norm.h"
#include "kernels/reference/softmax.h"

#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

void register_softmax_kernels(KernelRegistry& r) {
  const std::pair<const char*, ref::SoftmaxKind> ops[] = {{"Softmax", ref::SoftmaxKind::kSoftmax},
                                                          {"LogSoftmax", ref::SoftmaxKind::kLogSoftmax},
                                                          {"Hardmax", ref::SoftmaxKind::kHardmax}};
  for (const auto& [name, kind] : ops) {
    r.add(name, [kind = kind](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
      KESTREL_ASSIGN_OR_RETURN(int64_t axis, info.node.attr_int("axis", -1));
      const kernels::cpu::NormTable* t =
          info.options.reference_only || kind == ref::SoftmaxKind::kHardmax ? nullptr
                                                                            : kernels::cpu::norm_table(info.options.isa);
      if (t) {
        return make_kernel(
            [kind, axis, t](KernelContext& ctx) -> Status {
              const Tensor& x = ctx.input(0);
              KESTREL_ASSIGN_OR_RETURN(int64_t a, core::normalize_axis(axis, x.rank()));
              if (a == x.rank() - 1 && x.dtype() == core::DType::kF32 && ctx.output(0).dtype() == core::DType::kF32)
                return kernels::cpu::softmax_last_axis_f32(*t, kind == ref::SoftmaxKind::kLogSoftmax, x, ctx.output(0),
                                                          ctx.pool());
              return ref::softmax(kind, a, x, ctx.output(0));
            },
            t->name);
      }
      return make_kernel([kind, axis](KernelContext& ctx) -> Status {
        KESTREL_ASSIGN_OR_RETURN(int64_t a, core::normalize_axis(axis, ctx.input(0).rank()));
        return ref::softmax(kind, a, ctx.input(0), ctx.output(0));
      });
    });
  }
}

}  // namespace kestrel::runtime
