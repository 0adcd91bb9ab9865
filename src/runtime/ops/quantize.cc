// Kernel bindings for the quantization ops: axis / block_size and the integer convolutions'
// window attributes -> reference kernel parameters; QLinearConv / ConvInteger / QLinearMatMul /
// MatMulInteger and Kestrel's int8 ops (kestrel.QConv, QMatMul, QAdd, QMul, QLookup, QConcat,
// QGlobalAveragePool, QMaxPool) -> the int8 kernels in kernels/cpu/{qconv,qops,qgemm} when the
// weights and quantization parameters are constants of the fast path's form (docs/quantization.md).
#include "ir/ops/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/qconv/qconv.h"
#include "kernels/cpu/qgemm/qgemm.h"
#include "kernels/cpu/qops/qops.h"
#include "ir/op_schema.h"
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


// --- int8 fast paths ---

const Tensor* const_input(const KernelCreateInfo& info, size_t i) {
  return i < info.constant_inputs.size() ? info.constant_inputs[i] : nullptr;
}
bool has_node_input(const KernelCreateInfo& info, size_t i) {
  return i < info.node.num_inputs() && info.node.input(i) != nullptr;
}
core::DType input_dtype(const KernelCreateInfo& info, size_t i) {
  return i < info.input_types.size() && info.input_types[i] ? info.input_types[i]->dtype : core::DType::kUndefined;
}
// A one-element float constant.
std::optional<double> const_scale(const KernelCreateInfo& info, size_t i) {
  const Tensor* t = const_input(info, i);
  if (!t || !core::is_float(t->dtype()) || t->num_elements() != 1) return std::nullopt;
  double v = t->element_as_double(0);
  if (!std::isfinite(v) || !(v > 0)) return std::nullopt;
  return v;
}
// A one-element u8 constant, or 0 when the input is absent.
std::optional<int32_t> const_zp_u8(const KernelCreateInfo& info, size_t i) {
  if (!has_node_input(info, i)) return 0;
  const Tensor* t = const_input(info, i);
  if (!t || t->dtype() != core::DType::kU8 || t->num_elements() != 1) return std::nullopt;
  return static_cast<int32_t>(t->data<uint8_t>()[0]);
}
// Absent, or a constant of zeros (symmetric weights).
bool zero_or_absent(const KernelCreateInfo& info, size_t i) {
  if (!has_node_input(info, i)) return true;
  const Tensor* t = const_input(info, i);
  if (!t || t->dtype() == core::DType::kString) return false;
  for (int64_t j = 0; j < t->num_elements(); ++j)
    if (t->element_as_double(j) != 0) return false;
  return true;
}
// Per-channel (n values) or per-tensor positive finite scales, as n doubles.
std::optional<std::vector<double>> const_scales(const KernelCreateInfo& info, size_t i, int64_t n) {
  const Tensor* t = const_input(info, i);
  if (!t || !core::is_float(t->dtype()) || (t->num_elements() != 1 && t->num_elements() != n)) return std::nullopt;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    v[static_cast<size_t>(j)] = t->element_as_double(t->num_elements() == 1 ? 0 : j);
    if (!std::isfinite(v[static_cast<size_t>(j)]) || !(v[static_cast<size_t>(j)] > 0)) return std::nullopt;
  }
  return v;
}

struct OutClamp {
  int32_t lo = 0, hi = 255;
};
Result<OutClamp> read_out_clamp(const KernelCreateInfo& info) {
  OutClamp c;
  if (info.node.domain() != ir::kKestrelDomain) return c;
  KESTREL_ASSIGN_OR_RETURN(int64_t lo, info.node.attr_int("out_min", 0));
  KESTREL_ASSIGN_OR_RETURN(int64_t hi, info.node.attr_int("out_max", 255));
  if (lo < 0 || hi > 255 || lo > hi) return info.fail("out_min / out_max must satisfy 0 <= ", lo, " <= ", hi, " <= 255");
  c.lo = static_cast<int32_t>(lo);
  c.hi = static_cast<int32_t>(hi);
  return c;
}

