// Kernel bindings for the signal ops: attributes and scalar inputs (dft_length, axis, frame_step,
// frame_length, window sizes) -> reference kernel parameters.
#include "kernels/reference/signal.h"

#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

namespace {

Result<double> scalar_float_input(const KernelContext& ctx, size_t i, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.num_elements() != 1 || t.dtype() == core::DType::kString || t.dtype() == core::DType::kBool)
    return core::invalid_argument(core::str_cat(what, " must be one number, got ", t.type_string()));
  return t.element_as_double(0);
}

}  // namespace

void register_signal_kernels(KernelRegistry& r) {
  r.add("DFT", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(int64_t inverse, info.node.attr_int("inverse", 0));
    KESTREL_ASSIGN_OR_RETURN(int64_t onesided, info.node.attr_int("onesided", 0));
    return make_kernel([inverse, onesided](KernelContext& ctx) -> Status {
      const Tensor& x = ctx.input(0);
      ref::DftParams p;
      p.inverse = inverse != 0;
      p.onesided = onesided != 0;
      int64_t axis = -2;
      if (ctx.has_input(2)) {
        KESTREL_ASSIGN_OR_RETURN(axis, ctx.int_scalar_input(2, "axis"));
      }
      if (x.rank() < 2 || axis < -x.rank() || axis > x.rank() - 2 || axis == -1)
        return core::invalid_argument(core::str_cat("DFT axis ", axis, " is out of range for ", x.type_string()));
      p.axis = axis < 0 ? axis + x.rank() : axis;
      const int64_t n = x.dim(p.axis);
      if (ctx.has_input(1)) {
        KESTREL_ASSIGN_OR_RETURN(p.length, ctx.int_scalar_input(1, "dft_length"));
      } else {
        p.length = p.inverse && p.onesided ? 2 * (n - 1) : n;
      }
      return ref::dft(p, x, ctx.output(0));
    });
  });
  r.add("STFT", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(int64_t onesided, info.node.attr_int("onesided", 1));
    return make_kernel([onesided](KernelContext& ctx) -> Status {
      ref::StftParams p;
      p.onesided = onesided != 0;
      KESTREL_ASSIGN_OR_RETURN(p.frame_step, ctx.int_scalar_input(1, "frame_step"));
      const Tensor* window = ctx.input_or_null(2);
      if (ctx.has_input(3)) {
        KESTREL_ASSIGN_OR_RETURN(p.frame_length, ctx.int_scalar_input(3, "frame_length"));
      } else if (window) {
        p.frame_length = window->rank() == 1 ? window->dim(0) : 0;
      } else {
        return core::invalid_argument("STFT needs a window or a frame_length");
      }
      return ref::stft(p, ctx.input(0), window, ctx.output(0));
    });
  });
  const std::pair<const char*, ref::WindowKind> windows[] = {{"HannWindow", ref::WindowKind::kHann},
                                                             {"HammingWindow", ref::WindowKind::kHamming},
                                                             {"BlackmanWindow", ref::WindowKind::kBlackman}};
  for (const auto& [name, kind] : windows) {
    r.add(name, [kind = kind](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
      KESTREL_ASSIGN_OR_RETURN(int64_t periodic, info.node.attr_int("periodic", 1));
      return make_kernel(
          [kind, periodic](KernelContext& ctx) { return ref::window(kind, periodic != 0, ctx.output(0)); });
    });
  }
  r.add("MelWeightMatrix", [](const KernelCreateInfo&) -> Result<std::unique_ptr<OpKernel>> {
    return make_kernel([](KernelContext& ctx) -> Status {
      KESTREL_ASSIGN_OR_RETURN(int64_t bins, ctx.int_scalar_input(0, "num_mel_bins"));
      KESTREL_ASSIGN_OR_RETURN(int64_t length, ctx.int_scalar_input(1, "dft_length"));
      KESTREL_ASSIGN_OR_RETURN(int64_t rate, ctx.int_scalar_input(2, "sample_rate"));
      KESTREL_ASSIGN_OR_RETURN(double lo, scalar_float_input(ctx, 3, "lower_edge_hertz"));
      KESTREL_ASSIGN_OR_RETURN(double hi, scalar_float_input(ctx, 4, "upper_edge_hertz"));
      return ref::mel_weight_matrix(bins, length, rate, lo, hi, ctx.output(0));
    });
  });
}

}  // namespace kestrel::runtime
