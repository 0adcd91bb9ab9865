// Kernel bindings for Gemm and MatMul: f32 nodes get the sgemm kernels (constant B pre-packed at
// creation) unless reference kernels are asked for; other dtypes run the reference loops.
#include "kernels/reference/matmul.h"

#include "kernels/cpu/matmul/matmul.h"
#include "runtime/kernel.h"
#include "runtime/ops/fast_fused.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;
namespace cpu = kernels::cpu;

namespace {

// True when every present input is known to be f32 (the fast kernels' only dtype).
bool all_f32(const KernelCreateInfo& info) {
  for (const ir::ValueType* t : info.input_types)
    if (t && t->dtype != core::DType::kF32) return false;
  return !info.input_types.empty() && info.input_types[0] != nullptr;
}

const Tensor* constant(const KernelCreateInfo& info, size_t i) {
  return i < info.constant_inputs.size() ? info.constant_inputs[i] : nullptr;
}

Result<cpu::GemmOpParams> read_gemm_params(const ir::Node& n) {
  cpu::GemmOpParams p;
  KESTREL_ASSIGN_OR_RETURN(int64_t ta, n.attr_int("transA", 0));
  KESTREL_ASSIGN_OR_RETURN(int64_t tb, n.attr_int("transB", 0));
  KESTREL_ASSIGN_OR_RETURN(p.alpha, n.attr_float("alpha", 1.0f));
  KESTREL_ASSIGN_OR_RETURN(p.beta, n.attr_float("beta", 1.0f));
  p.trans_a = ta != 0;
  p.trans_b = tb != 0;
  return p;
}

}  // namespace

Result<std::unique_ptr<OpKernel>> make_fast_fused_gemm(const KernelCreateInfo& info, cpu::FusedActivation act) {
  if (info.options.reference_only || !all_f32(info)) return std::unique_ptr<OpKernel>();
  KESTREL_ASSIGN_OR_RETURN(cpu::GemmOpParams p, read_gemm_params(info.node));
  p.activation = act;
  KESTREL_ASSIGN_OR_RETURN(cpu::FastGemm g, cpu::FastGemm::create(p, constant(info, 1), info.options.isa));
  const char* name = g.name();
  return make_kernel(
      [g = std::move(g)](KernelContext& ctx) {
        return g.run(ctx.input(0), ctx.input(1), ctx.input_or_null(2), nullptr, ctx.output(0), ctx.pool());
      },
      name);
}

Result<std::unique_ptr<OpKernel>> make_fast_fused_matmul(const KernelCreateInfo& info, cpu::FusedActivation act) {
  if (info.options.reference_only || !all_f32(info)) return std::unique_ptr<OpKernel>();
  KESTREL_ASSIGN_OR_RETURN(cpu::FastMatMul mm, cpu::FastMatMul::create(constant(info, 1), act, info.options.isa));
  const char* name = mm.name();
  return make_kernel(
      [mm = std::move(mm)](KernelContext& ctx) {
        return mm.run(ctx.input(0), ctx.input(1), ctx.input_or_null(2), ctx.input_or_null(3), ctx.output(0),
                      ctx.pool());
      },
      name);
}

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
    if (!info.options.reference_only && all_f32(info)) {
      KESTREL_ASSIGN_OR_RETURN(cpu::GemmOpParams fp, read_gemm_params(n));
      KESTREL_ASSIGN_OR_RETURN(cpu::FastGemm g, cpu::FastGemm::create(fp, constant(info, 1), info.options.isa));
      const char* name = g.name();
      return make_kernel(
          [g = std::move(g)](KernelContext& ctx) {
            return g.run(ctx.input(0), ctx.input(1), ctx.input_or_null(2), nullptr, ctx.output(0), ctx.pool());
          },
          name);
    }
    return make_kernel([p](KernelContext& ctx) {
      return ref::gemm(p, ctx.input(0), ctx.input(1), ctx.input_or_null(2), ctx.output(0));
    });
  });
  r.add("MatMul", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    if (!info.options.reference_only && all_f32(info)) {
      KESTREL_ASSIGN_OR_RETURN(cpu::FastMatMul mm, cpu::FastMatMul::create(constant(info, 1), {}, info.options.isa));
      const char* name = mm.name();
      return make_kernel(
          [mm = std::move(mm)](KernelContext& ctx) {
            return mm.run(ctx.input(0), ctx.input(1), nullptr, nullptr, ctx.output(0), ctx.pool());
          },
          name);
    }
    return make_kernel([](KernelContext& ctx) { return ref::matmul(ctx.input(0), ctx.input(1), ctx.output(0)); });
  });
}

}  // namespace kestrel::runtime
