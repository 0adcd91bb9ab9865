// Schemas of the convolution ops: Conv and ConvTranspose (any spatial rank, groups, dilations,
// auto_pad), with the channel/group/kernel checks that catch broken models at load time, and
// Kestrel's kestrel.FusedConv (Conv + residual add + activation, docs/fused_ops.md) and
// kestrel.FusedPointwiseDepthwise (MobileNet's [expand 1x1 ->] depthwise -> [project 1x1], at least one of the
// two 1x1 convs).
#include <optional>

#include "core/str_util.h"
#include "ir/ops/fused_activation.h"
#include "ir/ops/infer_helpers.h"
#include "ir/ops/window_geometry.h"

namespace kestrel::ir {

using core::Status;

namespace {

Status check_same_dtypes(const InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    DType a = ctx.input_dtype(0), b = ctx.input_dtype(i);
    if (a != DType::kUndefined && b != DType::kUndefined && a != b)
      return ctx.fail("input ", i, " has dtype ", core::dtype_name(b), ", input 0 has ", core::dtype_name(a));
  }
  return Status::ok();
}

// What Conv and ConvTranspose share: rank, spatial count, window attributes and kernel shape.
struct ConvSetup {
  int64_t rank = -1;                  // -1: unknown
  std::optional<WindowAttrs> window;  // nullopt when the kernel shape is unknown
  int64_t group = 1;
};

core::Result<ConvSetup> conv_setup(const InferContext& ctx) {
  ConvSetup s;
  KESTREL_RETURN_IF_ERROR(check_same_dtypes(ctx));
  const Shape& xs = ctx.input_shape(0);
  const Shape& ws = ctx.input_shape(1);
  if (xs.rank_known() && xs.rank() < 3)
    return ctx.fail("input X must have rank >= 3 (N, C, spatial...), is ", xs.to_string());
  if (ws.rank_known() && ws.rank() < 3) return ctx.fail("weight W must have rank >= 3, is ", ws.to_string());
  if (xs.rank_known() && ws.rank_known() && xs.rank() != ws.rank())
    return ctx.fail("X ", xs.to_string(), " and W ", ws.to_string(), " must have the same rank");
  s.rank = xs.rank_known() ? xs.rank() : ws.rank();
  KESTREL_ASSIGN_OR_RETURN(s.group, ctx.attr_int("group", 1));
  if (s.group < 1) return ctx.fail("group must be >= 1, is ", s.group);
  if (ctx.has_input(2)) {
    const Shape& bs = ctx.input_shape(2);
    if (bs.rank_known() && bs.rank() != 1) return ctx.fail("bias B must be 1-D, is ", bs.to_string());
  }
  std::optional<std::vector<int64_t>> kernel;
  if (ctx.node().has_attr("kernel_shape")) {
    KESTREL_ASSIGN_OR_RETURN(kernel, ctx.attr_ints("kernel_shape"));
    if (s.rank >= 0 && static_cast<int64_t>(kernel->size()) != s.rank - 2)
      return ctx.fail("kernel_shape has ", kernel->size(), " values but the input has ", s.rank - 2, " spatial axes");
    if (ws.rank_known())
      for (size_t i = 0; i < kernel->size(); ++i) {
        const Dim& d = ws[static_cast<int64_t>(i) + 2];
        if (d.known() && d.value != (*kernel)[i])
          return ctx.fail("kernel_shape ", core::join(*kernel), " does not match W ", ws.to_string());
      }
    if (s.rank < 0) s.rank = static_cast<int64_t>(kernel->size()) + 2;
  } else if (ws.rank_known()) {
    std::vector<int64_t> k;
    for (int64_t i = 2; i < ws.rank(); ++i)
      if (ws[i].known()) k.push_back(ws[i].value);
    if (static_cast<int64_t>(k.size()) == ws.rank() - 2) kernel = std::move(k);
  }
  if (s.rank < 0) return s;
  const size_t spatial = static_cast<size_t>(s.rank - 2);
  // Validate the other attributes even when the kernel is unknown (with a stand-in kernel).
  KESTREL_ASSIGN_OR_RETURN(WindowAttrs a,
                           read_window_attrs(ctx.node(), kernel ? *kernel : std::vector<int64_t>(spatial, 1), false));
  if (kernel) s.window = std::move(a);
  return s;
}

Status infer_conv(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(ConvSetup s, conv_setup(ctx));
  if (s.rank < 0) {
    ctx.set_output(0, ctx.input_dtype(0), Shape::unknown_rank());
    return Status::ok();
  }
  const Shape& xs = ctx.input_shape(0);
  const Shape& ws = ctx.input_shape(1);
  Dim c = xs.rank_known() ? xs[1] : Dim::unknown();
  Dim wc = ws.rank_known() ? ws[1] : Dim::unknown();
  Dim m = ws.rank_known() ? ws[0] : Dim::unknown();
  if (c.known() && c.value % s.group != 0)
    return ctx.fail("input channels ", c.value, " are not divisible by group ", s.group);
  if (m.known() && m.value % s.group != 0)
    return ctx.fail("output channels (W dim 0) ", m.value, " are not divisible by group ", s.group);
  if (c.known() && wc.known() && c.value != wc.value * s.group)
    return ctx.fail("X has ", c.value, " channels but W ", ws.to_string(), " with group ", s.group, " expects ",
                    wc.value * s.group);
  if (ctx.has_input(2)) {
    const Shape& bs = ctx.input_shape(2);
    if (bs.rank_known() && bs.rank() == 1 && bs[0].known() && m.known() && bs[0].value != m.value)
      return ctx.fail("bias B has ", bs[0].value, " elements, W has ", m.value, " output channels");
  }
  std::vector<Dim> out(static_cast<size_t>(s.rank));
  out[0] = xs.rank_known() ? xs[0] : Dim::unknown();
  out[1] = m;
  for (int64_t i = 2; i < s.rank; ++i) {
    if (!s.window || !xs.rank_known() || !xs[i].known()) continue;
    auto w = forward_window(*s.window, static_cast<size_t>(i - 2), xs[i].value);
    if (!w.is_ok()) return ctx.fail(w.status().message());
    out[static_cast<size_t>(i)] = Dim(w->out);
  }
  ctx.set_output(0, ctx.input_dtype(0), Shape(std::move(out)));
  return Status::ok();
}

}  // namespace

