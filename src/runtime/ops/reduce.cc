// Kernel bindings for the reductions: node attributes and axis / k inputs -> reference kernel parameters.
#include <utility>
#include <vector>

#include "kernels/cpu/norm/norm.h"
#include "kernels/reference/reduce.h"
#include "runtime/kernel.h"
#include "runtime/ops/run_key.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

void register_reduce_kernels(KernelRegistry& r) {
  const std::pair<const char*, ref::ReduceOp> reductions[] = {
      {"ReduceSum", ref::ReduceOp::kSum},       {"ReduceMean", ref::ReduceOp::kMean},
      {"ReduceMax", ref::ReduceOp::kMax},       {"ReduceMin", ref::ReduceOp::kMin},
      {"ReduceProd", ref::ReduceOp::kProd},     {"ReduceL1", ref::ReduceOp::kL1},
      {"ReduceL2", ref::ReduceOp::kL2},         {"ReduceLogSum", ref::ReduceOp::kLogSum},
      {"ReduceLogSumExp", ref::ReduceOp::kLogSumExp}, {"ReduceSumSquare", ref::ReduceOp::kSumSquare},
  };
  for (const auto& [name, op] : reductions) {
    r.add(name, [op = op](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
      // keepdims only shapes the output, which the executor allocates from inference.
      KESTREL_ASSIGN_OR_RETURN(int64_t noop, info.node.attr_int("noop_with_empty_axes", 0));
      // Mean, sum and max over trailing axes of f32 run as contiguous row reductions.
      namespace cpu = kernels::cpu;
      const cpu::NormTable* t = nullptr;
      cpu::RowReduce rop = cpu::RowReduce::kSum;
      if (!info.options.reference_only && (op == ref::ReduceOp::kMean || op == ref::ReduceOp::kSum || op == ref::ReduceOp::kMax)) {
        t = cpu::norm_table(info.options.isa);
        rop = op == ref::ReduceOp::kMean ? cpu::RowReduce::kMean
              : op == ref::ReduceOp::kSum ? cpu::RowReduce::kSum
                                          : cpu::RowReduce::kMax;
      }
      struct Cache {
        RunKey key;
        std::vector<int64_t> axes;
        std::vector<bool> mask;
        int64_t inner = -1;                         // > 0: the fast row reduction applies
        int64_t outer = 0, red = 0, mid_inner = 0;  // red > 0: the fast middle-axis reduction applies
      };
      return make_kernel(
          [op, noop, t, rop, c = Cache()](KernelContext& ctx) mutable -> Status {
            const Tensor& x = ctx.input(0);
            const Tensor& y = ctx.output(0);
            // Axes and mask depend only on x's shape and the axes input: derived again when they change.
            c.key.begin().add_dims(x.dims()).add(static_cast<int64_t>(x.dtype())).add(static_cast<int64_t>(y.dtype()));
            c.key.add(y.num_elements()).add_values(ctx.input_or_null(1));
            if (!c.key.same()) {
              c.axes.clear();
              if (const Tensor* a = ctx.input_or_null(1)) c.axes = core::tensor_to_int64s(*a);
              if (!c.axes.empty() || !noop) {
                KESTREL_ASSIGN_OR_RETURN(c.mask, ref::reduce_mask(c.axes, x.rank()));
              }
              c.inner = -1;
              c.red = 0;
              if (t && x.dtype() == core::DType::kF32 && y.dtype() == core::DType::kF32 && x.num_elements() > 0 &&
                  !(c.axes.empty() && noop)) {
                const int64_t inner = cpu::trailing_reduce_inner(x.dims(), c.mask);
                int64_t outer, red, mid;
                if (inner > 0 && y.num_elements() * inner == x.num_elements()) {
                  c.inner = inner;
                } else if (cpu::reduce_block(x.dims(), c.mask, &outer, &red, &mid) && y.num_elements() == outer * mid) {
                  c.outer = outer;
                  c.red = red;
                  c.mid_inner = mid;
                }
              }
              c.key.commit();
            }
            if (c.axes.empty() && noop) return core::copy_tensor_data(x, ctx.output(0));
            if (c.inner > 0) return cpu::reduce_rows_f32(*t, rop, x, c.inner, ctx.output(0), ctx.pool());
            if (c.red > 0)
              return cpu::reduce_middle_f32(rop, x, c.outer, c.red, c.mid_inner, ctx.output(0), ctx.pool());
            return ref::reduce(op, x, c.mask, ctx.output(0));
          },
          t ? t->name : "reference");
    });
  }
  for (const char* name : {"ArgMax", "ArgMin"}) {
    const bool is_max = std::string(name) == "ArgMax";
    r.add(name, [is_max](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
      KESTREL_ASSIGN_OR_RETURN(int64_t axis, info.node.attr_int("axis", 0));
      KESTREL_ASSIGN_OR_RETURN(int64_t last, info.node.attr_int("select_last_index", 0));
      return make_kernel([is_max, axis, last](KernelContext& ctx) -> Status {
        const Tensor& x = ctx.input(0);
        KESTREL_ASSIGN_OR_RETURN(int64_t a, core::normalize_axis(axis, x.rank()));
        return ref::arg_reduce(is_max, x, a, last != 0, ctx.output(0));
      });
    });
  }
  r.add("TopK", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(int64_t axis, info.node.attr_int("axis", -1));
    KESTREL_ASSIGN_OR_RETURN(int64_t largest, info.node.attr_int("largest", 1));
    KESTREL_ASSIGN_OR_RETURN(int64_t sorted, info.node.attr_int("sorted", 1));
    return make_kernel([axis, largest, sorted](KernelContext& ctx) -> Status {
      const Tensor& x = ctx.input(0);
      ref::TopKParams p;
      KESTREL_ASSIGN_OR_RETURN(p.axis, core::normalize_axis(axis, x.rank()));
      KESTREL_ASSIGN_OR_RETURN(p.k, ctx.int_scalar_input(1, "K"));
      p.largest = largest != 0;
      p.sorted = sorted != 0;
      return ref::top_k(p, x, ctx.output(0), ctx.output(1));
    });
  });
  r.add("CumSum", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(int64_t exclusive, info.node.attr_int("exclusive", 0));
    KESTREL_ASSIGN_OR_RETURN(int64_t reverse, info.node.attr_int("reverse", 0));
    return make_kernel([exclusive, reverse](KernelContext& ctx) -> Status {
      const Tensor& x = ctx.input(0);
      ref::CumSumParams p;
      KESTREL_ASSIGN_OR_RETURN(int64_t axis, ctx.int_scalar_input(1, "axis"));
      KESTREL_ASSIGN_OR_RETURN(p.axis, core::normalize_axis(axis, x.rank()));
      p.exclusive = exclusive != 0;
      p.reverse = reverse != 0;
      return ref::cum_sum(p, x, ctx.output(0));
    });
  });
}

}  // namespace kestrel::runtime
