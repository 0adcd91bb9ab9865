// Kernel bindings for Kestrel's fused ops (kestrel.FusedConv, FusedGemm, FusedMatMul):
// the plain op's kernel (whichever implementation its own binding picks) followed by the reference
// epilogue. A fast kernel with the epilogue in registers replaces a binding here without changing
// the attribute contract (docs/fused_ops.md). kestrel.FusedPointwiseDepthwise is registered here too
// (its activations mapped as FusedConv's); its kernel, like the fast and pooled FusedConv's, is in conv.cc.
#include "kernels/reference/fused.h"

#include <array>
#include <optional>

#include "ir/op_schema.h"
#include "ir/ops/fused_activation.h"
#include "kernels/reference/elementwise.h"
#include "runtime/kernel.h"
#include "runtime/ops/fast_fused.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

namespace {

// Creates the kernel of the unfused op (domain "", `op`) for this node, seeing only its first
// `num_inputs` inputs; the node's extra attributes are ignored by that binding.
Result<std::unique_ptr<OpKernel>> create_inner(const KernelCreateInfo& info, const char* op, size_t num_inputs) {
  const KernelFactory* f = KernelRegistry::global().find("", op);
  if (!f) return info.fail("no ", op, " kernel");
  std::vector<const ir::ValueType*> types(info.input_types.begin(),
                                          info.input_types.begin() + std::min(num_inputs, info.input_types.size()));
  std::vector<const Tensor*> consts(info.constant_inputs.begin(),
                                    info.constant_inputs.begin() + std::min(num_inputs, info.constant_inputs.size()));
  KernelCreateInfo inner{info.node, std::move(types), std::move(consts), info.output_dtypes, info.options};
  return (*f)(inner);
}

// Runs `inner` on the first `num_inputs` inputs of ctx; with x0, on x0 in place of input 0.
Status run_inner(OpKernel& inner, KernelContext& ctx, size_t num_inputs, const Tensor* x0 = nullptr) {
  std::vector<const Tensor*> ins(std::min(num_inputs, ctx.num_inputs()));
  for (size_t i = 0; i < ins.size(); ++i) ins[i] = ctx.input_or_null(i);
  if (x0 && !ins.empty()) ins[0] = x0;
  Tensor* out = &ctx.output(0);
  const core::DType dt = out->dtype();
  KernelContext ictx(ins, std::span<Tensor* const>(&out, 1), std::span<const core::DType>(&dt, 1), ctx.pool());
  return inner.run(ictx);
}

// Shared shape of the three epilogue ops: inner op on inputs [0, inner_inputs), then bias and/or
// residual from the inputs given, then the activation. scale_input >= 0 (FusedConv's S): the inner op reads
// input 0 times that input (broadcast), computed into a tensor of its own per run.
Result<std::unique_ptr<OpKernel>> make_fused(const KernelCreateInfo& info, const char* op, size_t inner_inputs,
                                             int bias_input, int residual_input, int scale_input = -1) {
  KESTREL_ASSIGN_OR_RETURN(ir::FusedActivationSpec spec, ir::read_fused_activation(info.node));
  const ref::ActivationParams act = to_ref_activation(spec);
  KESTREL_ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> inner, create_inner(info, op, inner_inputs));
  std::shared_ptr<OpKernel> k(std::move(inner));
  return make_kernel(
      [k, act, inner_inputs, bias_input, residual_input, scale_input](KernelContext& ctx) -> Status {
        const Tensor* s = scale_input >= 0 ? ctx.input_or_null(static_cast<size_t>(scale_input)) : nullptr;
        if (s) {
          const Tensor& x = ctx.input(0);
          KESTREL_ASSIGN_OR_RETURN(Tensor xs, Tensor::allocate(x.dtype(), x.dims()));
          KESTREL_RETURN_IF_ERROR(ref::binary(ref::BinaryOp::kMul, x, *s, xs));
          KESTREL_RETURN_IF_ERROR(run_inner(*k, ctx, inner_inputs, &xs));
        } else {
          KESTREL_RETURN_IF_ERROR(run_inner(*k, ctx, inner_inputs));
        }
        const Tensor* bias = bias_input >= 0 ? ctx.input_or_null(static_cast<size_t>(bias_input)) : nullptr;
        const Tensor* z = residual_input >= 0 ? ctx.input_or_null(static_cast<size_t>(residual_input)) : nullptr;
        return ref::apply_epilogue(act, bias, z, ctx.output(0));
      },
      k->impl_name());
}

using FastFactory = Result<std::unique_ptr<OpKernel>> (*)(const KernelCreateInfo&, kernels::cpu::FusedActivation);

// The fast kernel with the epilogue in registers when it applies, else the plain op's kernel
// followed by the reference epilogue.
Result<std::unique_ptr<OpKernel>> make_fused_or_fast(const KernelCreateInfo& info, FastFactory fast, const char* op,
                                                     size_t inner_inputs, int bias_input, int residual_input,
                                                     int scale_input = -1) {
  KESTREL_ASSIGN_OR_RETURN(ir::FusedActivationSpec spec, ir::read_fused_activation(info.node));
  if (std::optional<kernels::cpu::FusedActivation> act = to_fast_activation(spec)) {
    KESTREL_ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> k, fast(info, *act));
    if (k) return k;
  }
  return make_fused(info, op, inner_inputs, bias_input, residual_input, scale_input);
}

}  // namespace