// Shared with the ConvTranspose binding: output_padding and output_shape (spatial part) checked.
core::Status read_conv_transpose_extras(const Node& n, size_t spatial, std::vector<int64_t>* output_padding,
                                        std::optional<std::vector<int64_t>>* output_shape) {
  KESTREL_ASSIGN_OR_RETURN(*output_padding, n.attr_ints("output_padding", std::vector<int64_t>(spatial, 0)));
  if (output_padding->size() != spatial)
    return core::invalid_model(
        core::str_cat(n.describe(), ": output_padding has ", output_padding->size(), " values, expected ", spatial));
  for (int64_t v : *output_padding)
    if (v < 0 || v > (int64_t{1} << 31))
      return core::invalid_model(core::str_cat(n.describe(), ": output_padding value ", v, " is out of range"));
  output_shape->reset();
  if (n.has_attr("output_shape")) {
    KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> os, n.attr_ints("output_shape"));
    // Exporters write either the spatial sizes or the full N, C, spatial... shape.
    if (os.size() == spatial + 2) os.erase(os.begin(), os.begin() + 2);
    if (os.size() != spatial)
      return core::invalid_model(
          core::str_cat(n.describe(), ": output_shape has ", os.size(), " values, expected ", spatial));
    for (int64_t v : os)
      if (v < 0 || v > (int64_t{1} << 40))
        return core::invalid_model(core::str_cat(n.describe(), ": output_shape value ", v, " is out of range"));
    *output_shape = std::move(os);
  }
  return core::Status::ok();
}

core::Result<std::optional<WindowAttrs>> read_fused_max_pool(const Node& n) {
  if (!n.has_attr("pool_kernel_shape")) {
    for (const char* a : {"pool_strides", "pool_pads", "pool_ceil_mode", "pool_dilations", "pool_auto_pad"})
      if (n.has_attr(a))
        return core::invalid_model(core::str_cat(n.describe(), ": ", a, " without pool_kernel_shape"));
    return std::optional<WindowAttrs>();
  }
  KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, n.attr_ints("pool_kernel_shape"));
  KESTREL_ASSIGN_OR_RETURN(WindowAttrs w, read_window_attrs(n, std::move(kernel), true, "pool_"));
  if (core::Status st = check_fused_max_pool(w, "pool_"); !st.is_ok())
    return core::invalid_model(core::str_cat(n.describe(), ": ", st.message()));
  return std::optional<WindowAttrs>(std::move(w));
}

