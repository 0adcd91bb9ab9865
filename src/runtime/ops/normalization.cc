// Kernel bindings for the normalization ops.
#include "kernels/cpu/eltwise/eltwise.h"
#include "kernels/cpu/norm/norm.h"
#include "kernels/reference/normalization.h"

#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

namespace {

Tensor* optional_output(KernelContext& ctx, size_t i) {
  return i < ctx.num_outputs() ? &ctx.output(i) : nullptr;
}

}  // namespace

void register_normalization_kernels(KernelRegistry& r) {
  r.add("BatchNormalization", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(int64_t training, info.node.attr_int("training_mode", 0));
    if (training != 0 && training != 1) return info.fail("training_mode must be 0 or 1, is ", training);
    KESTREL_ASSIGN_OR_RETURN(float eps, info.node.attr_float("epsilon", 1e-5f));
    if (training == 1) {
      KESTREL_ASSIGN_OR_RETURN(float momentum, info.node.attr_float("momentum", 0.9f));
      return make_kernel([eps, momentum](KernelContext& ctx) -> Status {
        return ref::batch_norm_training(ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4), eps,
                                        momentum, ctx.output(0), optional_output(ctx, 1), optional_output(ctx, 2));
      });
    }
    const kernels::cpu::EltwiseTable* t =
        info.options.reference_only ? nullptr : kernels::cpu::eltwise_table(info.options.isa);
    return make_kernel([eps, t](KernelContext& ctx) -> Status {
      bool fast = t != nullptr && ctx.input(0).rank() >= 2;
      for (size_t i = 0; i < 5; ++i) fast = fast && ctx.input(i).dtype() == core::DType::kF32;
      if (fast && ctx.output(0).dtype() == core::DType::kF32) {
        KESTREL_RETURN_IF_ERROR(kernels::cpu::batch_norm_f32(*t, ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3),
                                                             ctx.input(4), eps, ctx.output(0), ctx.pool()));
      } else {
        KESTREL_RETURN_IF_ERROR(
            ref::batch_norm(ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4), eps, ctx.output(0)));
      }
      // Inference: running statistics pass through unchanged.
      for (size_t o = 1; o < ctx.num_outputs(); ++o)
        KESTREL_RETURN_IF_ERROR(core::copy_tensor_data(ctx.input(o + 2), ctx.output(o)));
      return Status::ok();
    }, t ? t->name : "reference");
  });
  r.add("InstanceNormalization", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(float eps, info.node.attr_float("epsilon", 1e-5f));
    return make_kernel([eps](KernelContext& ctx) {
      return ref::instance_norm(ctx.input(0), ctx.input(1), ctx.input(2), eps, ctx.output(0));
    });
  });
  r.add("LayerNormalization", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(float eps, info.node.attr_float("epsilon", 1e-5f));
    KESTREL_ASSIGN_OR_RETURN(int64_t axis, info.node.attr_int("axis", -1));
    const kernels::cpu::NormTable* t =
        info.options.reference_only ? nullptr : kernels::cpu::norm_table(info.options.isa);
    return make_kernel([eps, axis, t](KernelContext& ctx) -> Status {
      const int64_t r = ctx.input(0).rank();
      if (axis < -r || axis > r)
        return core::invalid_argument(core::str_cat("axis ", axis, " is out of range for rank ", r));
      if (t && kernels::cpu::layer_norm_f32(*t, ctx.input(0), ctx.input(1), ctx.input_or_null(2), axis < 0 ? axis + r : axis,
                                            eps, ctx.output(0), optional_output(ctx, 1), optional_output(ctx, 2),
                                            ctx.pool()))
        return Status::ok();
      return ref::layer_norm(ctx.input(0), ctx.input(1), ctx.input_or_null(2), axis < 0 ? axis + r : axis, eps,
                             ctx.output(0), optional_output(ctx, 1), optional_output(ctx, 2));
    }, t ? t->name : "reference");
  });
  r.add("GroupNormalization", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(float eps, info.node.attr_float("epsilon", 1e-5f));
    KESTREL_ASSIGN_OR_RETURN(int64_t groups, info.node.attr_int("num_groups"));
    return make_kernel([eps, groups](KernelContext& ctx) {
      return ref::group_norm(ctx.input(0), ctx.input(1), ctx.input(2), groups, eps, ctx.output(0));
    });
  });
  r.add("LRN", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(int64_t size, info.node.attr_int("size"));
    KESTREL_ASSIGN_OR_RETURN(float alpha, info.node.attr_float("alpha", 1e-4f));
    KESTREL_ASSIGN_OR_RETURN(float beta, info.node.attr_float("beta", 0.75f));
    KESTREL_ASSIGN_OR_RETURN(float bias, info.node.attr_float("bias", 1.0f));
    return make_kernel(
        [=](KernelContext& ctx) { return ref::lrn(ctx.input(0), size, alpha, beta, bias, ctx.output(0)); });
  });
  r.add("LpNormalization", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(int64_t axis, info.node.attr_int("axis", -1));
    KESTREL_ASSIGN_OR_RETURN(int64_t p, info.node.attr_int("p", 2));
    return make_kernel([axis, p](KernelContext& ctx) -> Status {
      KESTREL_ASSIGN_OR_RETURN(int64_t a, core::normalize_axis(axis, ctx.input(0).rank()));
      return ref::lp_norm(ctx.input(0), a, p, ctx.output(0));
    });
  });
  r.add("MeanVarianceNormalization", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, info.node.attr_ints("axes", std::vector<int64_t>{0, 2, 3}));
    return make_kernel([axes](KernelContext& ctx) -> Status {
      std::vector<int64_t> norm;
      for (int64_t a : axes) {
        KESTREL_ASSIGN_OR_RETURN(int64_t n, core::normalize_axis(a, ctx.input(0).rank()));
        norm.push_back(n);
      }
      return ref::mean_variance_norm(ctx.input(0), norm, ctx.output(0));
    });
  });
}

}  // namespace kestrel::runtime
