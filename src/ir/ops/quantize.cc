// Schemas of the quantization ops: QuantizeLinear / DequantizeLinear (opset 21 form: axis,
// block_size, output_dtype), DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger and
// QLinearConv, the integer convolutions' window geometry, and Kestrel's int8 ops (kestrel.QConv,
// QMatMul, QAdd, QMul, QLookup, QConcat, QGlobalAveragePool, QMaxPool: docs/quantization.md).
#include "ir/ops/quantize.h"

#include "ir/ops/window_geometry.h"

#include "core/str_util.h"
#include "ir/onnx_types.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

bool is_quantized_type(DType t) {
  return t == DType::kU8 || t == DType::kI8 || t == DType::kU16 || t == DType::kI16;
}
bool is_8bit(DType t) {
  return t == DType::kU8 || t == DType::kI8;
}

Status expect_dtype(const InferContext& ctx, size_t i, const char* what, bool (*ok)(DType), const char* allowed) {
  if (!ctx.has_input(i)) return Status::ok();
  DType t = ctx.input_dtype(i);
  if (t != DType::kUndefined && !ok(t))
    return ctx.fail(what, " (input ", i, ") must be ", allowed, ", is ", core::dtype_name(t));
  return Status::ok();
}

Status expect_same_dtype(const InferContext& ctx, size_t i, size_t j) {
  if (!ctx.has_input(i) || !ctx.has_input(j)) return Status::ok();
  DType a = ctx.input_dtype(i), b = ctx.input_dtype(j);
  if (a != DType::kUndefined && b != DType::kUndefined && a != b)
    return ctx.fail("input ", j, " must have the dtype of input ", i, " (", core::dtype_name(a), "), is ",
                    core::dtype_name(b));
  return Status::ok();
}

// Scale / zero-point shape against x: one element; 1-D of x.dim(axis); or blocked (same rank).
Status check_quant_param_shape(const InferContext& ctx, size_t param, int64_t axis, int64_t block_size) {
  if (!ctx.has_input(param)) return Status::ok();
  const Shape& x = ctx.input_shape(0);
  const Shape& s = ctx.input_shape(param);
  if (block_size < 0) return ctx.fail("block_size must be >= 0, is ", block_size);
  if (!x.rank_known() || !s.rank_known()) return Status::ok();
  const int64_t n = s.num_elements();
  if (block_size == 0 && n == 1 && s.rank() <= 1) return Status::ok();
  const int64_t r = x.rank();
  if (axis < -r || axis >= r) return ctx.fail("axis ", axis, " is out of range for rank ", r);
  if (axis < 0) axis += r;
  if (block_size == 0) {
    if (s.rank() != 1) return ctx.fail("input ", param, " must be a scalar or 1-D, has shape ", s.to_string());
    if (s[0].known() && x[axis].known() && s[0].value != x[axis].value)
      return ctx.fail("input ", param, " has ", s[0].value, " values but axis ", axis, " has size ", x[axis].value);
    return Status::ok();
  }
  if (s.rank() != r)
    return ctx.fail("blocked input ", param, " must have the input's rank ", r, ", has shape ", s.to_string());
  for (int64_t d = 0; d < r; ++d) {
    if (!s[d].known() || !x[d].known()) continue;
    int64_t want = d == axis ? (x[d].value == 0 ? 0 : (x[d].value - 1) / block_size + 1) : x[d].value;
    if (s[d].value != want)
      return ctx.fail("blocked input ", param, " shape ", s.to_string(), " does not fit ", x.to_string(),
                      " with block_size ", block_size, " on axis ", axis);
  }
  return Status::ok();
}