namespace {

Status infer_conv_transpose(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(ConvSetup s, conv_setup(ctx));
  if (s.rank < 0) {
    ctx.set_output(0, ctx.input_dtype(0), Shape::unknown_rank());
    return Status::ok();
  }
  const size_t spatial = static_cast<size_t>(s.rank - 2);
  std::vector<int64_t> output_padding;
  std::optional<std::vector<int64_t>> output_shape;
  KESTREL_RETURN_IF_ERROR(read_conv_transpose_extras(ctx.node(), spatial, &output_padding, &output_shape));
  const Shape& xs = ctx.input_shape(0);
  const Shape& ws = ctx.input_shape(1);
  Dim c = xs.rank_known() ? xs[1] : Dim::unknown();
  Dim wc = ws.rank_known() ? ws[0] : Dim::unknown();
  Dim mg = ws.rank_known() ? ws[1] : Dim::unknown();
  if (c.known() && c.value % s.group != 0)
    return ctx.fail("input channels ", c.value, " are not divisible by group ", s.group);
  if (c.known() && wc.known() && c.value != wc.value)
    return ctx.fail("X has ", c.value, " channels but W ", ws.to_string(), " expects ", wc.value);
  Dim m = mg.known() ? Dim(mg.value * s.group) : Dim::unknown();
  if (ctx.has_input(2)) {
    const Shape& bs = ctx.input_shape(2);
    if (bs.rank_known() && bs.rank() == 1 && bs[0].known() && m.known() && bs[0].value != m.value)
      return ctx.fail("bias B has ", bs[0].value, " elements, output has ", m.value, " channels");
  }
  std::vector<Dim> out(static_cast<size_t>(s.rank));
  out[0] = xs.rank_known() ? xs[0] : Dim::unknown();
  out[1] = m;
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t axis = static_cast<int64_t>(i) + 2;
    if (!s.window || !xs.rank_known() || !xs[axis].known()) {
      if (output_shape) out[i + 2] = Dim((*output_shape)[i]);
      continue;
    }
    auto w = transpose_window(*s.window, i, xs[axis].value, output_padding[i],
                              output_shape ? std::optional<int64_t>((*output_shape)[i]) : std::nullopt);
    if (!w.is_ok()) return ctx.fail(w.status().message());
    out[i + 2] = Dim(w->out);
  }
  ctx.set_output(0, ctx.input_dtype(0), Shape(std::move(out)));
  return Status::ok();
}

}  // namespace

namespace {

// FusedConv: Conv's inputs and attributes, optional residual Z (input 3, the output's shape), optional
// per-image channel scale S of X (input 4, [N, C, 1, 1]), an activation and an optional MaxPool of the result
// (no Z or S then).
Status infer_fused_conv(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(read_fused_activation(ctx.node()).status());
  KESTREL_ASSIGN_OR_RETURN(std::optional<WindowAttrs> pool, read_fused_max_pool(ctx.node()));
  KESTREL_RETURN_IF_ERROR(infer_conv(ctx));
  if (ctx.has_input(4)) {
    if (pool) return ctx.fail("a FusedConv with a MaxPool takes no channel scale S");
    const Shape& xs = ctx.input_shape(0);
    const Shape& ss = ctx.input_shape(4);
    if (ctx.input_dtype(4) != ctx.input_dtype(0)) return ctx.fail("channel scale S must have X's dtype");
    if (xs.rank_known() && ss.rank_known()) {
      bool ok = ss.rank() == xs.rank() && xs.rank() >= 2;
      for (int64_t i = 0; ok && i < ss.rank(); ++i) {
        const Dim& want = i < 2 ? xs[i] : Dim(1);
        ok = !(want.known() && ss[i].known() && want.value != ss[i].value);
      }
      if (!ok) return ctx.fail("channel scale S ", ss.to_string(), " must be [N, C, 1, ...] for X ", xs.to_string());
    }
  }
  if (pool) {
    if (ctx.has_input(3)) return ctx.fail("a FusedConv with a MaxPool takes no residual Z");
    const Shape& cs = ctx.outputs()[0].shape;
    if (!cs.rank_known()) return Status::ok();
    if (cs.rank() != 4) return ctx.fail("the MaxPool of a FusedConv is 2-D, the conv output is ", cs.to_string());
    std::vector<Dim> out{cs[0], cs[1], Dim::unknown(), Dim::unknown()};
    for (size_t i = 0; i < 2; ++i) {
      const Dim& d = cs[static_cast<int64_t>(i) + 2];
      if (!d.known()) continue;
      auto w = forward_window(*pool, i, d.value);
      if (!w.is_ok()) return ctx.fail("MaxPool: ", w.status().message());
      out[i + 2] = Dim(w->out);
    }
    ctx.set_output(0, ctx.outputs()[0].dtype, Shape(std::move(out)));
    return Status::ok();
  }
  KESTREL_RETURN_IF_ERROR(expect_residual_shape(ctx, 3, ctx.outputs()[0].shape));
  return Status::ok();
}

}  // namespace

