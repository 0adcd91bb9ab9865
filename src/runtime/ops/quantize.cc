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

// The window read once at creation; the rank comes from the inferred input types.
Result<ir::IntConvWindow> read_window(const KernelCreateInfo& info, size_t x_index, size_t w_index) {
  int64_t rank = -1;
  for (size_t i : {w_index, x_index})
    if (rank < 0 && i < info.input_types.size() && info.input_types[i] && info.input_types[i]->shape.rank_known())
      rank = info.input_types[i]->shape.rank();
  if (rank < 0 && info.node.has_attr("kernel_shape")) {
    KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> k, info.node.attr_ints("kernel_shape"));
    rank = static_cast<int64_t>(k.size()) + 2;
  }
  if (rank < 3) return info.unsupported("the rank of x and w must be known (>= 3) when the session is created");
  return ir::read_int_conv_window(info.node, static_cast<size_t>(rank - 2));
}

// Geometry from the actual input shapes (auto_pad depends on them).
Result<ref::IntConvParams> conv_params(const ir::IntConvWindow& window, const Tensor& x, const Tensor& w) {
  if (x.rank() < 3 || w.rank() != x.rank())
    return core::invalid_argument(core::str_cat("conv needs x [N, C, D...] and w [M, C/group, K...], got ",
                                                x.type_string(), " and ", w.type_string()));
  core::Dims in(x.dims().begin() + 2, x.dims().end()), kernel(w.dims().begin() + 2, w.dims().end());
  KESTREL_ASSIGN_OR_RETURN(ir::IntConvGeometry g, ir::int_conv_geometry(window, in, kernel));
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
    KESTREL_ASSIGN_OR_RETURN(ir::IntConvWindow window, read_window(info, 0, 1));
    return make_kernel([window](KernelContext& ctx) -> Status {
      KESTREL_ASSIGN_OR_RETURN(ref::IntConvParams p, conv_params(window, ctx.input(0), ctx.input(1)));
      return ref::conv_integer(p, ctx.input(0), ctx.input(1), ctx.input_or_null(2), ctx.input_or_null(3),
                               ctx.output(0));
    });
  });
  r.add("QLinearConv", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(ir::IntConvWindow window, read_window(info, 0, 3));
    return make_kernel([window](KernelContext& ctx) -> Status {
      KESTREL_ASSIGN_OR_RETURN(ref::IntConvParams p, conv_params(window, ctx.input(0), ctx.input(3)));
      return ref::qlinear_conv(p, ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4), ctx.input(5),
                               ctx.input(6), ctx.input(7), ctx.input_or_null(8), ctx.output(0));
    });
  });
}

}  // namespace kestrel::runtime