Status infer_quantize_linear(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, ctx.attr_int("axis", 1));
  KESTREL_ASSIGN_OR_RETURN(int64_t block_size, ctx.attr_int("block_size", 0));
  KESTREL_ASSIGN_OR_RETURN(int64_t output_dtype, ctx.attr_int("output_dtype", 0));
  KESTREL_ASSIGN_OR_RETURN(int64_t saturate, ctx.attr_int("saturate", 1));
  (void)saturate;  // only affects float8 outputs, which Kestrel does not have
  DType xt = ctx.input_dtype(0);
  if (xt != DType::kUndefined && !core::is_float(xt) && xt != DType::kI32)
    return ctx.fail("x must be a float or int32 tensor, is ", core::dtype_name(xt));
  // Opset 21 types the scale like x, so an int32 x may come with an int32 scale.
  if (xt != DType::kI32 || ctx.input_dtype(1) != DType::kI32)
    KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 1, "y_scale", core::is_float, "a float tensor"));
  DType out = DType::kU8;
  if (output_dtype != 0) {
    out = dtype_from_onnx(output_dtype);
    if (!is_quantized_type(out))
      return core::unsupported(core::str_cat(ctx.node().describe(), ": output_dtype ", output_dtype,
                                             " is not supported (u8, i8, u16, i16)"));
  }
  if (ctx.has_input(2)) {
    DType z = ctx.input_dtype(2);
    if (z != DType::kUndefined && !is_quantized_type(z))
      return core::unsupported(core::str_cat(ctx.node().describe(), ": zero point dtype ", core::dtype_name(z),
                                             " is not supported (u8, i8, u16, i16)"));
    if (output_dtype != 0 && z != out && z != DType::kUndefined)
      return ctx.fail("output_dtype ", core::dtype_name(out), " differs from the zero point's ", core::dtype_name(z));
    if (z != DType::kUndefined) out = z;
  }
  KESTREL_RETURN_IF_ERROR(check_quant_param_shape(ctx, 1, axis, block_size));
  KESTREL_RETURN_IF_ERROR(check_quant_param_shape(ctx, 2, axis, block_size));
  ctx.set_output(0, out, ctx.input_shape(0));
  return Status::ok();
}

Status infer_dequantize_linear(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, ctx.attr_int("axis", 1));
  KESTREL_ASSIGN_OR_RETURN(int64_t block_size, ctx.attr_int("block_size", 0));
  DType xt = ctx.input_dtype(0);
  if (xt != DType::kUndefined && !is_quantized_type(xt) && xt != DType::kI32)
    return core::unsupported(core::str_cat(ctx.node().describe(), ": x dtype ", core::dtype_name(xt),
                                           " is not supported (u8, i8, u16, i16, i32)"));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 1, "x_scale", core::is_float, "a float tensor"));
  KESTREL_RETURN_IF_ERROR(expect_same_dtype(ctx, 0, 2));
  KESTREL_RETURN_IF_ERROR(check_quant_param_shape(ctx, 1, axis, block_size));
  KESTREL_RETURN_IF_ERROR(check_quant_param_shape(ctx, 2, axis, block_size));
  ctx.set_output(0, ctx.input_dtype(1), ctx.input_shape(0));
  return Status::ok();
}

Status infer_dynamic_quantize_linear(InferContext& ctx) {
  if (ctx.input_dtype(0) != DType::kF32 && ctx.input_dtype(0) != DType::kUndefined)
    return ctx.fail("x must be f32, is ", core::dtype_name(ctx.input_dtype(0)));
  ctx.set_output(0, DType::kU8, ctx.input_shape(0));
  ctx.set_output(1, DType::kF32, Shape(std::vector<Dim>{}));
  ctx.set_output(2, DType::kU8, Shape(std::vector<Dim>{}));
  return Status::ok();
}