core::Result<WindowAttrs> read_pointwise_depthwise_window(const Node& n) {
  auto bad = [&n](const auto&... args) { return core::invalid_model(core::str_cat(n.describe(), ": ", args...)); };
  if (!n.has_attr("kernel_shape")) return bad("kernel_shape (the depthwise kernel, k x k) is required");
  KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, n.attr_ints("kernel_shape"));
  if (kernel.size() != 2 || kernel[0] != kernel[1])
    return bad("kernel_shape must be 2 equal values (k x k), is [", core::join(kernel), "]");
  KESTREL_ASSIGN_OR_RETURN(WindowAttrs w, read_window_attrs(n, std::move(kernel), false));
  if (w.auto_pad != AutoPad::kNotSet) return bad("auto_pad must be NOTSET (explicit pads)");
  for (int64_t d : w.dilations)
    if (d != 1) return bad("dilations must be 1, are [", core::join(w.dilations), "]");
  if (w.strides[0] != w.strides[1]) return bad("strides must be 2 equal values, are [", core::join(w.strides), "]");
  return w;
}

namespace {

// kestrel.FusedPointwiseDepthwise: Y = act3(Conv1x1(act2(DW(act1(Conv1x1(X, W1, B1)), W2, B2)), W3, B3) + Z),
// the expansion (inputs 1-2, activation1) and the projection (inputs 5-7, activation3) each optional, but not
// both absent. Inputs: 0 X [N, C, H, W] ([N, M, H, W] without W1: the middle conv reads X), 1 W1 [M, C, 1, 1],
// 2 B1 [M], 3 W2 [M, M / group, k, k], 4 B2 [M], 5 W3 [P, M, 1, 1], 6 B3 [P], 7 Z (Y's shape), 8 W4 [P, C, 1, 1],
// 9 B4 [P]. `group` (the middle conv's, optional) defaults to M: depthwise, W2 [M, 1, k, k]. W4 / B4: a shortcut
// 1x1 conv of X with the middle conv's stride and no pads (RegNet's downsampling blocks), added in Z's place:
// Y = act3(Conv1x1(...) + B3 + Conv1x1_stride(X, W4) + B4); it needs W3 and no Z.
Status infer_fused_pointwise_depthwise(InferContext& ctx) {
  const Node& n = ctx.node();
  for (const char* a : {"activation1", "activation2", "activation3"})
    KESTREL_RETURN_IF_ERROR(read_fused_activation(n, a).status());
  std::optional<int64_t> group;  // unset: M (depthwise)
  if (n.has_attr("group")) {
    auto g = ctx.attr_int("group");
    if (!g.is_ok()) return ctx.fail("group: ", g.status().message());
    if (*g < 1) return ctx.fail("group must be >= 1, is ", *g);
    group = *g;
  }
  KESTREL_ASSIGN_OR_RETURN(WindowAttrs window, read_pointwise_depthwise_window(n));
  if (!ctx.has_input(3)) return ctx.fail("the depthwise weight W2 (input 3) is required");
  const bool expand = ctx.has_input(1), project = ctx.has_input(5);
  if (!expand) {
    if (ctx.has_input(2)) return ctx.fail("B1 (input 2) is given without W1 (input 1)");
    if (n.has_attr("activation1") || n.has_attr("activation1_params"))
      return ctx.fail("activation1 is given without W1 (input 1)");
    // Nothing left to fuse: the node would be one depthwise conv, which Conv / kestrel.FusedConv express.
    if (!project)
      return ctx.fail("needs W1 (input 1), W3 (input 5) or both: without either it is a plain depthwise conv");
  }
  if (!project) {
    if (ctx.has_input(6)) return ctx.fail("B3 (input 6) is given without W3 (input 5)");
    if (ctx.has_input(7)) return ctx.fail("the residual Z (input 7) is given without W3 (input 5)");
    if (n.has_attr("activation3") || n.has_attr("activation3_params"))
      return ctx.fail("activation3 is given without W3 (input 5)");
  }
  const bool shortcut = ctx.has_input(8);
  if (shortcut && !project) return ctx.fail("the shortcut W4 (input 8) is given without W3 (input 5)");
  if (shortcut && ctx.has_input(7))
    return ctx.fail("the shortcut W4 (input 8) and the residual Z (input 7) exclude each other");
  if (ctx.has_input(9) && !shortcut) return ctx.fail("B4 (input 9) is given without W4 (input 8)");
  KESTREL_RETURN_IF_ERROR(check_same_dtypes(ctx));
  static const char* const kNames[] = {"X", "W1", "B1", "W2", "B2", "W3", "B3", "Z", "W4", "B4"};
  // Shapes: rank checks, then every known dim against what the others say.
  for (size_t i : {size_t{0}, size_t{1}, size_t{3}, size_t{5}, size_t{7}, size_t{8}}) {
    if (!ctx.has_input(i)) continue;
    const Shape& s = ctx.input_shape(i);
    if (s.rank_known() && s.rank() != 4)
      return ctx.fail(kNames[i], " (input ", i, ") must have rank 4, is ", s.to_string());
  }
  for (size_t i : {size_t{2}, size_t{4}, size_t{6}, size_t{9}}) {
    if (!ctx.has_input(i)) continue;
    const Shape& s = ctx.input_shape(i);
    if (s.rank_known() && s.rank() != 1)
      return ctx.fail("bias ", kNames[i], " (input ", i, ") must be 1-D, is ", s.to_string());
  }
  auto dim = [&](size_t i, int64_t axis) -> Dim {
    if (!ctx.has_input(i)) return Dim::unknown();
    const Shape& s = ctx.input_shape(i);
    return s.rank_known() && axis < s.rank() ? s[axis] : Dim::unknown();
  };
  // Every known value of one quantity (named by `what`) must agree; returns the known one, if any.
  auto unify = [&](const char* what, std::initializer_list<std::pair<size_t, int64_t>> where) -> core::Result<Dim> {
    Dim known = Dim::unknown();
    size_t from = 0;
    int64_t from_axis = 0;
    for (auto [i, axis] : where) {
      Dim d = dim(i, axis);
      if (!d.known()) continue;
      if (known.known() && d.value != known.value)
        return ctx.fail(what, ": ", kNames[from], " ", ctx.input_shape(from).to_string(), " says ", known.value,
                        " (dim ", from_axis, ") but ", kNames[i], " ", ctx.input_shape(i).to_string(), " says ",
                        d.value, " (dim ", axis, ")");
      if (!known.known()) known = d, from = i, from_axis = axis;
    }
    return known;
  };
  const int64_t k = window.kernel[0];
  struct Fixed {
    size_t i;
    int64_t axis, want;
  };
  // W2's dim 1 is 1 when depthwise; with a `group`, M / group (checked below, once M is known).
  const Fixed fixed[] = {{1, 2, 1}, {1, 3, 1}, {3, 1, 1}, {3, 2, k}, {3, 3, k},
                         {5, 2, 1}, {5, 3, 1}, {8, 2, 1}, {8, 3, 1}};
  for (const auto& [i, axis, want] : fixed) {
    if (group && i == 3 && axis == 1) continue;
    Dim d = dim(i, axis);
    if (d.known() && d.value != want)
      return ctx.fail(kNames[i], " ", ctx.input_shape(i).to_string(), " must be ",
                      i == 1   ? "[M, C, 1, 1] (a 1x1 conv)"
                      : i == 3 ? core::str_cat(group ? "[M, M / group, " : "[M, 1, ", k, ", ", k, "] (",
                                               group ? "grouped" : "depthwise", ", kernel_shape ", k, "x", k, ")")
                      : i == 5 ? "[P, M, 1, 1] (a 1x1 conv)"
                               : "[P, C, 1, 1] (a 1x1 conv)");
  }
  if (shortcut) KESTREL_RETURN_IF_ERROR(unify("the shortcut's input channels C", {{0, 1}, {8, 1}}).status());
  Dim m = Dim::unknown();
  if (expand) {
    KESTREL_RETURN_IF_ERROR(unify("input channels C", {{0, 1}, {1, 1}}).status());
    KESTREL_ASSIGN_OR_RETURN(m, unify("expanded channels M", {{1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 1}}));
  } else {  // the middle conv reads X: X's channels are its M
    KESTREL_ASSIGN_OR_RETURN(m, unify("channels M (no W1: X's channels)", {{0, 1}, {3, 0}, {4, 0}, {5, 1}}));
  }
  if (m.known() && m.value < 1) return ctx.fail("the middle conv's channels M must be >= 1, are ", m.value);
  if (group && m.known()) {
    if (m.value % *group != 0)
      return ctx.fail("group ", *group, " must divide the middle conv's channels M = ", m.value);
    Dim d = dim(3, 1);
    if (d.known() && d.value != m.value / *group)
      return ctx.fail("W2 ", ctx.input_shape(3).to_string(), " must be [", m.value, ", ", m.value / *group, ", ", k,
                      ", ", k, "] (group ", *group, ", kernel_shape ", k, "x", k, ")");
  }
  KESTREL_ASSIGN_OR_RETURN(Dim p, unify("output channels P", {{5, 0}, {6, 0}, {8, 0}, {9, 0}}));
  const Shape& xs = ctx.input_shape(0);
  const Dim unknown = Dim::unknown();
  std::vector<Dim> out{xs.rank_known() ? xs[0] : unknown, project ? p : m, unknown, unknown};
  for (size_t i = 0; i < 2; ++i) {
    Dim d = xs.rank_known() ? xs[static_cast<int64_t>(i) + 2] : unknown;
    if (!d.known()) continue;
    auto w = forward_window(window, i, d.value);
    if (!w.is_ok()) return ctx.fail("depthwise: ", w.status().message());
    out[i + 2] = Dim(w->out);
    // The shortcut (1x1, stride s, no pads) samples X at rows / columns 0, s, ..., so it must give Y's size.
    if (shortcut && (d.value - 1) / window.strides[i] + 1 != w->out)
      return ctx.fail("the shortcut W4 (1x1, stride ", window.strides[i], ", no pads) maps X's ", d.value, " to ",
                      (d.value - 1) / window.strides[i] + 1, ", the middle conv to ", w->out);
  }
  Shape ys(std::move(out));
  KESTREL_RETURN_IF_ERROR(expect_residual_shape(ctx, 7, ys));
  ctx.set_output(0, ctx.input_dtype(0), std::move(ys));
  return Status::ok();
}

}  // namespace