// Clamps a u8 tensor in place (the reference path of the kestrel ops' fused clamp).
void clamp_u8(Tensor& y, const OutClamp& c) {
  if (c.lo == 0 && c.hi == 255) return;
  uint8_t* p = y.data<uint8_t>();
  for (int64_t i = 0; i < y.num_elements(); ++i)
    p[i] = static_cast<uint8_t>(std::min<int32_t>(std::max<int32_t>(p[i], c.lo), c.hi));
}

// One scale, and a u8 zero point (or none) for a u8 quantized tensor: the fast Q / DQ loops.
bool per_tensor_u8(const Tensor& scale, const Tensor* zp, core::DType qtype) {
  return qtype == core::DType::kU8 && scale.num_elements() == 1 &&
         (!zp || (zp->dtype() == core::DType::kU8 && zp->num_elements() == 1));
}

// Input positions of the integer convolutions.
struct IntConvSlots {
  size_t x = 0, x_scale = 1, x_zp = 2, w = 3, w_scale = 4, w_zp = 5, y_scale = 6, y_zp = 7, bias = 8;
  bool requantized = true;  // false: ConvInteger / MatMulInteger (int32 output, no scales)
};
constexpr IntConvSlots kQLinearSlots{};
constexpr IntConvSlots kIntegerSlots{0, 99, 2, 1, 99, 3, 99, 99, 99, false};

class FastQConvKernel final : public OpKernel {
 public:
  FastQConvKernel(std::unique_ptr<kernels::cpu::QConv> conv, ir::IntConvWindow window, core::Dims kernel, int64_t m)
      : conv_(std::move(conv)), window_(std::move(window)), kernel_(std::move(kernel)), m_(m) {}

  Status run(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    if (x.dtype() != core::DType::kU8 || x.rank() != static_cast<int64_t>(kernel_.size()) + 2)
      return core::invalid_argument(core::str_cat("int8 conv: x must be u8 of rank ", kernel_.size() + 2, ", is ",
                                                  x.type_string()));
    if (x.dims() != last_x_) KESTREL_RETURN_IF_ERROR(plan(x));
    const bool one_d = kernel_.size() == 1;
    const int64_t want[4] = {x.dim(0), m_, one_d ? shape_.ow : shape_.oh, shape_.ow};
    const size_t rank = one_d ? 3 : 4;
    if (y.dims().size() != rank || !std::equal(want, want + rank, y.dims().begin()))
      return core::invalid_argument(core::str_cat("int8 conv: output ", y.type_string(), " does not match the geometry"));
    return conv_->run(shape_, x.data<uint8_t>(), y.data<uint8_t>(), ctx.pool());
  }
  const char* impl_name() const override { return last_x_.empty() ? conv_->impl_name() : conv_->impl_name(shape_); }

 private:
  Status plan(const Tensor& x) {
    core::Dims in(x.dims().begin() + 2, x.dims().end());
    KESTREL_ASSIGN_OR_RETURN(ir::IntConvGeometry g, ir::int_conv_geometry(window_, in, kernel_));
    kernels::cpu::QConvShape s;
    s.n = x.dim(0);
    s.c = x.dim(1);
    const bool one_d = kernel_.size() == 1;
    s.ih = one_d ? 1 : in[0];
    s.iw = one_d ? in[0] : in[1];
    s.oh = one_d ? 1 : g.out[0];
    s.ow = one_d ? g.out[0] : g.out[1];
    s.sh = one_d ? 1 : g.strides[0];
    s.sw = g.strides.back();
    s.dh = one_d ? 1 : g.dilations[0];
    s.dw = g.dilations.back();
    s.pad_top = one_d ? 0 : g.pads_begin[0];
    s.pad_left = g.pads_begin.back();
    shape_ = s;
    last_x_ = x.dims();
    return Status::ok();
  }

  std::unique_ptr<kernels::cpu::QConv> conv_;
  ir::IntConvWindow window_;
  core::Dims kernel_;
  int64_t m_;
  core::Dims last_x_;
  kernels::cpu::QConvShape shape_;
};

