// Kernel bindings for the loss ops: reduction / ignore_index attributes -> reference kernel parameters.
#include "kernels/reference/loss.h"

#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

namespace {

Result<ref::LossParams> loss_params(const KernelCreateInfo& info) {
  ref::LossParams p;
  KESTREL_ASSIGN_OR_RETURN(std::string reduction, info.node.attr_string("reduction", "mean"));
  if (reduction == "none")
    p.reduction = ref::LossReduction::kNone;
  else if (reduction == "sum")
    p.reduction = ref::LossReduction::kSum;
  else if (reduction == "mean")
    p.reduction = ref::LossReduction::kMean;
  else
    return info.fail("reduction must be none, sum or mean, is '", reduction, "'");
  if (info.node.has_attr("ignore_index")) {
    KESTREL_ASSIGN_OR_RETURN(int64_t ii, info.node.attr_int("ignore_index"));
    p.ignore_index = ii;
  }
  return p;
}

}  // namespace

void register_loss_kernels(KernelRegistry& r) {
  r.add("NegativeLogLikelihoodLoss", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(ref::LossParams p, loss_params(info));
    return make_kernel([p](KernelContext& ctx) {
      return ref::nll_loss(p, ctx.input(0), ctx.input(1), ctx.input_or_null(2), ctx.output(0));
    });
  });
  r.add("SoftmaxCrossEntropyLoss", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(ref::LossParams p, loss_params(info));
    return make_kernel([p](KernelContext& ctx) {
      Tensor* log_prob = ctx.num_outputs() > 1 ? &ctx.output(1) : nullptr;
      return ref::softmax_cross_entropy_loss(p, ctx.input(0), ctx.input(1), ctx.input_or_null(2), ctx.output(0),
                                             log_prob);
    });
  });
}

}  // namespace kestrel::runtime
