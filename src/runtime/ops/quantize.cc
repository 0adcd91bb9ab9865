// Kernel bindings for the quantization ops: axis / block_size and the integer convolutions'
// window attributes -> reference kernel parameters.
#include "ir/ops/quantize.h"

#include "kernels/reference/quantize.h"
#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

namespace {

Result<ref::QuantAxisParams> axis_params(const KernelCreateInfo& info) {
  ref::QuantAxisParams p;
  KESTREL_ASSIGN_OR_RETURN(p.axis, info.node.attr_int("axis", 1));
  KESTREL_ASSIGN_OR_RETURN(p.block_size, info.node.attr_int("block_size", 0));
  if (p.block_size < 0) return info.fail("block_size must be >= 0, is ", p.block_size);
  return p;
}

// Geometry from the actual input shapes (auto_pad depends on them).
Result<ref::IntConvParams> conv_params(const ir::IntConvAttrs& attrs, const Tensor& x, const Tensor& w) {
  if (x.rank() < 3 || w.rank() != x.rank())
    return core::invalid_argument(core::str_cat("conv needs x [N, C, D...] and w [M, C/group, K...], got ",
                                                x.type_string(), " and ", w.type_string()));
  core::Dims in(x.dims().begin() + 2, x.dims().end()), kernel(w.dims().begin() + 2, w.dims().end());
  KESTREL_ASSIGN_OR_RETURN(ir::IntConvGeometry g, ir::int_conv_geometry(attrs, in, kernel));
  return ref::IntConvParams{g.strides, g.dilations, g.pads_begin, g.group};
}

}  // namespace

void register_quantize_kernels(KernelRegistry& r) {
  r.add("QuantizeLinear", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(ref::QuantAxisParams p, axis_params(info));
    return make_kernel([p](KernelContext& ctx) {
      return ref::quantize_linear(p, ctx.input(0), ctx.input(1), ctx.input_or_null(2), ctx.output(0));
    });
  });
  r.add("DequantizeLinear", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(ref::QuantAxisParams p, axis_params(info));
    return make_kernel([p](KernelContext& ctx) {
      return ref::dequantize_linear(p, ctx.input(0), ctx.input(1), ctx.input_or_null(2), ctx.output(0));
    });
  });
  r.add("DynamicQuantizeLinear", [](const KernelCreateInfo&) -> Result<std::unique_ptr<OpKernel>> {
    return make_kernel([](KernelContext& ctx) {
      return ref::dynamic_quantize_linear(ctx.input(0), ctx.output(0), ctx.output(1), ctx.output(2));
    });
  });
  r.add("MatMulInteger", [](const KernelCreateInfo&) -> Result<std::unique_ptr<OpKernel>> {
    return make_kernel([](KernelContext& ctx) {
      return ref::matmul_integer(ctx.input(0), ctx.input(1), ctx.input_or_null(2), ctx.input_or_null(3), ctx.output(0));
    });
  });
  r.add("QLinearMatMul", [](const KernelCreateInfo&) -> Result<std::unique_ptr<OpKernel>> {
    return make_kernel([](KernelContext& ctx) {
      return ref::qlinear_matmul(ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4), ctx.input(5),
                                 ctx.input(6), ctx.input(7), ctx.output(0));
    });
  });
  r.add("ConvInteger", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(ir::IntConvAttrs attrs, ir::read_int_conv_attrs(info.node));
    return make_kernel([attrs](KernelContext& ctx) -> Status {
      KESTREL_ASSIGN_OR_RETURN(ref::IntConvParams p, conv_params(attrs, ctx.input(0), ctx.input(1)));
      return ref::conv_integer(p, ctx.input(0), ctx.input(1), ctx.input_or_null(2), ctx.input_or_null(3),
                               ctx.output(0));
    });
  });
  r.add("QLinearConv", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(ir::IntConvAttrs attrs, ir::read_int_conv_attrs(info.node));
    return make_kernel([attrs](KernelContext& ctx) -> Status {
      KESTREL_ASSIGN_OR_RETURN(ref::IntConvParams p, conv_params(attrs, ctx.input(0), ctx.input(3)));
      return ref::qlinear_conv(p, ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4), ctx.input(5),
                               ctx.input(6), ctx.input(7), ctx.input_or_null(8), ctx.output(0));
    });
  });
}

}  // namespace kestrel::runtime
