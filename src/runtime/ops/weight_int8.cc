// Kernel binding for kestrel.MatMulWeightInt8: with a constant int8 W and scale, the int8-weight
// SGEMM (W stays int8 in memory; each panel is widened into the packing scratch), the epilogue in
// registers; else (reference_only, W computed at run time) the reference kernel.
#include "kernels/reference/weight_int8.h"

#include <memory>
#include <optional>
#include <vector>

#include "core/str_util.h"
#include "ir/op_schema.h"
#include "ir/ops/fused_activation.h"
#include "kernels/cpu/gemm/sgemm.h"
#include "runtime/kernel.h"
#include "runtime/ops/fast_fused.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;
namespace cpu = kernels::cpu;

namespace {

const char* impl_name(core::Isa isa) {
  switch (isa) {
    case core::Isa::kAvx512:
      return "sgemm_int8w.avx512";
    case core::Isa::kAvx2:
      return "sgemm_int8w.avx2";
    default:
      return "sgemm_int8w.scalar";
  }
}

// The fast kernel's state: W as int8 [K, N] (the constant itself, or a transposed copy for
// transB = 1, still int8), the scale, the epilogue.
struct Int8WeightGemm {
  core::Tensor w;                             // the constant (kept alive; used when !transposed)
  std::shared_ptr<std::vector<int8_t>> w_kn;  // [K, N] copy when transB = 1
  core::Tensor scale;
  int64_t k = 0, n = 0;
  cpu::GemmActivation act = cpu::GemmActivation::kNone;
  float act_alpha = 0.f, act_beta = 0.f;
  bool ref_activation_after = false;  // GeluTanh
  ref::ActivationParams ref_act;
  core::Isa isa = core::Isa::kScalar;

  const int8_t* weights() const { return w_kn ? w_kn->data() : w.data<int8_t>(); }

  Status run(KernelContext& ctx) const {
    const Tensor& a = ctx.input(0);
    const Tensor* bias = ctx.input_or_null(3);
    const Tensor* z = ctx.input_or_null(4);
    Tensor& y = ctx.output(0);
    if (a.dtype() != core::DType::kF32 || y.dtype() != core::DType::kF32 || a.rank() < 1 || a.dim(-1) != k)
      return core::invalid_argument(
          core::str_cat("MatMulWeightInt8: A ", a.type_string(), " must be f32 [..., ", k, "]"));
    const int64_t rows = k > 0 ? a.num_elements() / k : (n > 0 ? y.num_elements() / n : 0);
    if (y.num_elements() != rows * n)
      return core::invalid_argument(core::str_cat("MatMulWeightInt8: output ", y.type_string(), " has the wrong size"));
    cpu::GemmEpilogue ep;
    if (bias) {
      if (bias->dtype() != core::DType::kF32 || bias->num_elements() != n)
        return core::invalid_argument(
            core::str_cat("MatMulWeightInt8: bias ", bias->type_string(), " must be f32 [", n, "]"));
      ep.bias_kind = cpu::GemmBias::kPerColumn;
      ep.bias = bias->data<float>();
    }
    if (z) {
      if (z->dtype() != core::DType::kF32 || z->num_elements() != y.num_elements())
        return core::invalid_argument(
            core::str_cat("MatMulWeightInt8: residual ", z->type_string(), " must be ", y.type_string()));
      ep.residual = z->data<float>();
      ep.ldr = n;
    }
    ep.activation = act;
    ep.act_alpha = act_alpha;
    ep.act_beta = act_beta;
    KESTREL_RETURN_IF_ERROR(cpu::sgemm_b_int8(rows, n, k, 1.f, cpu::SgemmA(a.data<float>(), k),
                                              cpu::SgemmBInt8{weights(), n, scale.data<float>()}, 0.f, y.data<float>(),
                                              n, ep, cpu::SgemmContext{ctx.pool(), isa}));
    if (ref_activation_after) return ref::apply_epilogue(ref_act, nullptr, nullptr, y);
    return Status::ok();
  }
};

Result<std::unique_ptr<OpKernel>> create(const KernelCreateInfo& info) {
  KESTREL_ASSIGN_OR_RETURN(ir::FusedActivationSpec spec, ir::read_fused_activation(info.node));
  KESTREL_ASSIGN_OR_RETURN(int64_t tb, info.node.attr_int("transB", 0));
  if (tb != 0 && tb != 1) return info.fail("transB must be 0 or 1, is ", tb);
  const bool trans_b = tb != 0;
  const ref::ActivationParams act = to_ref_activation(spec);
  const Tensor* w = info.constant_inputs.size() > 1 ? info.constant_inputs[1] : nullptr;
  const Tensor* s = info.constant_inputs.size() > 2 ? info.constant_inputs[2] : nullptr;
  const bool a_f32 =
      !info.input_types.empty() && info.input_types[0] && info.input_types[0]->dtype == core::DType::kF32;
  if (info.options.reference_only || !w || !s || !a_f32 || w->dtype() != core::DType::kI8 || w->rank() != 2 ||
      s->dtype() != core::DType::kF32) {
    return make_kernel([act, trans_b](KernelContext& ctx) {
      return ref::matmul_weight_int8(ctx.input(0), ctx.input(1), ctx.input(2), trans_b, ctx.input_or_null(3),
                                     ctx.input_or_null(4), act, ctx.output(0));
    });
  }
  Int8WeightGemm g;
  g.k = trans_b ? w->dim(1) : w->dim(0);
  g.n = trans_b ? w->dim(0) : w->dim(1);
  if (s->num_elements() != g.n) return info.fail("scale has ", s->num_elements(), " elements, W has N = ", g.n);
  g.w = *w;
  g.scale = *s;
  if (trans_b) {
    g.w_kn = std::make_shared<std::vector<int8_t>>(static_cast<size_t>(g.k * g.n));
    const int8_t* src = w->data<int8_t>();
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t p = 0; p < g.k; ++p) (*g.w_kn)[static_cast<size_t>(p * g.n + j)] = src[j * g.k + p];
    g.w = Tensor();  // the transposed copy replaces it
  }
  if (std::optional<cpu::FusedActivation> fast = to_fast_activation(spec)) {
    g.act = fast->kind;
  } else {  // GeluTanh: the reference pass after the GEMM
    g.act = cpu::GemmActivation::kNone;
    g.ref_activation_after = true;
  }
  g.act_alpha = spec.alpha;
  g.act_beta = spec.beta;
  g.ref_act = act;
  g.isa = info.options.isa;
  const char* name = impl_name(g.isa);
  return make_kernel([g = std::move(g)](KernelContext& ctx) { return g.run(ctx); }, name);
}

}  // namespace

void register_weight_int8_kernels(KernelRegistry& r) {
  r.add(ir::kKestrelDomain, "MatMulWeightInt8", create);
}

}  // namespace kestrel::runtime