ref::ActivationParams to_ref_activation(const ir::FusedActivationSpec& s) {
  ref::ActivationParams a;
  a.alpha = s.alpha;
  a.beta = s.beta;
  switch (s.kind) {
    case ir::FusedActivation::kNone:
      a.kind = ref::Activation::kNone;
      break;
    case ir::FusedActivation::kRelu:
      a.kind = ref::Activation::kRelu;
      break;
    case ir::FusedActivation::kClip:
      a.kind = ref::Activation::kClip;
      break;
    case ir::FusedActivation::kLeakyRelu:
      a.kind = ref::Activation::kLeakyRelu;
      break;
    case ir::FusedActivation::kSigmoid:
      a.kind = ref::Activation::kSigmoid;
      break;
    case ir::FusedActivation::kHardSigmoid:
      a.kind = ref::Activation::kHardSigmoid;
      break;
    case ir::FusedActivation::kHardSwish:
      a.kind = ref::Activation::kHardSwish;
      break;
    case ir::FusedActivation::kSilu:
      a.kind = ref::Activation::kSilu;
      break;
    case ir::FusedActivation::kGelu:
      a.kind = ref::Activation::kGelu;
      break;
    case ir::FusedActivation::kGeluTanh:
      a.kind = ref::Activation::kGeluTanh;
      break;
    case ir::FusedActivation::kTanh:
      a.kind = ref::Activation::kTanh;
      break;
  }
  return a;
}

std::optional<kernels::cpu::FusedActivation> to_fast_activation(const ir::FusedActivationSpec& s) {
  using kernels::cpu::GemmActivation;
  kernels::cpu::FusedActivation a;
  a.alpha = s.alpha;
  a.beta = s.beta;
  switch (s.kind) {
    case ir::FusedActivation::kNone: a.kind = GemmActivation::kNone; break;
    case ir::FusedActivation::kRelu: a.kind = GemmActivation::kRelu; break;
    case ir::FusedActivation::kClip: a.kind = GemmActivation::kClip; break;
    case ir::FusedActivation::kLeakyRelu: a.kind = GemmActivation::kLeakyRelu; break;
    case ir::FusedActivation::kSigmoid: a.kind = GemmActivation::kSigmoid; break;
    case ir::FusedActivation::kHardSigmoid: a.kind = GemmActivation::kHardSigmoid; break;
    case ir::FusedActivation::kHardSwish: a.kind = GemmActivation::kHardSwish; break;
    case ir::FusedActivation::kSilu: a.kind = GemmActivation::kSilu; break;
    case ir::FusedActivation::kGelu: a.kind = GemmActivation::kGelu; break;
    case ir::FusedActivation::kTanh: a.kind = GemmActivation::kTanh; break;
    case ir::FusedActivation::kGeluTanh: return std::nullopt;
  }
  return a;
}

void register_fused_kernels(KernelRegistry& r) {
  r.add(ir::kKestrelDomain, "FusedConv", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    if (info.node.has_attr("pool_kernel_shape")) {
      KESTREL_ASSIGN_OR_RETURN(ir::FusedActivationSpec spec, ir::read_fused_activation(info.node));
      return make_pooled_fused_conv(info, to_fast_activation(spec), to_ref_activation(spec));
    }
    return make_fused_or_fast(info, make_fast_fused_conv, "Conv", 3, -1, 3, 4);
  });
  r.add(ir::kKestrelDomain, "FusedPointwiseDepthwise",
        [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
          std::array<std::optional<kernels::cpu::FusedActivation>, 3> fast;
          std::array<ref::ActivationParams, 3> reference;
          const char* const names[] = {"activation1", "activation2", "activation3"};
          for (size_t i = 0; i < 3; ++i) {
            KESTREL_ASSIGN_OR_RETURN(ir::FusedActivationSpec spec, ir::read_fused_activation(info.node, names[i]));
            fast[i] = to_fast_activation(spec);
            reference[i] = to_ref_activation(spec);
          }
          return make_fused_pointwise_depthwise(info, fast, reference);
        });
  r.add(ir::kKestrelDomain, "FusedGemm", [](const KernelCreateInfo& info) {
    return make_fused_or_fast(info, make_fast_fused_gemm, "Gemm", 3, -1, -1);
  });
  r.add(ir::kKestrelDomain, "FusedMatMul", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    if (info.input_types.size() > 1 && info.input_types[1] && info.input_types[1]->shape.rank_known() &&
        info.input_types[1]->shape.rank() < 2)
      return info.fail("B must have rank >= 2");
    return make_fused_or_fast(info, make_fast_fused_matmul, "MatMul", 2, 2, 3);
  });
}

}  // namespace kestrel::runtime
