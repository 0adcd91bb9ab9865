// Kernel bindings for the pooling ops: window attributes read at creation, pads resolved from the
// actual input shape at run time.
#include "kernels/cpu/norm/norm.h"
#include "kernels/cpu/pool/pool.h"
#include "kernels/reference/pool.h"

#include "ir/ops/window_geometry.h"
#include "runtime/kernel.h"
#include "runtime/ops/run_key.h"

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

// The fast 2-D path: f32 NCHW, resolved window -> kernel parameters; false if it does not apply.
bool fast_pool2d(const Tensor& x, const Tensor& y, const ref::PoolParams& p, bool is_max, bool include_pad,
                 kernels::cpu::Pool2dParams* q) {
  if (x.dtype() != core::DType::kF32 || y.dtype() != core::DType::kF32 || x.rank() != 4 || p.kernel.size() != 2)
    return false;
  *q = kernels::cpu::pool2d_params(p, is_max, include_pad);
  // The row buffer spans the padded width: hostile pads or strides stay on the reference kernel
  // (which needs no buffer) instead of allocating gigabytes.
  constexpr int64_t kMaxParam = int64_t{1} << 20, kMaxBuffer = int64_t{1} << 22;
  for (int64_t v : {q->kh, q->kw, q->sh, q->sw, q->dh, q->dw, q->pad_top, q->pad_left, q->pad_bottom, q->pad_right,
                    x.dim(3), y.dim(3)})
    if (v > kMaxParam) return false;
  return y.dim(3) < 1 || kernels::cpu::pool2d_buffer_len(*q, x.dim(3), y.dim(3)) <= kMaxBuffer;
}

// The window resolved for the last input / output shapes (pads depend on them with auto_pad):
// recomputed only when they change, so a static-shape run allocates nothing.
struct PoolCache {
  RunKey key;
  ref::PoolParams p;
  kernels::cpu::Pool2dParams q;
  bool fast = false;

  Status prepare(const ir::WindowAttrs& a, const Tensor& x, const Tensor& y, bool try_fast, bool is_max,
                 bool include_pad) {
    key.begin()
        .add_dims(x.dims())
        .add_dims(y.dims())
        .add(static_cast<int64_t>(x.dtype()))
        .add(static_cast<int64_t>(y.dtype()));
    key.add(try_fast);
    if (key.same()) return Status::ok();
    KESTREL_RETURN_IF_ERROR(resolve(a, x, y, &p));
    fast = try_fast && fast_pool2d(x, y, p, is_max, include_pad, &q);
    key.commit();
    return Status::ok();
  }
};

const kernels::cpu::PoolTable* fast_pool_table(const KernelCreateInfo& info) {
  return info.options.reference_only ? nullptr : kernels::cpu::pool_table(info.options.isa);
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
    const kernels::cpu::PoolTable* t = fast_pool_table(info);
    return make_kernel(
        [a, column_major = order == 1, t, c = PoolCache()](KernelContext& ctx) mutable -> Status {
          Tensor* indices = ctx.num_outputs() > 1 ? &ctx.output(1) : nullptr;
          KESTREL_RETURN_IF_ERROR(c.prepare(a, ctx.input(0), ctx.output(0), t && !indices, true, false));
          if (c.fast) return kernels::cpu::pool2d_f32(*t, c.q, ctx.input(0), ctx.output(0), ctx.pool());
          return ref::max_pool(c.p, ctx.input(0), ctx.output(0), indices, column_major);
        },
        t ? t->name : "reference");
  });
  r.add("AveragePool", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(ir::WindowAttrs a, window_attrs(info));
    KESTREL_ASSIGN_OR_RETURN(int64_t cip, info.node.attr_int("count_include_pad", 0));
    const kernels::cpu::PoolTable* t = fast_pool_table(info);
    return make_kernel(
        [a, cip, t, c = PoolCache()](KernelContext& ctx) mutable -> Status {
          KESTREL_RETURN_IF_ERROR(c.prepare(a, ctx.input(0), ctx.output(0), t != nullptr, false, cip != 0));
          if (c.fast) return kernels::cpu::pool2d_f32(*t, c.q, ctx.input(0), ctx.output(0), ctx.pool());
          return ref::average_pool(c.p, cip != 0, ctx.input(0), ctx.output(0));
        },
        t ? t->name : "reference");
  });
  r.add("LpPool", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(ir::WindowAttrs a, window_attrs(info));
    KESTREL_ASSIGN_OR_RETURN(int64_t lp, ir::read_lp_pool_p(info.node));
    return make_kernel([a, lp, c = PoolCache()](KernelContext& ctx) mutable -> Status {
      KESTREL_RETURN_IF_ERROR(c.prepare(a, ctx.input(0), ctx.output(0), false, false, false));
      return ref::lp_pool(c.p, lp, ctx.input(0), ctx.output(0));
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
      const kernels::cpu::NormTable* t = info.options.reference_only || kind == ref::GlobalPoolKind::kLp
                                             ? nullptr
                                             : kernels::cpu::norm_table(info.options.isa);
      if (t) {
        return make_kernel(
            [kind, lp, t](KernelContext& ctx) -> Status {
              const Tensor& x = ctx.input(0);
              Tensor& y = ctx.output(0);
              // Each [n, c] plane is one contiguous row.
              if (x.dtype() == core::DType::kF32 && y.dtype() == core::DType::kF32 && x.rank() >= 2 &&
                  y.rank() == x.rank() && y.dim(0) == x.dim(0) && y.dim(1) == x.dim(1) &&
                  y.num_elements() == x.dim(0) * x.dim(1) && y.num_elements() > 0 &&
                  x.num_elements() > y.num_elements() - 1 && x.num_elements() % y.num_elements() == 0 &&
                  x.num_elements() > 0) {
                auto op = kind == ref::GlobalPoolKind::kAverage ? kernels::cpu::RowReduce::kMean
                                                                : kernels::cpu::RowReduce::kMax;
                return kernels::cpu::reduce_rows_f32(*t, op, x, x.num_elements() / y.num_elements(), y, ctx.pool());
              }
              return ref::global_pool(kind, lp, x, y);
            },
            t->name);
      }
      return make_kernel(
          [kind, lp](KernelContext& ctx) { return ref::global_pool(kind, lp, ctx.input(0), ctx.output(0)); });
    });
  }
}

}  // namespace kestrel::runtime