// The fast int8 convolution, or null when the node is not of its form (u8 x, constant s8 weights
// with zero zero points, constant per-tensor activation parameters, constant int32 bias).
Result<std::unique_ptr<OpKernel>> try_fast_qconv(const KernelCreateInfo& info, const IntConvSlots& sl,
                                                 const OutClamp& clamp) {
  if (info.options.reference_only || input_dtype(info, sl.x) != core::DType::kU8) return std::unique_ptr<OpKernel>();
  const Tensor* w = const_input(info, sl.w);
  if (!w || w->dtype() != core::DType::kI8 || (w->rank() != 3 && w->rank() != 4)) return std::unique_ptr<OpKernel>();
  if (!zero_or_absent(info, sl.w_zp)) return std::unique_ptr<OpKernel>();
  std::optional<int32_t> x_zp = const_zp_u8(info, sl.x_zp);
  if (!x_zp) return std::unique_ptr<OpKernel>();
  const int64_t m = w->dim(0);
  kernels::cpu::QConvSpec spec;
  spec.m = m;
  spec.c_per_group = w->dim(1);
  spec.kh = w->rank() == 4 ? w->dim(2) : 1;
  spec.kw = w->dim(-1);
  spec.x_zp = static_cast<uint8_t>(*x_zp);
  spec.w = w->data<int8_t>();
  spec.isa = info.options.isa;
  if (sl.requantized) {
    auto xs = const_scale(info, sl.x_scale);
    auto ys = const_scale(info, sl.y_scale);
    auto ws = const_scales(info, sl.w_scale, m);
    auto yz = const_zp_u8(info, sl.y_zp);
    if (!xs || !ys || !ws || !yz || !has_node_input(info, sl.y_zp) || input_dtype(info, sl.y_zp) != core::DType::kU8)
      return std::unique_ptr<OpKernel>();
    spec.scale.resize(static_cast<size_t>(m));
    for (int64_t c = 0; c < m; ++c)
      spec.scale[static_cast<size_t>(c)] = static_cast<float>(*xs * (*ws)[static_cast<size_t>(c)] / *ys);
    spec.y_zp = *yz;
    spec.out_min = clamp.lo;
    spec.out_max = clamp.hi;
    if (has_node_input(info, sl.bias)) {
      const Tensor* b = const_input(info, sl.bias);
      if (!b || b->dtype() != core::DType::kI32 || b->num_elements() != m) return std::unique_ptr<OpKernel>();
      spec.bias.assign(b->data<int32_t>(), b->data<int32_t>() + m);
    }
    spec.out = kernels::cpu::QOut::kU8;
  } else {
    spec.out = kernels::cpu::QOut::kI32;
  }
  KESTREL_ASSIGN_OR_RETURN(ir::IntConvWindow window, read_window(info, sl.x, sl.w));
  spec.group = window.group;
  if (spec.m % spec.group != 0) return info.fail("w has ", m, " output channels, not a multiple of group ", spec.group);
  core::Dims kernel(w->dims().begin() + 2, w->dims().end());
  auto conv = kernels::cpu::QConv::create(spec);
  if (!conv.is_ok()) return std::unique_ptr<OpKernel>();  // e.g. K too large: the reference kernel runs it
  return std::unique_ptr<OpKernel>(
      std::make_unique<FastQConvKernel>(std::move(*conv), std::move(window), std::move(kernel), m));
}

class FastQMatMulKernel final : public OpKernel {
 public:
  FastQMatMulKernel(kernels::cpu::PackedBS8 b, uint8_t a_zp, bool u8_out, std::vector<float> scale,
                    std::vector<int32_t> bias, int32_t y_zp, OutClamp clamp)
      : b_(std::move(b)), a_zp_(a_zp), u8_out_(u8_out), scale_(std::move(scale)), bias_(std::move(bias)) {
    using kernels::cpu::QgemmOutput;
    ep_.output = u8_out_ ? QgemmOutput::kU8 : QgemmOutput::kInt32;
    ep_.per_column = true;
    ep_.scale = u8_out_ ? scale_.data() : nullptr;
    ep_.bias = bias_.empty() ? nullptr : bias_.data();
    ep_.out_zero_point = y_zp;
    ep_.out_min = clamp.lo;
    ep_.out_max = clamp.hi;
    switch (b_.isa()) {
      case kernels::cpu::QgemmIsa::kAvx512Vnni:
        name_ = "qgemm.avx512vnni";
        break;
      case kernels::cpu::QgemmIsa::kAvxVnni:
        name_ = "qgemm.avxvnni";
        break;
      case kernels::cpu::QgemmIsa::kAvx2:
        name_ = "qgemm.avx2";
        break;
      default:
        name_ = "qgemm.scalar";
    }
  }
  Status run(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    Tensor& y = ctx.output(0);
    const int64_t k = b_.k(), n = b_.n();
    if (a.dtype() != core::DType::kU8 || a.rank() < 1 || a.dim(-1) != k)
      return core::invalid_argument(core::str_cat("int8 matmul: a must be u8 [..., ", k, "], is ", a.type_string()));
    const int64_t rows = k == 0 ? 0 : a.num_elements() / k;
    if (y.num_elements() != rows * n)
      return core::invalid_argument(core::str_cat("int8 matmul: output ", y.type_string(), " does not match"));
    return kernels::cpu::qgemm_u8s8(rows, n, k, a.data<uint8_t>(), k, a_zp_, b_, y.data<uint8_t>(), n, ep_,
                                    kernels::cpu::QgemmContext{ctx.pool()});
  }
  const char* impl_name() const override { return name_; }

