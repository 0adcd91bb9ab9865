// Kernel bindings for the shape ops: node attributes -> reference kernel parameters.
#include "kernels/reference/shape.h"

#include <limits>

#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

namespace {

Result<std::unique_ptr<OpKernel>> make_copy_kernel(const KernelCreateInfo&) {
  return make_kernel([](KernelContext& ctx) { return ref::copy_reshaped(ctx.input(0), ctx.output(0)); });
}

}  // namespace

void register_shape_kernels(KernelRegistry& r) {
  // The output shape comes from inference (which has read the shape/axes inputs); the data is the same.
  for (const char* op : {"Reshape", "Squeeze", "Unsqueeze", "Flatten"}) r.add(op, make_copy_kernel);
  r.add("Shape", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(int64_t start, info.node.attr_int("start", 0));
    KESTREL_ASSIGN_OR_RETURN(int64_t end, info.node.attr_int("end", std::numeric_limits<int64_t>::max()));
    return make_kernel(
        [start, end](KernelContext& ctx) { return ref::shape_of(ctx.input(0).dims(), start, end, ctx.output(0)); });
  });
  r.add("Size", [](const KernelCreateInfo&) -> Result<std::unique_ptr<OpKernel>> {
    return make_kernel([](KernelContext& ctx) { return ref::size_of(ctx.input(0).dims(), ctx.output(0)); });
  });
  r.add("Expand", [](const KernelCreateInfo&) -> Result<std::unique_ptr<OpKernel>> {
    return make_kernel([](KernelContext& ctx) { return ref::expand(ctx.input(0), ctx.output(0)); });
  });
  r.add("ConstantOfShape", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    Tensor value = Tensor::scalar<float>(0.f);
    if (const ir::Attribute* a = info.node.attr("value")) {
      if (!a->is<Tensor>()) return info.fail("attribute 'value' must be a tensor");
      value = a->get<Tensor>();
      if (value.num_elements() != 1) return info.fail("attribute 'value' must have exactly one element");
    }
    return make_kernel([value](KernelContext& ctx) { return ref::constant_of_shape(value, ctx.output(0)); });
  });
  r.add("Range", [](const KernelCreateInfo&) -> Result<std::unique_ptr<OpKernel>> {
    return make_kernel(
        [](KernelContext& ctx) { return ref::range(ctx.input(0), ctx.input(1), ctx.input(2), ctx.output(0)); });
  });
  r.add("EyeLike", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(int64_t k, info.node.attr_int("k", 0));
    return make_kernel([k](KernelContext& ctx) -> Status {
      if (ctx.input(0).dims() != ctx.output(0).dims())
        return core::internal_error("EyeLike: output shape differs from the input's");
      return ref::eye_like(k, ctx.output(0));
    });
  });
}

}  // namespace kestrel::runtime