// numpy matmul shape of inputs a and b.
core::Result<Shape> matmul_shape(const InferContext& ctx, size_t ia, size_t ib) {
  const Shape& a = ctx.input_shape(ia);
  const Shape& b = ctx.input_shape(ib);
  if (!a.rank_known() || !b.rank_known()) return Shape::unknown_rank();
  if (a.rank() < 1 || b.rank() < 1) return ctx.fail("matmul inputs must have rank >= 1");
  std::vector<Dim> ad = *a.dims, bd = *b.dims;
  const bool a_vec = ad.size() == 1, b_vec = bd.size() == 1;
  if (a_vec) ad.insert(ad.begin(), Dim(1));
  if (b_vec) bd.emplace_back(1);
  const Dim& k1 = ad.back();
  const Dim& k2 = bd[bd.size() - 2];
  if (k1.known() && k2.known() && k1.value != k2.value)
    return ctx.fail("matmul inner dimensions differ: ", a.to_string(), " x ", b.to_string());
  Shape ab(std::vector<Dim>(ad.begin(), ad.end() - 2)), bb(std::vector<Dim>(bd.begin(), bd.end() - 2));
  auto batch = broadcast_shapes({&ab, &bb});
  if (!batch.is_ok()) return ctx.fail(batch.status().message());
  std::vector<Dim> out = *batch->dims;
  if (!a_vec) out.push_back(ad[ad.size() - 2]);
  if (!b_vec) out.push_back(bd.back());
  return Shape(std::move(out));
}

Status infer_matmul_integer(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 0, "A", is_8bit, "u8 or i8"));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 1, "B", is_8bit, "u8 or i8"));
  KESTREL_RETURN_IF_ERROR(expect_same_dtype(ctx, 0, 2));
  KESTREL_RETURN_IF_ERROR(expect_same_dtype(ctx, 1, 3));
  KESTREL_ASSIGN_OR_RETURN(Shape s, matmul_shape(ctx, 0, 1));
  ctx.set_output(0, DType::kI32, std::move(s));
  return Status::ok();
}

Status infer_qlinear_matmul(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 0, "a", is_8bit, "u8 or i8"));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 3, "b", is_8bit, "u8 or i8"));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 7, "y_zero_point", is_8bit, "u8 or i8"));
  for (size_t i : {1, 4, 6}) KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, i, "scale", core::is_float, "a float tensor"));
  KESTREL_RETURN_IF_ERROR(expect_same_dtype(ctx, 0, 2));
  KESTREL_RETURN_IF_ERROR(expect_same_dtype(ctx, 3, 5));
  KESTREL_ASSIGN_OR_RETURN(Shape s, matmul_shape(ctx, 0, 3));
  ctx.set_output(0, ctx.input_dtype(7), std::move(s));
  return Status::ok();
}

// Output shape [N, M, spatial...] of an integer convolution with inputs x and w.
core::Result<Shape> conv_shape(const InferContext& ctx, size_t ix, size_t iw) {
  const Shape& x = ctx.input_shape(ix);
  const Shape& w = ctx.input_shape(iw);
  if (x.rank_known() && x.rank() < 3) return ctx.fail("x must be [N, C, D...], has shape ", x.to_string());
  if (x.rank_known() && w.rank_known() && w.rank() != x.rank())
    return ctx.fail("w shape ", w.to_string(), " does not match x shape ", x.to_string());
  if (!x.rank_known() && !w.rank_known()) return Shape::unknown_rank();
  const int64_t rank = x.rank_known() ? x.rank() : w.rank();
  if (rank < 3) return ctx.fail("w must be [M, C/group, K...], has shape ", w.to_string());
  // Reads and checks the window attributes and group (>= 1) before anything divides by it.
  KESTREL_ASSIGN_OR_RETURN(IntConvWindow window, read_int_conv_window(ctx.node(), static_cast<size_t>(rank - 2)));
  const int64_t group = window.group;
  if (x.rank_known() && w.rank_known() && x[1].known() && w[1].known() &&
      (x[1].value % group != 0 || x[1].value / group != w[1].value))
    return ctx.fail("x has ", x[1].value, " channels but w expects ", w[1].value, " x group ", group);
  if (w.rank_known() && w[0].known() && w[0].value % group != 0)
    return ctx.fail("w has ", w[0].value, " output channels, not a multiple of group ", group);
  std::vector<Dim> out(static_cast<size_t>(rank));
  if (x.rank_known()) out[0] = x[0];
  if (w.rank_known()) out[1] = w[0];
  bool spatial_known = x.rank_known() && w.rank_known();
  core::Dims in, kernel;
  for (int64_t d = 2; spatial_known && d < rank; ++d) {
    spatial_known = x[d].known() && w[d].known();
    if (spatial_known) {
      in.push_back(x[d].value);
      kernel.push_back(w[d].value);
    }
  }
  if (spatial_known) {
    auto g = int_conv_geometry(window, in, kernel);
    if (!g.is_ok()) return ctx.fail(g.status().message());
    for (size_t d = 0; d < g->out.size(); ++d) out[d + 2] = Dim(g->out[d]);
  }
  return Shape(std::move(out));
}