 private:
  kernels::cpu::PackedBS8 b_;
  uint8_t a_zp_;
  bool u8_out_;
  std::vector<float> scale_;
  std::vector<int32_t> bias_;
  kernels::cpu::QgemmEpilogue ep_;
  const char* name_ = "qgemm";
};

// The fast int8 matmul (u8 a, constant 2-D s8 b [K, N] with zero zero points), or null.
Result<std::unique_ptr<OpKernel>> try_fast_qmatmul(const KernelCreateInfo& info, const IntConvSlots& sl,
                                                   const OutClamp& clamp) {
  if (info.options.reference_only || input_dtype(info, sl.x) != core::DType::kU8) return std::unique_ptr<OpKernel>();
  const Tensor* b = const_input(info, sl.w);
  if (!b || b->dtype() != core::DType::kI8 || b->rank() != 2) return std::unique_ptr<OpKernel>();
  if (info.input_types[sl.x] && info.input_types[sl.x]->shape.rank_known() && info.input_types[sl.x]->shape.rank() < 2)
    return std::unique_ptr<OpKernel>();  // 1-D a: the output drops the row axis; leave it to the reference kernel
  if (!zero_or_absent(info, sl.w_zp)) return std::unique_ptr<OpKernel>();
  std::optional<int32_t> a_zp = const_zp_u8(info, sl.x_zp);
  if (!a_zp) return std::unique_ptr<OpKernel>();
  const int64_t k = b->dim(0), n = b->dim(1);
  if (k > 65536) return std::unique_ptr<OpKernel>();
  std::vector<float> scale;
  std::vector<int32_t> bias;
  int32_t y_zp = 0;
  if (sl.requantized) {
    auto as = const_scale(info, sl.x_scale);
    auto ys = const_scale(info, sl.y_scale);
    auto bs = const_scales(info, sl.w_scale, n);
    auto yz = const_zp_u8(info, sl.y_zp);
    if (!as || !ys || !bs || !yz || input_dtype(info, sl.y_zp) != core::DType::kU8) return std::unique_ptr<OpKernel>();
    scale.resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) scale[static_cast<size_t>(j)] = static_cast<float>(*as * (*bs)[static_cast<size_t>(j)] / *ys);
    y_zp = *yz;
    if (has_node_input(info, sl.bias)) {
      const Tensor* t = const_input(info, sl.bias);
      if (!t || t->dtype() != core::DType::kI32 || t->num_elements() != n) return std::unique_ptr<OpKernel>();
      bias.assign(t->data<int32_t>(), t->data<int32_t>() + n);
    }
  }
  auto packed = kernels::cpu::pack_b_s8(k, n, b->data<int8_t>(), n, false);
  if (!packed.is_ok()) return std::unique_ptr<OpKernel>();
  return std::unique_ptr<OpKernel>(std::make_unique<FastQMatMulKernel>(
      std::move(*packed), static_cast<uint8_t>(*a_zp), sl.requantized, std::move(scale), std::move(bias), y_zp, clamp));
}

