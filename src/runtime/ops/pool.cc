// Kernel bindings for the pooling ops: window attributes read at creation, pads resolved from the
// actual input shape at run time.
#include "kernels/reference/pool.h"

#include "ir/ops/window_geometry.h"
#include "kernels/cpu/pool/pool.h"
#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;
using core::str_cat;

namespace {

Status resolve(const ir::WindowAttrs& a, const Tensor& x, const Tensor& y, ref::PoolParams* p) {
  const size_t spatial = a.spatial();
  if (x.rank() != static_cast<int64_t>(spatial) + 2)
    return core::invalid_argument(str_cat("input ", x.type_string(), " must have rank ", spatial + 2));
  p->kernel = a.kernel;
  p->strides = a.strides;
  p->dilations = a.dilations;
  p->pads_begin.assign(spatial, 0);
  p->pads_end.assign(spatial, 0);
  for (size_t i = 0; i < spatial; ++i) {
    KESTREL_ASSIGN_OR_RETURN(ir::AxisWindow w, ir::forward_window(a, i, x.dim(static_cast<int64_t>(i) + 2)));
    if (y.rank() != x.rank() || y.dim(static_cast<int64_t>(i) + 2) != w.out)
      return core::internal_error(
          str_cat("output ", y.type_string(), " has the wrong size on spatial axis ", i, " (expected ", w.out, ")"));
    p->pads_begin[i] = w.pad_begin;
    p->pads_end[i] = w.pad_end;
  }
  return Status::ok();
}

// The fast pooling kernels take f32 inputs only.
bool f32_input(const KernelCreateInfo& info) {
  return !info.options.reference_only && !info.input_types.empty() && info.input_types[0] &&
         info.input_types[0]->dtype == core::DType::kF32;
}

Result<ir::WindowAttrs> window_attrs(const KernelCreateInfo& info) {
  KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, info.node.attr_ints("kernel_shape"));
  return ir::read_window_attrs(info.node, std::move(kernel), true);
}

}  // namespace

void register_pool_kernels(KernelRegistry& r) {
  r.add("MaxPool", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(ir::WindowAttrs a, window_attrs(info));
    KESTREL_ASSIGN_OR_RETURN(int64_t order, info.node.attr_int("storage_order", 0));
    if (order != 0 && order != 1) return info.fail("storage_order must be 0 or 1, got ", order);
    if (f32_input(info) && a.spatial() == 2 && info.node.outputs().size() == 1) {
      return make_kernel(
          [a](KernelContext& ctx) -> Status {
            ref::PoolParams p;
            KESTREL_RETURN_IF_ERROR(resolve(a, ctx.input(0), ctx.output(0), &p));
            return kernels::cpu::max_pool_2d(p, ctx.input(0), ctx.output(0), ctx.pool());
          },
          "pool.cpu");
    }
    return make_kernel([a, column_major = order == 1](KernelContext& ctx) -> Status {
      ref::PoolParams p;
      KESTREL_RETURN_IF_ERROR(resolve(a, ctx.input(0), ctx.output(0), &p));
      Tensor* indices = ctx.num_outputs() > 1 ? &ctx.output(1) : nullptr;
      return ref::max_pool(p, ctx.input(0), ctx.output(0), indices, column_major);
    });
  });
  r.add("AveragePool", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(ir::WindowAttrs a, window_attrs(info));
    KESTREL_ASSIGN_OR_RETURN(int64_t cip, info.node.attr_int("count_include_pad", 0));
    return make_kernel([a, cip](KernelContext& ctx) -> Status {
      ref::PoolParams p;
      KESTREL_RETURN_IF_ERROR(resolve(a, ctx.input(0), ctx.output(0), &p));
      return ref::average_pool(p, cip != 0, ctx.input(0), ctx.output(0));
    });
  });
  r.add("LpPool", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(ir::WindowAttrs a, window_attrs(info));
    KESTREL_ASSIGN_OR_RETURN(int64_t lp, ir::read_lp_pool_p(info.node));
    return make_kernel([a, lp](KernelContext& ctx) -> Status {
      ref::PoolParams p;
      KESTREL_RETURN_IF_ERROR(resolve(a, ctx.input(0), ctx.output(0), &p));
      return ref::lp_pool(p, lp, ctx.input(0), ctx.output(0));
    });
  });
  const std::pair<const char*, ref::GlobalPoolKind> globals[] = {{"GlobalAveragePool", ref::GlobalPoolKind::kAverage},
                                                                 {"GlobalMaxPool", ref::GlobalPoolKind::kMax},
                                                                 {"GlobalLpPool", ref::GlobalPoolKind::kLp}};
  for (const auto& [name, kind] : globals) {
    r.add(name, [kind = kind](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
      int64_t lp = 2;
      if (kind == ref::GlobalPoolKind::kLp) {
        KESTREL_ASSIGN_OR_RETURN(lp, ir::read_lp_pool_p(info.node));
      }
      if (kind == ref::GlobalPoolKind::kAverage && f32_input(info))
        return make_kernel(
            [](KernelContext& ctx) {
              return kernels::cpu::global_average_pool(ctx.input(0), ctx.output(0), ctx.pool());
            },
            "pool.cpu");
      return make_kernel(
          [kind, lp](KernelContext& ctx) { return ref::global_pool(kind, lp, ctx.input(0), ctx.output(0)); });
    });
  }
}

}  // namespace kestrel::runtime