Status infer_conv_integer(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 0, "x", is_8bit, "u8 or i8"));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 1, "w", is_8bit, "u8 or i8"));
  KESTREL_RETURN_IF_ERROR(expect_same_dtype(ctx, 0, 2));
  KESTREL_RETURN_IF_ERROR(expect_same_dtype(ctx, 1, 3));
  KESTREL_ASSIGN_OR_RETURN(Shape s, conv_shape(ctx, 0, 1));
  ctx.set_output(0, DType::kI32, std::move(s));
  return Status::ok();
}

Status infer_qlinear_conv(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 0, "x", is_8bit, "u8 or i8"));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 3, "w", is_8bit, "u8 or i8"));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 7, "y_zero_point", is_8bit, "u8 or i8"));
  for (size_t i : {1, 4, 6}) KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, i, "scale", core::is_float, "a float tensor"));
  KESTREL_RETURN_IF_ERROR(expect_same_dtype(ctx, 0, 2));
  KESTREL_RETURN_IF_ERROR(expect_same_dtype(ctx, 3, 5));
  KESTREL_RETURN_IF_ERROR(expect_dtype(
      ctx, 8, "B", [](DType t) { return t == DType::kI32; }, "int32"));
  KESTREL_ASSIGN_OR_RETURN(Shape s, conv_shape(ctx, 0, 3));
  ctx.set_output(0, ctx.input_dtype(7), std::move(s));
  return Status::ok();
}


// --- Kestrel int8 ops (u8 activations with per-tensor scale / zero point) ---

bool is_u8(DType t) {
  return t == DType::kU8;
}
bool is_i32(DType t) {
  return t == DType::kI32;
}

// out_min / out_max: the fused clamp in the quantized domain, within [0, 255].
Status check_out_clamp(const InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(int64_t lo, ctx.attr_int("out_min", 0));
  KESTREL_ASSIGN_OR_RETURN(int64_t hi, ctx.attr_int("out_max", 255));
  if (lo < 0 || hi > 255 || lo > hi) return ctx.fail("out_min / out_max must satisfy 0 <= ", lo, " <= ", hi, " <= 255");
  return Status::ok();
}

// Inputs (x, scale, zp) at `first` .. first + 2: u8, float, u8.
Status check_q_triple(const InferContext& ctx, size_t first) {
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, first, "quantized input", is_u8, "u8"));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, first + 1, "scale", core::is_float, "a float tensor"));
  return expect_dtype(ctx, first + 2, "zero point", is_u8, "u8");
}

Status infer_kestrel_qconv(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(check_q_triple(ctx, 0));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 3, "w", [](DType t) { return t == DType::kI8; }, "i8"));
  KESTREL_RETURN_IF_ERROR(expect_same_dtype(ctx, 3, 5));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 4, "w_scale", core::is_float, "a float tensor"));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 6, "y_scale", core::is_float, "a float tensor"));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 7, "y_zero_point", is_u8, "u8"));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 8, "B", is_i32, "int32"));
  KESTREL_RETURN_IF_ERROR(check_out_clamp(ctx));
  KESTREL_ASSIGN_OR_RETURN(Shape s, conv_shape(ctx, 0, 3));
  ctx.set_output(0, DType::kU8, std::move(s));
  return Status::ok();
}

