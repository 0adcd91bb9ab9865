// Kernel bindings for Unique (outputs allocated by the kernel), ReverseSequence and Shrink.
#include "kernels/reference/misc.h"

#include <optional>
#include <utility>

#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

void register_misc_kernels(KernelRegistry& r) {
  r.add("Unique", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(int64_t sorted, info.node.attr_int("sorted", 1));
    std::optional<int64_t> axis;
    if (info.node.has_attr("axis")) {
      KESTREL_ASSIGN_OR_RETURN(axis, info.node.attr_int("axis"));
    }
    return make_kernel([sorted, axis](KernelContext& ctx) -> Status {
      const Tensor& x = ctx.input(0);
      std::optional<int64_t> a;
      if (axis) {
        KESTREL_ASSIGN_OR_RETURN(a, core::normalize_axis(*axis, x.rank(), "Unique axis"));
      }
      KESTREL_ASSIGN_OR_RETURN(ref::UniqueResult u, ref::unique(x, a, sorted != 0));
      Tensor* outs[] = {&u.y, &u.indices, &u.inverse, &u.counts};
      for (size_t i = 0; i < ctx.num_outputs() && i < 4; ++i) ctx.output(i) = std::move(*outs[i]);
      return Status::ok();
    });
  });
  r.add("ReverseSequence", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(int64_t batch_axis, info.node.attr_int("batch_axis", 1));
    KESTREL_ASSIGN_OR_RETURN(int64_t time_axis, info.node.attr_int("time_axis", 0));
    return make_kernel([batch_axis, time_axis](KernelContext& ctx) -> Status {
      return ref::reverse_sequence(ctx.input(0), ctx.input(1), batch_axis, time_axis, ctx.output(0));
    });
  });
  r.add("Shrink", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(float lambd, info.node.attr_float("lambd", 0.5f));
    KESTREL_ASSIGN_OR_RETURN(float bias, info.node.attr_float("bias", 0.f));
    return make_kernel(
        [lambd, bias](KernelContext& ctx) -> Status { return ref::shrink(lambd, bias, ctx.input(0), ctx.output(0)); });
  });
}

}  // namespace kestrel::runtime