// One-element parameters read at run time (u8 zero point, positive scale).
Status read_q_param(const Tensor& scale, const Tensor& zp, float* s, int32_t* z) {
  if (scale.num_elements() != 1 || zp.num_elements() != 1 || zp.dtype() != core::DType::kU8 ||
      !core::is_float(scale.dtype()))
    return core::invalid_argument("int8 op: scale and zero point must be one-element float / u8 tensors");
  *s = static_cast<float>(scale.element_as_double(0));
  *z = zp.data<uint8_t>()[0];
  if (!(*s > 0.f) || !std::isfinite(*s)) return core::invalid_argument("int8 op: scale must be finite and > 0");
  return Status::ok();
}

// Reference QMatMul with bias: exact int32 sums, then the reference requantization.
Status ref_qmatmul(const Tensor& a, const Tensor& as, const Tensor& az, const Tensor& b, const Tensor& bs,
                   const Tensor& bz, const Tensor& ys, const Tensor& yz, const Tensor* bias, const OutClamp& c,
                   Tensor& y) {
  if (!bias) {
    KESTREL_RETURN_IF_ERROR(ref::qlinear_matmul(a, as, az, b, bs, bz, ys, yz, y));
    clamp_u8(y, c);
    return Status::ok();
  }
  KESTREL_ASSIGN_OR_RETURN(Tensor acc, Tensor::allocate(core::DType::kI32, y.dims()));
  KESTREL_RETURN_IF_ERROR(ref::matmul_integer(a, b, &az, &bz, acc));
  const int64_t n = b.dim(-1);
  if (bias->num_elements() != n || bias->dtype() != core::DType::kI32 || as.num_elements() != 1 ||
      ys.num_elements() != 1 || yz.num_elements() != 1 || (bs.num_elements() != 1 && bs.num_elements() != n))
    return core::invalid_argument("QMatMul: bias must be int32 [N]; a / y parameters one value, b_scale 1 or N");
  const double sa = as.element_as_double(0), sy = ys.element_as_double(0);
  const int64_t zy = yz.element_as_int64(0);
  for (int64_t i = 0; i < acc.num_elements(); ++i) {
    const int64_t j = i % n;
    const double sb = bs.element_as_double(bs.num_elements() == 1 ? 0 : j);
    const int64_t v = static_cast<int64_t>(acc.data<int32_t>()[i]) + bias->data<int32_t>()[j];
    y.data<uint8_t>()[i] = static_cast<uint8_t>(ref::requantize(v, sa * sb / sy, zy, c.lo, c.hi));
  }
  return Status::ok();
}

Result<kernels::cpu::QMaxPoolShape> qmaxpool_shape(const ir::WindowAttrs& a, const Tensor& x) {
  if (x.rank() != 4 || x.dtype() != core::DType::kU8)
    return core::invalid_argument(core::str_cat("QMaxPool: x must be u8 [N, C, H, W], is ", x.type_string()));
  kernels::cpu::QMaxPoolShape s;
  KESTREL_ASSIGN_OR_RETURN(ir::AxisWindow h, ir::forward_window(a, 0, x.dim(2)));
  KESTREL_ASSIGN_OR_RETURN(ir::AxisWindow w, ir::forward_window(a, 1, x.dim(3)));
  s.planes = x.dim(0) * x.dim(1);
  s.ih = x.dim(2);
  s.iw = x.dim(3);
  s.oh = h.out;
  s.ow = w.out;
  s.kh = a.kernel[0];
  s.kw = a.kernel[1];
  s.sh = a.strides[0];
  s.sw = a.strides[1];
  s.dh = a.dilations[0];
  s.dw = a.dilations[1];
  s.pad_top = h.pad_begin;
  s.pad_left = w.pad_begin;
  return s;
}