Status infer_kestrel_qmatmul(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(check_q_triple(ctx, 0));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 3, "b", [](DType t) { return t == DType::kI8; }, "i8"));
  KESTREL_RETURN_IF_ERROR(expect_same_dtype(ctx, 3, 5));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 4, "b_scale", core::is_float, "a float tensor"));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 6, "y_scale", core::is_float, "a float tensor"));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 7, "y_zero_point", is_u8, "u8"));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 8, "bias", is_i32, "int32"));
  KESTREL_RETURN_IF_ERROR(check_out_clamp(ctx));
  if (ctx.input_shape(3).rank_known() && ctx.input_shape(3).rank() != 2)
    return ctx.fail("b must be 2-D [K, N], has shape ", ctx.input_shape(3).to_string());
  KESTREL_ASSIGN_OR_RETURN(Shape s, matmul_shape(ctx, 0, 3));
  ctx.set_output(0, DType::kU8, std::move(s));
  return Status::ok();
}

Status infer_kestrel_qbinary(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(check_q_triple(ctx, 0));
  KESTREL_RETURN_IF_ERROR(check_q_triple(ctx, 3));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 6, "y_scale", core::is_float, "a float tensor"));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 7, "y_zero_point", is_u8, "u8"));
  KESTREL_RETURN_IF_ERROR(check_out_clamp(ctx));
  auto s = broadcast_shapes({&ctx.input_shape(0), &ctx.input_shape(3)});
  if (!s.is_ok()) return ctx.fail(s.status().message());
  ctx.set_output(0, DType::kU8, std::move(*s));
  return Status::ok();
}

Status infer_kestrel_qlookup(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 0, "x", is_u8, "u8"));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 1, "table", is_u8, "u8"));
  const Shape& t = ctx.input_shape(1);
  if (t.rank_known() && (t.rank() != 1 || (t[0].known() && t[0].value != 256)))
    return ctx.fail("table must have shape [256], has ", t.to_string());
  ctx.set_output(0, DType::kU8, ctx.input_shape(0));
  return Status::ok();
}

Status infer_kestrel_qconcat(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, ctx.attr_int("axis"));
  if (ctx.num_inputs() < 5 || (ctx.num_inputs() - 2) % 3 != 0)
    return ctx.fail("inputs must be y_scale, y_zero_point, then (x, scale, zero point) per tensor; got ",
                    ctx.num_inputs());
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 0, "y_scale", core::is_float, "a float tensor"));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 1, "y_zero_point", is_u8, "u8"));
  std::vector<Dim> out;
  int64_t rank = -1;
  for (size_t i = 2; i < ctx.num_inputs(); i += 3) {
    if (!ctx.has_input(i)) return ctx.fail("input ", i, " is missing");
    KESTREL_RETURN_IF_ERROR(check_q_triple(ctx, i));
    const Shape& s = ctx.input_shape(i);
    if (!s.rank_known()) {
      ctx.set_output(0, DType::kU8, Shape::unknown_rank());
      return Status::ok();
    }
    if (rank < 0) {
      rank = s.rank();
      if (axis < -rank || axis >= rank) return ctx.fail("axis ", axis, " is out of range for rank ", rank);
      if (axis < 0) axis += rank;
      out = *s.dims;
      continue;
    }
    if (s.rank() != rank) return ctx.fail("inputs have different ranks");
    for (int64_t d = 0; d < rank; ++d) {
      const Dim& a = out[static_cast<size_t>(d)];
      const Dim& b = s[d];
      if (d == axis) {
        out[static_cast<size_t>(d)] = a.known() && b.known() ? Dim(a.value + b.value) : Dim::unknown();
      } else if (a.known() && b.known() && a.value != b.value) {
        return ctx.fail("input ", i, " has shape ", s.to_string(), ", which differs off axis ", axis);
      } else if (!a.known()) {
        out[static_cast<size_t>(d)] = b;
      }
    }
  }
  ctx.set_output(0, DType::kU8, Shape(std::move(out)));
  return Status::ok();
}