void register_conv_ops(OpRegistry& r) {
  add_op(r, "Conv", 2, 3, 1, 1, infer_conv, "N-d convolution with groups, dilations and padding");
  add_op(r, "ConvTranspose", 2, 3, 1, 1, infer_conv_transpose, "N-d transposed convolution");
  OpSchema fused;
  fused.domain = kKestrelDomain;
  fused.name = "FusedConv";
  fused.min_inputs = 2;
  fused.max_inputs = 5;
  fused.infer = infer_fused_conv;
  fused.doc = "activation(Conv(X * S, W, B) + Z)";
  r.add(std::move(fused));
  OpSchema pd;
  pd.domain = kKestrelDomain;
  pd.name = "FusedPointwiseDepthwise";
  // X; W2 (input 3) is required too (checked by the inference, as inputs 1 and 2 may be empty: no expansion).
  pd.min_inputs = 1;
  pd.max_inputs = 10;
  pd.infer = infer_fused_pointwise_depthwise;
  pd.doc =
      "act3(Conv1x1(act2(DepthwiseConv(act1(Conv1x1(X, W1, B1)), W2, B2)), W3, B3) + Z), expansion or projection "
      "optional (not both); the middle conv grouped with `group` (default M: depthwise); or Z replaced by a strided "
      "1x1 shortcut of X (W4, B4)";
  r.add(std::move(pd));
}

}  // namespace kestrel::ir