void register_int8_kernels(KernelRegistry& r) {
  r.add(ir::kKestrelDomain, "QConv", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(OutClamp clamp, read_out_clamp(info));
    KESTREL_ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> fast, try_fast_qconv(info, kQLinearSlots, clamp));
    if (fast) return fast;
    KESTREL_ASSIGN_OR_RETURN(ir::IntConvWindow window, read_window(info, 0, 3));
    return make_kernel([window, clamp](KernelContext& ctx) -> Status {
      KESTREL_ASSIGN_OR_RETURN(ref::IntConvParams p, conv_params(window, ctx.input(0), ctx.input(3)));
      KESTREL_RETURN_IF_ERROR(ref::qlinear_conv(p, ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3),
                                                ctx.input(4), ctx.input(5), ctx.input(6), ctx.input(7),
                                                ctx.input_or_null(8), ctx.output(0)));
      clamp_u8(ctx.output(0), clamp);
      return Status::ok();
    });
  });
  r.add(ir::kKestrelDomain, "QMatMul", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(OutClamp clamp, read_out_clamp(info));
    KESTREL_ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> fast, try_fast_qmatmul(info, kQLinearSlots, clamp));
    if (fast) return fast;
    return make_kernel([clamp](KernelContext& ctx) -> Status {
      return ref_qmatmul(ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4), ctx.input(5),
                         ctx.input(6), ctx.input(7), ctx.input_or_null(8), clamp, ctx.output(0));
    });
  });
  for (const char* op : {"QAdd", "QMul"}) {
    const auto kind = std::string(op) == "QAdd" ? kernels::cpu::QBinaryOp::kAdd : kernels::cpu::QBinaryOp::kMul;
    r.add(ir::kKestrelDomain, op, [kind](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
      KESTREL_ASSIGN_OR_RETURN(OutClamp clamp, read_out_clamp(info));
      const core::Isa isa = info.options.isa;
      return make_kernel(
          [kind, clamp, isa](KernelContext& ctx) -> Status {
            kernels::cpu::QBinaryParams p;
            p.op = kind;
            KESTREL_RETURN_IF_ERROR(read_q_param(ctx.input(1), ctx.input(2), &p.a_scale, &p.a_zp));
            KESTREL_RETURN_IF_ERROR(read_q_param(ctx.input(4), ctx.input(5), &p.b_scale, &p.b_zp));
            KESTREL_RETURN_IF_ERROR(read_q_param(ctx.input(6), ctx.input(7), &p.y_scale, &p.y_zp));
            p.lo = clamp.lo;
            p.hi = clamp.hi;
            const Tensor& a = ctx.input(0);
            const Tensor& b = ctx.input(3);
            Tensor& y = ctx.output(0);
            if (a.dtype() != core::DType::kU8 || b.dtype() != core::DType::kU8)
              return core::invalid_argument("QAdd / QMul: a and b must be u8");
            return kernels::cpu::qbinary_u8(p, a.data<uint8_t>(), a.dims(), b.data<uint8_t>(), b.dims(),
                                            y.data<uint8_t>(), y.dims(), ctx.pool(), isa);
          },
          "qops.binary");
    });
  }
  r.add(ir::kKestrelDomain, "QLookup", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    const core::Isa isa = info.options.isa;
    return make_kernel(
        [isa](KernelContext& ctx) -> Status {
          const Tensor& x = ctx.input(0);
          const Tensor& t = ctx.input(1);
          if (x.dtype() != core::DType::kU8 || t.dtype() != core::DType::kU8 || t.num_elements() != 256)
            return core::invalid_argument("QLookup: x must be u8 and the table u8 [256]");
          kernels::cpu::qlookup_u8(t.data<uint8_t>(), x.data<uint8_t>(), ctx.output(0).data<uint8_t>(),
                                   x.num_elements(), ctx.pool(), isa);
          return Status::ok();
        },
        "qops.lookup");
  });
  r.add(ir::kKestrelDomain, "QConcat", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(int64_t axis, info.node.attr_int("axis"));
    const size_t n_in = info.node.num_inputs();
    if (n_in < 5 || (n_in - 2) % 3 != 0) return info.fail("QConcat needs y_scale, y_zero_point and (x, scale, zp) triples");
    auto ys = const_scale(info, 0);
    auto yz = const_zp_u8(info, 1);
    if (!ys || !yz) return info.unsupported("y_scale / y_zero_point must be one-element constants");
    // One table per input (empty when the parameters equal the output's: a plain copy).
    std::vector<std::vector<uint8_t>> tables;
    for (size_t i = 2; i < n_in; i += 3) {
      auto xs = const_scale(info, i + 1);
      auto xz = const_zp_u8(info, i + 2);
      if (!xs || !xz) return info.unsupported("scales / zero points of the inputs must be one-element constants");
      if (*xs == *ys && *xz == *yz) {
        tables.emplace_back();
      } else {
        tables.emplace_back(256);
        kernels::cpu::qrequant_table(*xs, *xz, *ys, *yz, 0, 255, tables.back().data());
      }
    }
    const core::Isa isa = info.options.isa;
    return make_kernel(
        [axis, tables, isa](KernelContext& ctx) -> Status {
          Tensor& y = ctx.output(0);
          const int64_t r = y.rank();
          const int64_t ax = axis < 0 ? axis + r : axis;
          if (ax < 0 || ax >= r) return core::invalid_argument("QConcat: axis out of range");
          int64_t outer = 1;
          for (int64_t d = 0; d < ax; ++d) outer *= y.dim(d);
          const int64_t y_inner = outer == 0 ? 0 : y.num_elements() / outer;
          int64_t off = 0;
          for (size_t t = 0; t < tables.size(); ++t) {
            const Tensor& x = ctx.input(2 + 3 * t);
            if (x.dtype() != core::DType::kU8 || x.rank() != r)
              return core::invalid_argument("QConcat: inputs must be u8 of y's rank");
            const int64_t inner = outer == 0 ? 0 : x.num_elements() / outer;
            if (off + inner > y_inner) return core::invalid_argument("QConcat: inputs do not fit the output");
            const uint8_t* src = x.data<uint8_t>();
            uint8_t* dst = y.data<uint8_t>() + off;
            for (int64_t o = 0; o < outer; ++o) {
              if (tables[t].empty())
                std::memcpy(dst + o * y_inner, src + o * inner, static_cast<size_t>(inner));
              else  // the vectorized lookup: ShuffleNet's passthrough halves took 11% of its int8 time bytewise
                kernels::cpu::qlookup_u8(tables[t].data(), src + o * inner, dst + o * y_inner, inner, ctx.pool(), isa);
            }
            off += inner;
          }
          if (off != y_inner) return core::invalid_argument("QConcat: inputs do not fill the output");
          return Status::ok();
        },
        "qops.concat");
  });
  r.add(ir::kKestrelDomain, "QGlobalAveragePool",
        [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
          const core::Isa isa = info.options.isa;
          return make_kernel(
              [isa](KernelContext& ctx) -> Status {
                const Tensor& x = ctx.input(0);
                float xs, ys;
                int32_t xz, yz;
                KESTREL_RETURN_IF_ERROR(read_q_param(ctx.input(1), ctx.input(2), &xs, &xz));
                KESTREL_RETURN_IF_ERROR(read_q_param(ctx.input(3), ctx.input(4), &ys, &yz));
                if (x.dtype() != core::DType::kU8 || x.rank() < 3)
                  return core::invalid_argument("QGlobalAveragePool: x must be u8 [N, C, ...]");
                const int64_t nc = x.dim(0) * x.dim(1);
                const int64_t hw = nc == 0 ? 0 : x.num_elements() / nc;
                if (nc == 0) return Status::ok();
                return kernels::cpu::qglobal_avg_pool_u8(x.data<uint8_t>(), nc, hw, xs, xz, ys, yz,
                                                         ctx.output(0).data<uint8_t>(), ctx.pool(), isa);
              },
              "qops.gap");
        });
  r.add(ir::kKestrelDomain, "QMaxPool", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, info.node.attr_ints("kernel_shape"));
    if (kernel.size() != 2) return info.fail("kernel_shape must have 2 values");
    KESTREL_ASSIGN_OR_RETURN(ir::WindowAttrs a, ir::read_window_attrs(info.node, kernel, true));
    const core::Isa isa = info.options.isa;
    return make_kernel(
        [a, isa](KernelContext& ctx) -> Status {
          KESTREL_ASSIGN_OR_RETURN(kernels::cpu::QMaxPoolShape s, qmaxpool_shape(a, ctx.input(0)));
          Tensor& y = ctx.output(0);
          if (y.num_elements() != s.planes * s.oh * s.ow) return core::invalid_argument("QMaxPool: output does not match");
          return kernels::cpu::qmax_pool_u8(s, ctx.input(0).data<uint8_t>(), y.data<uint8_t>(), ctx.pool(), isa);
        },
        "qops.maxpool");
  });
}

}  // namespace