Status infer_kestrel_qgap(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(check_q_triple(ctx, 0));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 3, "y_scale", core::is_float, "a float tensor"));
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 4, "y_zero_point", is_u8, "u8"));
  const Shape& xs = ctx.input_shape(0);
  if (!xs.rank_known()) {
    ctx.set_output(0, DType::kU8, Shape::unknown_rank());
    return Status::ok();
  }
  if (xs.rank() < 3) return ctx.fail("x must be [N, C, spatial...], is ", xs.to_string());
  std::vector<Dim> out = *xs.dims;
  for (size_t i = 2; i < out.size(); ++i) out[i] = Dim(1);
  ctx.set_output(0, DType::kU8, Shape(std::move(out)));
  return Status::ok();
}

Status infer_kestrel_qmaxpool(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_dtype(ctx, 0, "x", is_u8, "u8"));
  KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, ctx.attr_ints("kernel_shape"));
  if (kernel.size() != 2) return ctx.fail("kernel_shape must have 2 values (2-D pooling)");
  KESTREL_ASSIGN_OR_RETURN(WindowAttrs a, read_window_attrs(ctx.node(), kernel, true));
  const Shape& xs = ctx.input_shape(0);
  if (!xs.rank_known()) {
    ctx.set_output(0, DType::kU8, Shape::unknown_rank());
    return Status::ok();
  }
  if (xs.rank() != 4) return ctx.fail("x must be [N, C, H, W], is ", xs.to_string());
  std::vector<Dim> out = *xs.dims;
  for (size_t i = 2; i < 4; ++i) {
    if (!xs[static_cast<int64_t>(i)].known()) continue;
    auto w = forward_window(a, i - 2, xs[static_cast<int64_t>(i)].value);
    if (!w.is_ok()) return ctx.fail(w.status().message());
    out[i] = Dim(w->out);
  }
  ctx.set_output(0, DType::kU8, Shape(std::move(out)));
  return Status::ok();
}

}  // namespace

core::Result<IntConvWindow> read_int_conv_window(const Node& n, size_t spatial) {
  IntConvWindow w;
  std::vector<int64_t> kernel(spatial, 1);
  if (n.has_attr("kernel_shape")) {
    KESTREL_ASSIGN_OR_RETURN(kernel, n.attr_ints("kernel_shape"));
    w.kernel_from_w = false;
  }
  KESTREL_ASSIGN_OR_RETURN(w.window, read_window_attrs(n, kernel, false));
  if (w.window.spatial() != spatial)
    return core::invalid_model(core::str_cat(n.describe(), ": kernel_shape has ", w.window.spatial(),
                                             " values but the input has ", spatial, " spatial axes"));
  KESTREL_ASSIGN_OR_RETURN(w.group, n.attr_int("group", 1));
  if (w.group < 1 || w.group > core::kMaxElements)
    return core::invalid_model(core::str_cat(n.describe(), ": group must be in [1, 2^40], is ", w.group));
  return w;
}

