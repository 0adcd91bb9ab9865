// Kernel bindings for the indexing ops: node attributes -> reference kernel parameters. NonZero
// and Compress allocate their outputs (their shapes depend on the input data).
#include "kernels/reference/gather_scatter.h"

#include <algorithm>
#include <optional>
#include <string>

#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

namespace {

Result<ref::ScatterReduction> reduction_attr(const KernelCreateInfo& info) {
  KESTREL_ASSIGN_OR_RETURN(std::string s, info.node.attr_string("reduction", std::string("none")));
  auto r = ref::parse_scatter_reduction(s);
  if (!r.is_ok()) return info.fail(r.status().message());
  return r;
}

}  // namespace

void register_gather_scatter_kernels(KernelRegistry& r) {
  r.add("Gather", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(int64_t axis, info.node.attr_int("axis", 0));
    return make_kernel(
        [axis](KernelContext& ctx) { return ref::gather(ctx.input(0), ctx.input(1), axis, ctx.output(0)); });
  });
  r.add("GatherElements", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(int64_t axis, info.node.attr_int("axis", 0));
    return make_kernel(
        [axis](KernelContext& ctx) { return ref::gather_elements(ctx.input(0), ctx.input(1), axis, ctx.output(0)); });
  });
  r.add("GatherND", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(int64_t b, info.node.attr_int("batch_dims", 0));
    return make_kernel(
        [b](KernelContext& ctx) { return ref::gather_nd(ctx.input(0), ctx.input(1), b, ctx.output(0)); });
  });
  // Scatter is ScatterElements under its pre-opset-11 name (the importer rewrites it anyway).
  for (const char* op : {"ScatterElements"}) {
    r.add(op, [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
      KESTREL_ASSIGN_OR_RETURN(int64_t axis, info.node.attr_int("axis", 0));
      KESTREL_ASSIGN_OR_RETURN(auto red, reduction_attr(info));
      return make_kernel([axis, red](KernelContext& ctx) {
        return ref::scatter_elements(ctx.input(0), ctx.input(1), ctx.input(2), axis, red, ctx.output(0));
      });
    });
  }
  r.add("ScatterND", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(auto red, reduction_attr(info));
    return make_kernel([red](KernelContext& ctx) {
      return ref::scatter_nd(ctx.input(0), ctx.input(1), ctx.input(2), red, ctx.output(0));
    });
  });
  r.add("OneHot", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(int64_t axis, info.node.attr_int("axis", -1));
    return make_kernel([axis](KernelContext& ctx) -> Status {
      const Tensor& depth = ctx.input(1);
      if (depth.num_elements() != 1 || depth.dtype() == core::DType::kString)
        return core::invalid_argument("OneHot: depth must be a numeric scalar");
      return ref::one_hot(ctx.input(0), depth.element_as_int64(0), ctx.input(2), axis, ctx.output(0));
    });
  });
  r.add("NonZero", [](const KernelCreateInfo&) -> Result<std::unique_ptr<OpKernel>> {
    return make_kernel([](KernelContext& ctx) -> Status {
      const Tensor& x = ctx.input(0);
      KESTREL_ASSIGN_OR_RETURN(int64_t n, ref::count_nonzero(x));
      KESTREL_RETURN_IF_ERROR(ctx.allocate_output(0, {std::max<int64_t>(x.rank(), 1), n}));
      return ref::nonzero(x, ctx.output(0));
    });
  });
  r.add("Compress", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    std::optional<int64_t> axis;
    if (info.node.has_attr("axis")) {
      KESTREL_ASSIGN_OR_RETURN(int64_t a, info.node.attr_int("axis"));
      axis = a;
    }
    return make_kernel([axis](KernelContext& ctx) -> Status {
      KESTREL_ASSIGN_OR_RETURN(core::Dims dims, ref::compress_dims(ctx.input(0), ctx.input(1), axis));
      KESTREL_RETURN_IF_ERROR(ctx.allocate_output(0, dims));
      return ref::compress(ctx.input(0), ctx.input(1), axis, ctx.output(0));
    });
  });
}

}  // namespace kestrel::runtime