void register_quantize_kernels(KernelRegistry& r) {
  register_int8_kernels(r);
  r.add("QuantizeLinear", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(ref::QuantAxisParams p, axis_params(info));
    const core::Isa isa = info.options.isa;
    return make_kernel([p, isa](KernelContext& ctx) {
      if (per_tensor_u8(ctx.input(1), ctx.input_or_null(2), ctx.output(0).dtype()) && ctx.input(0).dtype() == core::DType::kF32 &&
          ctx.input(1).dtype() == core::DType::kF32) {
        const float s = ctx.input(1).data<float>()[0];
        if (s != 0.f && std::isfinite(s)) {
          kernels::cpu::quantize_f32_u8(ctx.input(0).data<float>(), ctx.input(0).num_elements(), s,
                                        ctx.has_input(2) ? ctx.input(2).data<uint8_t>()[0] : 0,
                                        ctx.output(0).data<uint8_t>(), ctx.pool(), isa);
          return Status::ok();
        }
      }
      return ref::quantize_linear(p, ctx.input(0), ctx.input(1), ctx.input_or_null(2), ctx.output(0));
    }, "qops.quantize");  // reference kernel for per-axis or non-u8
  });
  r.add("DequantizeLinear", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(ref::QuantAxisParams p, axis_params(info));
    return make_kernel([p](KernelContext& ctx) {
      if (per_tensor_u8(ctx.input(1), ctx.input_or_null(2), ctx.input(0).dtype()) &&
          ctx.input(1).dtype() == core::DType::kF32 && ctx.output(0).dtype() == core::DType::kF32) {
        kernels::cpu::dequantize_u8_f32(ctx.input(0).data<uint8_t>(), ctx.input(0).num_elements(),
                                        ctx.input(1).data<float>()[0],
                                        ctx.has_input(2) ? ctx.input(2).data<uint8_t>()[0] : 0,
                                        ctx.output(0).data<float>(), ctx.pool());
        return Status::ok();
      }
      return ref::dequantize_linear(p, ctx.input(0), ctx.input(1), ctx.input_or_null(2), ctx.output(0));
    }, "qops.dequantize");  // reference kernel for per-axis or non-u8
  });
  r.add("DynamicQuantizeLinear", [](const KernelCreateInfo&) -> Result<std::unique_ptr<OpKernel>> {
    return make_kernel([](KernelContext& ctx) {
      return ref::dynamic_quantize_linear(ctx.input(0), ctx.output(0), ctx.output(1), ctx.output(2));
    });
  });
  r.add("MatMulInteger", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> fast, try_fast_qmatmul(info, kIntegerSlots, OutClamp{}));
    if (fast) return fast;
    return make_kernel([](KernelContext& ctx) {
      return ref::matmul_integer(ctx.input(0), ctx.input(1), ctx.input_or_null(2), ctx.input_or_null(3), ctx.output(0));
    });
  });
  r.add("QLinearMatMul", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> fast, try_fast_qmatmul(info, kQLinearSlots, OutClamp{}));
    if (fast) return fast;
    return make_kernel([](KernelContext& ctx) {
      return ref::qlinear_matmul(ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4), ctx.input(5),
                                 ctx.input(6), ctx.input(7), ctx.output(0));
    });
  });
  r.add("ConvInteger", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> fast, try_fast_qconv(info, kIntegerSlots, OutClamp{}));
    if (fast) return fast;
    KESTREL_ASSIGN_OR_RETURN(ir::IntConvWindow window, read_window(info, 0, 1));
    return make_kernel([window](KernelContext& ctx) -> Status {
      KESTREL_ASSIGN_OR_RETURN(ref::IntConvParams p, conv_params(window, ctx.input(0), ctx.input(1)));
      return ref::conv_integer(p, ctx.input(0), ctx.input(1), ctx.input_or_null(2), ctx.input_or_null(3),
                               ctx.output(0));
    });
  });
  r.add("QLinearConv", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> fast, try_fast_qconv(info, kQLinearSlots, OutClamp{}));
    if (fast) return fast;
    KESTREL_ASSIGN_OR_RETURN(ir::IntConvWindow window, read_window(info, 0, 3));
    return make_kernel([window](KernelContext& ctx) -> Status {
      KESTREL_ASSIGN_OR_RETURN(ref::IntConvParams p, conv_params(window, ctx.input(0), ctx.input(3)));
      return ref::qlinear_conv(p, ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4), ctx.input(5),
                               ctx.input(6), ctx.input(7), ctx.input_or_null(8), ctx.output(0));
    });
  });
}

}  // namespace kestrel::runtime