core::Result<IntConvGeometry> int_conv_geometry(const IntConvWindow& w, const core::Dims& in,
                                                const core::Dims& kernel) {
  const size_t sp = w.window.spatial();
  if (in.size() != sp || kernel.size() != sp)
    return core::invalid_argument(core::str_cat("the window has ", sp, " spatial axes, the input ", in.size(),
                                                " and the weights ", kernel.size()));
  WindowAttrs a = w.window;
  for (size_t i = 0; i < sp; ++i) {
    if (!w.kernel_from_w) {
      if (kernel[i] != a.kernel[i])
        return core::invalid_argument(core::str_cat("kernel_shape [", core::join(a.kernel),
                                                    "] does not match the weights' [", core::join(kernel), "]"));
      continue;
    }
    // Same bound as read_window_attrs puts on attribute values.
    if (kernel[i] < 1 || kernel[i] > (int64_t{1} << 31))
      return core::invalid_argument(core::str_cat("kernel size ", kernel[i], " is out of range"));
    a.kernel[i] = kernel[i];
    if (a.dilated_kernel(i) > (int64_t{1} << 31)) return core::invalid_argument("dilated kernel is too large");
  }
  IntConvGeometry g;
  g.strides = a.strides;
  g.dilations = a.dilations;
  g.group = w.group;
  for (size_t i = 0; i < sp; ++i) {
    KESTREL_ASSIGN_OR_RETURN(AxisWindow aw, forward_window(a, i, in[i]));
    g.pads_begin.push_back(aw.pad_begin);
    g.out.push_back(aw.out);
  }
  return g;
}

void register_quantize_ops(OpRegistry& r) {
  add_op(r, "QuantizeLinear", 2, 3, 1, 1, infer_quantize_linear,
         "saturate(round_half_even(x / scale) + zero_point), per tensor, axis or block");
  add_op(r, "DequantizeLinear", 2, 3, 1, 1, infer_dequantize_linear,
         "(x - zero_point) * scale, per tensor, axis or block");
  add_op(r, "DynamicQuantizeLinear", 1, 1, 3, 3, infer_dynamic_quantize_linear,
         "u8 quantization of x with scale and zero point from its range (including 0)");
  add_op(r, "MatMulInteger", 2, 4, 1, 1, infer_matmul_integer,
         "int32 numpy-matmul of (a - a_zero_point) and (b - b_zero_point)");
  add_op(r, "QLinearMatMul", 8, 8, 1, 1, infer_qlinear_matmul,
         "quantized matmul, requantized to y's scale and zero point");
  add_op(r, "ConvInteger", 2, 4, 1, 1, infer_conv_integer,
         "int32 convolution of (x - x_zero_point) and (w - w_zero_point)");
  add_op(r, "QLinearConv", 8, 9, 1, 1, infer_qlinear_conv,
         "quantized convolution with int32 bias, requantized to y's scale and zero point");
  add_kestrel_op(r, "QConv", 8, 9, infer_kestrel_qconv,
                 "QLinearConv (u8 x, s8 w per channel, int32 bias) with the output clamped to [out_min, out_max]");
  add_kestrel_op(r, "QMatMul", 8, 9, infer_kestrel_qmatmul,
                 "u8 a x constant s8 b [K, N] (+ int32 bias [N]), requantized, clamped to [out_min, out_max]");
  add_kestrel_op(r, "QAdd", 8, 8, infer_kestrel_qbinary,
                 "u8 (a, b) -> u8 dequantized sum, broadcast, requantized, clamped to [out_min, out_max]");
  add_kestrel_op(r, "QMul", 8, 8, infer_kestrel_qbinary,
                 "u8 (a, b) -> u8 dequantized product, broadcast, requantized, clamped to [out_min, out_max]");
  add_kestrel_op(r, "QLookup", 2, 2, infer_kestrel_qlookup, "y = table[x] for u8 x and a u8 table of 256 entries");
  add_kestrel_op(r, "QConcat", 5, -1, infer_kestrel_qconcat,
                 "Concat of u8 tensors, each requantized to (y_scale, y_zero_point)");
  add_kestrel_op(r, "QGlobalAveragePool", 5, 5, infer_kestrel_qgap, "GlobalAveragePool of u8 x, requantized");
  add_kestrel_op(r, "QMaxPool", 1, 1, infer_kestrel_qmaxpool, "2-D MaxPool (no indices) of u8 NCHW x");
}

}  // namespace kestrel::ir
