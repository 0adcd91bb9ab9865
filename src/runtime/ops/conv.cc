// Kernel bindings for Conv and ConvTranspose: window attributes read once at creation; pads and
// output sizes resolved from the actual input shape at run time (auto_pad depends on it). Also the
// fast and pooled kestrel.FusedConv and kestrel.FusedPointwiseDepthwise (registered in fused.cc).
#include "kernels/reference/conv.h"

#include <array>
#include <optional>

#include "ir/op_schema.h"
#include "ir/ops/window_geometry.h"
#include "kernels/cpu/conv/conv.h"
#include "kernels/cpu/conv/conv_chain.h"
#include "kernels/cpu/conv_transpose/conv_transpose.h"
#include "kernels/cpu/gemm/sgemm.h"
#include "kernels/cpu/pool/pool.h"
#include "kernels/reference/fused.h"
#include "kernels/reference/pool.h"
#include "runtime/kernel.h"
#include "runtime/ops/fast_fused.h"
#include "runtime/ops/run_key.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;
namespace cpu = kernels::cpu;
using core::str_cat;

namespace {

struct ConvBinding {
  ir::WindowAttrs window;      // kernel is a stand-in when kernel_from_w
  bool kernel_from_w = false;  // no kernel_shape attribute: W's spatial dims are the kernel
  int64_t group = 1;
  bool transpose = false;
  std::vector<int64_t> output_padding;
  std::optional<std::vector<int64_t>> output_shape;
};

Result<ConvBinding> read_binding(const KernelCreateInfo& info, bool transpose) {
  const ir::Node& n = info.node;
  ConvBinding b;
  b.transpose = transpose;
  std::optional<std::vector<int64_t>> kernel;
  if (n.has_attr("kernel_shape")) {
    KESTREL_ASSIGN_OR_RETURN(kernel, n.attr_ints("kernel_shape"));
  }
  int64_t rank = -1;
  for (size_t i : {size_t{1}, size_t{0}})
    if (rank < 0 && i < info.input_types.size() && info.input_types[i] && info.input_types[i]->shape.rank_known())
      rank = info.input_types[i]->shape.rank();
  if (rank < 0 && kernel) rank = static_cast<int64_t>(kernel->size()) + 2;
  if (rank < 3) return info.unsupported("the rank of X and W must be known (>= 3) when the session is created");
  const size_t spatial = static_cast<size_t>(rank - 2);
  b.kernel_from_w = !kernel;
  KESTREL_ASSIGN_OR_RETURN(b.window,
                           ir::read_window_attrs(n, kernel ? *kernel : std::vector<int64_t>(spatial, 1), false));
  KESTREL_ASSIGN_OR_RETURN(b.group, n.attr_int("group", 1));
  if (b.group < 1) return info.fail("group must be >= 1, is ", b.group);
  if (transpose)
    KESTREL_RETURN_IF_ERROR(ir::read_conv_transpose_extras(n, spatial, &b.output_padding, &b.output_shape));
  return b;
}

// Resolves pads and checks that y has the shape the attributes give for these inputs. `a` is
// scratch for the window with W's kernel size; reused objects keep their vectors' capacity, so a
// kernel that resolves into per-thread objects allocates nothing after its first run.
Status resolve_into(const ConvBinding& b, const Tensor& x, const Tensor& w, const Tensor* y, ir::WindowAttrs& a,
                    ref::ConvParams* p, core::Dims* conv_dims = nullptr) {
  const size_t spatial = b.window.spatial();
  if (x.rank() != static_cast<int64_t>(spatial) + 2 || w.rank() != x.rank())
    return core::invalid_argument(
        str_cat("X ", x.type_string(), " and W ", w.type_string(), " must have rank ", spatial + 2));
  a = b.window;
  for (size_t i = 0; i < spatial; ++i) {
    int64_t k = w.dim(static_cast<int64_t>(i) + 2);
    if (b.kernel_from_w) {
      if (k < 1 || k > (int64_t{1} << 31))
        return core::invalid_argument(str_cat("W ", w.type_string(), " has a bad kernel size"));
      a.kernel[i] = k;
      if (a.dilated_kernel(i) > (int64_t{1} << 31)) return core::invalid_argument("dilated kernel is too large");
    } else if (k != a.kernel[i]) {
      return core::invalid_argument(str_cat("W ", w.type_string(), " does not match kernel_shape"));
    }
  }
  p->strides = a.strides;
  p->dilations = a.dilations;
  p->group = b.group;
  p->pads_begin.assign(spatial, 0);
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t in = x.dim(static_cast<int64_t>(i) + 2);
    core::Result<ir::AxisWindow> r =
        b.transpose ? ir::transpose_window(a, i, in, b.output_padding[i],
                                           b.output_shape ? std::optional<int64_t>((*b.output_shape)[i]) : std::nullopt)
                    : ir::forward_window(a, i, in);
    if (!r.is_ok()) return r.status();
    if (y && (y->rank() != x.rank() || y->dim(static_cast<int64_t>(i) + 2) != r->out))
      return core::internal_error(
          str_cat("output ", y->type_string(), " has the wrong size on spatial axis ", i, " (expected ", r->out, ")"));
    p->pads_begin[i] = r->pad_begin;
    if (conv_dims) (*conv_dims)[i + 2] = r->out;
  }
  if (conv_dims) {
    (*conv_dims)[0] = x.dim(0);
    (*conv_dims)[1] = w.dim(0);
  }
  return Status::ok();
}

Status resolve(const ConvBinding& b, const Tensor& x, const Tensor& w, const Tensor& y, ref::ConvParams* p) {
  ir::WindowAttrs a;
  return resolve_into(b, x, w, &y, a, p);
}

// The fast kernels' run: params resolved into per-thread objects (no allocation in steady state).
Status run_fast(const ConvBinding& b, const cpu::FastConv& c, KernelContext& ctx, const Tensor* z) {
  struct Scratch {
    ir::WindowAttrs window;
    ref::ConvParams params;
  };
  thread_local Scratch s;
  KESTREL_RETURN_IF_ERROR(resolve_into(b, ctx.input(0), ctx.input(1), &ctx.output(0), s.window, &s.params));
  return c.run(s.params, ctx.input(0), ctx.input_or_null(2), z, ctx.output(0), ctx.pool());
}

// Whether some reader of v (also through Concats, which write in place) is a depthwise or grouped
// conv: with threads those take ranges of channels, so the producer's GEMM should write ranges of
// channels too. Otherwise it writes ranges of pixels (FastConv::set_split_columns): dense convs read
// all channels of their own pixel ranges (GEMM column ranges, row strips), and a GEMM split by rows
// reads all of its input, half of it from the other core.
bool read_by_channel_groups(const ir::Value& v, int depth = 0) {
  if (depth > 4) return true;
  for (const ir::Use& u : v.uses()) {
    const ir::Node& n = *u.node;
    if ((n.op_type() == "Conv" || n.op_type() == "FusedConv") && u.input_index == 0) {
      Result<int64_t> group = n.attr_int("group", 1);
      if (!group.is_ok() || *group != 1) return true;
    } else if (n.op_type() == "Concat" && n.domain().empty()) {
      if (read_by_channel_groups(*n.output(0), depth + 1)) return true;
    }
  }
  return false;
}

// Whether every reader of v is a kestrel.FusedPointwiseDepthwise reading it as X: with threads those share their
// output rows (strips) the way FastConv::set_stem_rows_per_thread shares the stem's (the first inverted residual
// block of MobileNet-V2 / -V3 and MnasNet after the stem).
bool read_only_by_chains(const ir::Value& v) {
  if (v.is_graph_output() || v.uses().empty()) return false;
  for (const ir::Use& u : v.uses())
    if (u.node->op_type() != "FusedPointwiseDepthwise" || u.node->domain() != ir::kKestrelDomain || u.input_index != 0)
      return false;
  return true;
}

// The fast kernel applies to f32 Conv with constant 1-D / 2-D weights; null when it does not.
Result<std::optional<cpu::FastConv>> make_fast_conv(const KernelCreateInfo& info, const ConvBinding& b,
                                                    cpu::FusedActivation act) {
  if (info.options.reference_only || b.transpose || b.window.spatial() > 2) return std::optional<cpu::FastConv>();
  for (const ir::ValueType* t : info.input_types)
    if (t && t->dtype != core::DType::kF32) return std::optional<cpu::FastConv>();
  const Tensor* w = info.constant_inputs.size() > 1 ? info.constant_inputs[1] : nullptr;
  if (!w || w->dtype() != core::DType::kF32 || w->rank() != static_cast<int64_t>(b.window.spatial()) + 2 ||
      w->dim(0) % b.group != 0)
    return std::optional<cpu::FastConv>();
  // The input's plane size when the load-time shapes know it (the kernel packs for it; other sizes still run).
  int64_t plane = 0;
  const ir::ValueType* xt = info.input_types.empty() ? nullptr : info.input_types[0];
  if (xt && xt->shape.rank() == w->rank()) {
    plane = 1;
    for (int64_t i = 2; i < xt->shape.rank() && plane > 0; ++i) {
      const ir::Dim& d = xt->shape[i];
      plane = d.known() && d.value <= core::kMaxElements / plane ? plane * d.value : 0;  // 0: unknown or huge
    }
  }
  KESTREL_ASSIGN_OR_RETURN(cpu::FastConv c,
                           cpu::FastConv::create(*w, b.group, act, info.options.isa, /*allow_winograd=*/true, plane));
  c.set_split_columns(info.node.num_outputs() == 1 && !read_by_channel_groups(*info.node.output(0)));
  c.set_stem_rows_per_thread(info.node.num_outputs() == 1 && read_only_by_chains(*info.node.output(0)));
  if (info.options.bf16) KESTREL_RETURN_IF_ERROR(c.enable_bf16());
  return std::optional<cpu::FastConv>(std::move(c));
}

Result<std::unique_ptr<OpKernel>> make_conv(const KernelCreateInfo& info, bool transpose) {
  KESTREL_ASSIGN_OR_RETURN(ConvBinding b, read_binding(info, transpose));
  KESTREL_ASSIGN_OR_RETURN(std::optional<cpu::FastConv> fast, make_fast_conv(info, b, {}));
  if (fast) {
    const char* name = fast->name();
    return make_kernel(
        [b = std::move(b), c = std::move(*fast)](KernelContext& ctx) -> Status {
          return run_fast(b, c, ctx, nullptr);
        },
        name);
  }
  return make_kernel([b = std::move(b)](KernelContext& ctx) -> Status {
    ref::ConvParams p;
    KESTREL_RETURN_IF_ERROR(resolve(b, ctx.input(0), ctx.input(1), ctx.output(0), &p));
    if (b.transpose) return ref::conv_transpose(p, ctx.input(0), ctx.input(1), ctx.input_or_null(2), ctx.output(0));
    return ref::conv(p, ctx.input(0), ctx.input(1), ctx.input_or_null(2), ctx.output(0));
  });
}

// FusedConv with a channel scale S (input 4; a squeeze-excite block's Mul folded into its projection, pass
// fuse-se-scale), for a 1x1 group-1 conv, stride 1, unpadded, with constant f32 weights: per image one GEMM
// (W * S[n]) X[n], the weights scaled per run in thread-local scratch (M x C multiplies) instead of a pass over X
// (EfficientNet-B0's 24-channel projection on 56 x 56 scales 3456 weights instead of 451584 inputs). The GEMM reads
// unpacked weights, so on small planes it loses to the pre-packed FastConv by more than the pass costs: the pass
// fuses only planes of at least FuseSeScale's 8 x M pixels (see there). Null for any other conv (the reference
// path then scales X).
Result<std::unique_ptr<OpKernel>> make_channel_scaled_pointwise(const KernelCreateInfo& info, const ConvBinding& b,
                                                                cpu::FusedActivation act) {
  const Tensor* w = info.constant_inputs.size() > 1 ? info.constant_inputs[1] : nullptr;
  bool ok = !info.options.reference_only && b.group == 1 && !b.transpose && b.window.spatial() == 2 && w &&
            w->dtype() == core::DType::kF32 && w->rank() == 4 && w->dim(2) == 1 && w->dim(3) == 1 &&
            (b.window.auto_pad == ir::AutoPad::kNotSet || b.window.auto_pad == ir::AutoPad::kValid);
  for (int64_t v : b.window.strides) ok = ok && v == 1;
  for (int64_t v : b.window.dilations) ok = ok && v == 1;
  for (int64_t v : b.window.pads) ok = ok && v == 0;
  for (const ir::ValueType* t : info.input_types) ok = ok && (!t || t->dtype == core::DType::kF32);
  if (!ok) return std::unique_ptr<OpKernel>();
  const int64_t m = w->dim(0), c = w->dim(1);
  auto weights = std::make_shared<const std::vector<float>>(w->data<float>(), w->data<float>() + m * c);
  const core::Isa isa = info.options.isa;
  // bf16 float math: the scaled weights packed to bf16 per run.
  const bool bf16 = info.options.bf16 && cpu::FastConv::bf16_applies(m, isa);
  return make_kernel(
      [m, c, weights, act, isa, bf16](KernelContext& ctx) -> Status {
        const Tensor& x = ctx.input(0);
        const Tensor& s = ctx.input(4);
        const Tensor* bias = ctx.input_or_null(2);
        const Tensor* z = ctx.input_or_null(3);
        Tensor& y = ctx.output(0);
        if (x.rank() != 4 || x.dim(1) != c || s.num_elements() != x.dim(0) * c || y.rank() != 4 ||
            y.dim(0) != x.dim(0) || y.dim(1) != m || y.dim(2) != x.dim(2) || y.dim(3) != x.dim(3) ||
            (bias && bias->num_elements() != m) || (z && z->dims() != y.dims()))
          return core::invalid_argument(str_cat("FusedConv with a channel scale: X ", x.type_string(), ", S ",
                                                s.type_string(), ", Y ", y.type_string(), " do not fit W [", m, ",", c,
                                                ",1,1]"));
        const int64_t n_img = x.dim(0), hw = x.dim(2) * x.dim(3);
        const float* sv = s.data<float>();
        thread_local std::vector<float> scratch;
        thread_local std::vector<uint32_t> scratch_bf16;
        const int64_t floats = bf16 ? 0 : m * c, words = bf16 ? cpu::bf16_packed_a_words(m, c) : 0;
        if (scratch.size() < static_cast<size_t>(floats)) scratch.resize(static_cast<size_t>(floats));
        if (scratch_bf16.size() < static_cast<size_t>(words)) scratch_bf16.resize(static_cast<size_t>(words));
        cpu::GemmEpilogue ep;
        if (bias) {
          ep.bias_kind = cpu::GemmBias::kPerRow;
          ep.bias = bias->data<float>();
        }
        ep.activation = act.kind;
        ep.act_alpha = act.alpha;
        ep.act_beta = act.beta;
        ep.ldr = hw;
        cpu::SgemmContext sc;
        sc.pool = ctx.pool();
        sc.isa = isa;
        sc.split_columns = true;
        for (int64_t n = 0; n < n_img; ++n) {
          const float* sn = sv + n * c;
          const float* wv = weights->data();
          if (bf16) {
            cpu::bf16_pack_a(m, c, wv, c, sn, scratch_bf16.data());
            ep.residual = z ? z->data<float>() + n * m * hw : nullptr;
            KESTREL_RETURN_IF_ERROR(cpu::bf16_gemm(scratch_bf16.data(), m, c, hw, x.data<float>() + n * c * hw, hw,
                                                   y.data<float>() + n * m * hw, hw, ep, ctx.pool()));
            continue;
          }
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < c; ++j) scratch[static_cast<size_t>(i * c + j)] = wv[i * c + j] * sn[j];
          ep.residual = z ? z->data<float>() + n * m * hw : nullptr;
          KESTREL_RETURN_IF_ERROR(cpu::sgemm(m, hw, c, 1.f, cpu::SgemmA(scratch.data(), c),
                                             cpu::SgemmB(x.data<float>() + n * c * hw, hw), 0.f,
                                             y.data<float>() + n * m * hw, hw, ep, sc));
        }
        return Status::ok();
      },
      bf16 ? "conv.channel_scaled_bf16" : "conv.channel_scaled");
}

}  // namespace

Result<std::unique_ptr<OpKernel>> make_fast_fused_conv(const KernelCreateInfo& info, cpu::FusedActivation act) {
  KESTREL_ASSIGN_OR_RETURN(ConvBinding b, read_binding(info, false));
  if (info.input_types.size() > 4 && info.input_types[4]) return make_channel_scaled_pointwise(info, b, act);
  KESTREL_ASSIGN_OR_RETURN(std::optional<cpu::FastConv> fast, make_fast_conv(info, b, act));
  if (!fast) return std::unique_ptr<OpKernel>();
  const char* name = fast->name();
  return make_kernel(
      [b = std::move(b), c = std::move(*fast)](KernelContext& ctx) -> Status {
        return run_fast(b, c, ctx, ctx.input_or_null(3));
      },
      name);
}

namespace {

// FusedConv with a MaxPool (docs/fused_ops.md): conv geometry and pool window resolved once per
// input shape (RunKey); the conv output lives in `conv_out` (allocated when the shape changes)
// except on the fast stem path, which pools strips of rows straight from per-thread scratch.
struct PooledConv {
  ConvBinding b;
  ir::WindowAttrs pool;
  std::optional<cpu::FastConv> fast;
  ref::ActivationParams ref_act;
  const cpu::PoolTable* pool_table = nullptr;
  // Per input shape:
  RunKey key;
  ir::WindowAttrs window;
  ref::ConvParams params;
  ref::PoolParams pool_params;
  cpu::Pool2dParams q;
  core::Dims conv_dims = core::Dims(4);
  bool stem = false, fast_pool = false;
  Tensor conv_out;

  Status prepare(const Tensor& x, const Tensor& w, const Tensor& y) {
    key.begin().add_dims(x.dims()).add_dims(w.dims()).add_dims(y.dims());
    if (key.same()) return Status::ok();
    if (b.window.spatial() != 2) return core::invalid_argument("a FusedConv with a MaxPool is 2-D");
    KESTREL_RETURN_IF_ERROR(resolve_into(b, x, w, nullptr, window, &params, &conv_dims));
    pool_params.kernel = pool.kernel;
    pool_params.strides = pool.strides;
    pool_params.dilations = pool.dilations;
    pool_params.pads_begin.assign(2, 0);
    pool_params.pads_end.assign(2, 0);
    for (size_t i = 0; i < 2; ++i) {
      KESTREL_ASSIGN_OR_RETURN(ir::AxisWindow pw, ir::forward_window(pool, i, conv_dims[i + 2]));
      if (y.rank() != 4 || y.dim(0) != conv_dims[0] || y.dim(1) != conv_dims[1] ||
          y.dim(static_cast<int64_t>(i) + 2) != pw.out)
        return core::internal_error(str_cat("output ", y.type_string(), " is not the MaxPool of the conv output"));
      pool_params.pads_begin[i] = pw.pad_begin;
      pool_params.pads_end[i] = pw.pad_end;
    }
    q = cpu::pool2d_params(pool_params, true, false);
    stem = fast && fast->path_for(params) == cpu::FastConv::Path::kStem;
    fast_pool = pool_table && x.dtype() == core::DType::kF32 &&
                cpu::pool2d_buffer_len(q, conv_dims[3], y.dim(3)) <= (int64_t{1} << 22);
    if (!stem) {
      KESTREL_ASSIGN_OR_RETURN(conv_out, Tensor::allocate(x.dtype(), conv_dims));
    } else {
      conv_out = Tensor();
    }
    key.commit();
    return Status::ok();
  }

  Status run(KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* bias = ctx.input_or_null(2);
    Tensor& y = ctx.output(0);
    KESTREL_RETURN_IF_ERROR(prepare(x, w, y));
    if (stem) return fast->run_max_pooled(params, conv_dims[2], conv_dims[3], q, x, bias, y, ctx.pool());
    if (fast) {
      KESTREL_RETURN_IF_ERROR(fast->run(params, x, bias, nullptr, conv_out, ctx.pool()));
    } else {
      KESTREL_RETURN_IF_ERROR(ref::conv(params, x, w, bias, conv_out));
      KESTREL_RETURN_IF_ERROR(ref::apply_epilogue(ref_act, nullptr, conv_out));
    }
    if (fast_pool) return cpu::pool2d_f32(*pool_table, q, conv_out, y, ctx.pool());
    return ref::max_pool(pool_params, conv_out, y, nullptr, false);
  }
};

}  // namespace

Result<std::unique_ptr<OpKernel>> make_pooled_fused_conv(const KernelCreateInfo& info,
                                                        std::optional<cpu::FusedActivation> fast_act,
                                                        const ref::ActivationParams& ref_act) {
  KESTREL_ASSIGN_OR_RETURN(std::optional<ir::WindowAttrs> pool, ir::read_fused_max_pool(info.node));
  if (!pool) return info.fail("no MaxPool attributes");
  if (info.input_types.size() > 3 && info.input_types[3])
    return info.fail("a FusedConv with a MaxPool takes no residual Z");
  auto k = std::make_shared<PooledConv>();
  KESTREL_ASSIGN_OR_RETURN(k->b, read_binding(info, false));
  k->pool = std::move(*pool);
  k->ref_act = ref_act;
  if (fast_act) {
    KESTREL_ASSIGN_OR_RETURN(k->fast, make_fast_conv(info, k->b, *fast_act));
  }
  if (!info.options.reference_only) k->pool_table = cpu::pool_table(info.options.isa);
  const char* name = k->fast ? k->fast->name() : "reference";
  return make_kernel([k](KernelContext& ctx) -> Status { return k->run(ctx); }, name);
}

namespace {

// kestrel.FusedPointwiseDepthwise (docs/fused_ops.md): the fast chain (kernels/cpu/conv/conv_chain.h),
// which runs the [expand /] depthwise [/ project] convs over strips of rows, or the reference convs with
// up to two temporaries. Shapes are checked and the depthwise pads resolved once per input shape (RunKey);
// for static shapes the fast path then allocates nothing (y is the op's output).
struct PointwiseDepthwise {
  ir::WindowAttrs window;  // the depthwise conv's: 2-D, square, NOTSET pads, dilations 1
  bool expand = false;     // W1 (input 1) given; else the middle conv reads X
  bool project = false;    // W3 (input 5) given
  bool shortcut = false;   // W4 (input 8) given: the strided 1x1 shortcut of X takes Z's place
  int64_t group = 0;       // the middle conv's `group`; 0: M (depthwise)
  std::optional<cpu::FastConvChain> fast;
  std::optional<Tensor> fast_bias3;      // with the fast chain and the shortcut: B3 + B4 (none: neither given)
  ref::PointwiseDepthwiseParams params;  // activations; depthwise geometry per input shape
  // Per input shape:
  RunKey key;
  cpu::ConvChainParams chain;
  Tensor expanded, dw, sc;  // the reference's temporaries (not allocated on the fast path, nor without W1 / W3 / W4)

  Status prepare(KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Tensor* w1 = ctx.input_or_null(1);
    const Tensor& w2 = ctx.input(3);
    const Tensor* b1 = ctx.input_or_null(2);
    const Tensor* b2 = ctx.input_or_null(4);
    const Tensor* w3 = ctx.input_or_null(5);
    const Tensor* b3 = ctx.input_or_null(6);
    const Tensor* z = ctx.input_or_null(7);
    const Tensor* w4 = ctx.input_or_null(8);
    const Tensor* b4 = ctx.input_or_null(9);
    const Tensor& y = ctx.output(0);
    key.begin();
    for (const Tensor* t : {&x, w1, b1, &w2, b2, w3, b3, z, w4, b4, &y}) {
      if (t) {
        key.add(static_cast<int64_t>(t->dtype())).add_dims(t->dims());
      } else {
        key.add(-1);
      }
    }
    if (key.same()) return Status::ok();
    auto bad = [](const auto&... args) {
      return core::invalid_argument(str_cat("FusedPointwiseDepthwise: ", args...));
    };
    for (const Tensor* t : {w1, &w2, b1, b2, w3, b3, z, w4, b4})
      if (t && t->dtype() != x.dtype())
        return bad("all inputs must have X's dtype ", core::dtype_name(x.dtype()), ", got ", t->type_string());
    if (y.dtype() != x.dtype()) return bad("output ", y.type_string(), " must have X's dtype");
    if (x.rank() != 4) return bad("X ", x.type_string(), " must be [N, C, H, W]");
    if (expand != (w1 != nullptr)) return bad("W1 is ", w1 ? "given" : "missing", " at run time");
    if (!w1 && b1) return bad("B1 needs W1");
    const int64_t n = x.dim(0), c = x.dim(1), k = window.kernel[0];
    if (w1 && (w1->rank() != 4 || w1->dim(1) != c || w1->dim(2) != 1 || w1->dim(3) != 1 || w1->dim(0) < 1))
      return bad("W1 ", w1->type_string(), " must be [M, ", c, ", 1, 1] with M >= 1");
    // Without the expansion the middle conv reads X: M is X's channel count.
    const int64_t m = w1 ? w1->dim(0) : c;
    if (m < 1) return bad("X ", x.type_string(), " must have M >= 1 channels (no W1: the middle conv reads X)");
    const int64_t g = group ? group : m;
    if (m % g != 0) return bad("group ", g, " must divide the middle conv's channels M = ", m);
    if (w2.rank() != 4 || w2.dim(0) != m || w2.dim(1) != m / g || w2.dim(2) != k || w2.dim(3) != k)
      return bad("W2 ", w2.type_string(), " must be [", m, ", ", m / g, ", ", k, ", ", k, "]",
                 w1 ? "" : " (no W1: M is X's channels)");
    for (const Tensor* b : {b1, b2})
      if (b && (b->rank() != 1 || b->dim(0) != m)) return bad("bias ", b->type_string(), " must be [", m, "]");
    if (project != (w3 != nullptr)) return bad("W3 is ", w3 ? "given" : "missing", " at run time");
    if (!w3 && (b3 || z)) return bad("B3 and Z need W3");
    int64_t p = m;
    if (w3) {
      if (w3->rank() != 4 || w3->dim(1) != m || w3->dim(2) != 1 || w3->dim(3) != 1)
        return bad("W3 ", w3->type_string(), " must be [P, ", m, ", 1, 1]");
      p = w3->dim(0);
      if (b3 && (b3->rank() != 1 || b3->dim(0) != p)) return bad("bias B3 ", b3->type_string(), " must be [", p, "]");
    }
    if (shortcut != (w4 != nullptr)) return bad("W4 is ", w4 ? "given" : "missing", " at run time");
    if (!w4 && b4) return bad("B4 needs W4");
    if (w4) {
      if (!w3 || z) return bad("the shortcut W4 needs W3 and no Z");
      if (w4->rank() != 4 || w4->dim(0) != p || w4->dim(1) != c || w4->dim(2) != 1 || w4->dim(3) != 1)
        return bad("W4 ", w4->type_string(), " must be [", p, ", ", c, ", 1, 1]");
      if (b4 && (b4->rank() != 1 || b4->dim(0) != p)) return bad("bias B4 ", b4->type_string(), " must be [", p, "]");
    }
    params.depthwise.strides = window.strides;
    params.depthwise.dilations.assign(2, 1);
    params.depthwise.pads_begin.assign(2, 0);
    params.depthwise.group = g;
    params.shortcut.strides = window.strides;
    params.shortcut.dilations.assign(2, 1);
    params.shortcut.pads_begin.assign(2, 0);
    params.shortcut.group = 1;
    int64_t out[2];
    for (size_t i = 0; i < 2; ++i) {
      KESTREL_ASSIGN_OR_RETURN(ir::AxisWindow aw, ir::forward_window(window, i, x.dim(static_cast<int64_t>(i) + 2)));
      out[i] = aw.out;
      params.depthwise.pads_begin[i] = aw.pad_begin;
      const int64_t in = x.dim(static_cast<int64_t>(i) + 2);
      if (w4 && (in - 1) / window.strides[i] + 1 != aw.out)
        return bad("the shortcut (1x1, stride ", window.strides[i], ") maps X's ", in, " to ",
                   (in - 1) / window.strides[i] + 1, " pixels, the middle conv to ", aw.out);
    }
    if (y.rank() != 4 || y.dim(0) != n || y.dim(1) != p || y.dim(2) != out[0] || y.dim(3) != out[1])
      return core::internal_error(str_cat("FusedPointwiseDepthwise: output ", y.type_string(), " should be [", n, ", ",
                                          p, ", ", out[0], ", ", out[1], "]"));
    if (z && z->dims() != y.dims())
      return bad("residual Z ", z->type_string(), " must have the output's shape ", y.type_string());
    chain.stride = window.strides[0];
    chain.pad_top = params.depthwise.pads_begin[0];
    chain.pad_left = params.depthwise.pads_begin[1];
    if (!fast) {
      if (expand) {
        KESTREL_ASSIGN_OR_RETURN(expanded, Tensor::allocate(x.dtype(), {n, m, x.dim(2), x.dim(3)}));
      } else {
        expanded = Tensor();
      }
      if (project) {
        KESTREL_ASSIGN_OR_RETURN(dw, Tensor::allocate(x.dtype(), {n, m, out[0], out[1]}));
      } else {
        dw = Tensor();
      }
      if (w4) {
        KESTREL_ASSIGN_OR_RETURN(sc, Tensor::allocate(x.dtype(), y.dims()));
      } else {
        sc = Tensor();
      }
    }
    key.commit();
    return Status::ok();
  }

  Status run(KernelContext& ctx) {
    if (!ctx.has_input(0) || !ctx.has_input(3))
      return core::invalid_argument("FusedPointwiseDepthwise: X and W2 are required");
    KESTREL_RETURN_IF_ERROR(prepare(ctx));
    Tensor& y = ctx.output(0);
    if (y.num_elements() == 0) return Status::ok();
    const Tensor* b1 = ctx.input_or_null(2);
    const Tensor* b2 = ctx.input_or_null(4);
    const Tensor* b3 = ctx.input_or_null(6);
    const Tensor* z = ctx.input_or_null(7);
    if (fast) {
      if (shortcut) b3 = fast_bias3 ? &*fast_bias3 : nullptr;  // B3 + B4, folded at creation
      return fast->run(chain, ctx.input(0), b1, b2, b3, z, y, ctx.pool());
    }
    return ref::fused_pointwise_depthwise(params, ctx.input(0), ctx.input_or_null(1), b1, ctx.input(3), b2,
                                          ctx.input_or_null(5), b3, z, expand ? &expanded : nullptr,
                                          project ? &dw : nullptr, y, ctx.input_or_null(8), ctx.input_or_null(9),
                                          shortcut ? &sc : nullptr);
  }
};

// The fast chain when it applies (f32, constant W1 (if given) / W2 / W3 (if given) of the chain's shapes, k 3 or
// 5 when depthwise, 1 < k <= 7 when grouped (`group` < M, group widths whole vectors: FastConv::has_direct_rows),
// stride 1 or 2, each pad < k, every activation used in the fast epilogue), else nullopt. group 0: M. Without
// W1, M is W2's dim 0 (X's channels, checked per input shape by PointwiseDepthwise::prepare). With the shortcut
// (constant W4 and B3 / B4 if given) the projection packs [W3 | W4] as one 1x1 conv of M + C channels, and
// *bias3 is set to B3 + B4 (left empty when neither is given).
Result<std::optional<cpu::FastConvChain>> make_fast_chain(
    const KernelCreateInfo& info, const ir::WindowAttrs& window, bool expand, bool project, int64_t group,
    const std::array<std::optional<cpu::FusedActivation>, 3>& acts, bool shortcut, std::optional<Tensor>* bias3) {
  using None = std::optional<cpu::FastConvChain>;
  if (info.options.reference_only) return None();
  for (const ir::ValueType* t : info.input_types)
    if (t && t->dtype != core::DType::kF32) return None();
  if ((expand && !acts[0]) || !acts[1] || (project && !acts[2])) return None();
  auto weight = [&](size_t i) -> const Tensor* {
    const Tensor* w = i < info.constant_inputs.size() ? info.constant_inputs[i] : nullptr;
    return w && w->dtype() == core::DType::kF32 && w->rank() == 4 ? w : nullptr;
  };
  const Tensor* w1 = expand ? weight(1) : nullptr;
  const Tensor* w2 = weight(3);
  const Tensor* w3 = project ? weight(5) : nullptr;
  if ((expand && !w1) || !w2 || (project && !w3)) return None();
  const int64_t m = w1 ? w1->dim(0) : w2->dim(0), k = window.kernel[0], stride = window.strides[0];
  if (m < 1 || (w1 && (w1->dim(1) < 1 || w1->dim(2) != 1 || w1->dim(3) != 1))) return None();
  const int64_t g = group ? group : m;
  if (m % g != 0 || w2->dim(0) != m || w2->dim(1) != m / g || w2->dim(2) != k || w2->dim(3) != k) return None();
  if (g == m ? k != 3 && k != 5 : k <= 1 || k > 7) return None();
  if (w3 && (w3->dim(0) < 1 || w3->dim(1) != m || w3->dim(2) != 1 || w3->dim(3) != 1)) return None();
  if (stride != 1 && stride != 2) return None();
  for (int64_t pad : window.pads)
    if (pad >= k) return None();
  // The shortcut: [W3 | W4] as one projection of M + C channels, and B3 + B4.
  const int64_t c = w1 ? w1->dim(1) : m;
  std::optional<Tensor> w34;
  if (shortcut) {
    const Tensor* w4 = weight(8);
    if (!w3 || !w4 || w4->dim(0) != w3->dim(0) || w4->dim(1) != c || w4->dim(2) != 1 || w4->dim(3) != 1) return None();
    const int64_t pc = w3->dim(0);
    KESTREL_ASSIGN_OR_RETURN(Tensor w, Tensor::allocate(core::DType::kF32, {pc, m + c, 1, 1}));
    for (int64_t o = 0; o < pc; ++o) {
      std::copy_n(w3->data<float>() + o * m, m, w.data<float>() + o * (m + c));
      std::copy_n(w4->data<float>() + o * c, c, w.data<float>() + o * (m + c) + m);
    }
    w34 = std::move(w);
    std::optional<Tensor> sum;
    for (size_t i : {size_t{6}, size_t{9}}) {
      if (i >= info.input_types.size() || !info.input_types[i]) continue;
      const Tensor* b = i < info.constant_inputs.size() ? info.constant_inputs[i] : nullptr;
      if (!b || b->dtype() != core::DType::kF32 || b->num_elements() != pc) return None();  // a bias set at run time
      if (!sum) {
        KESTREL_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(core::DType::kF32, {pc}));
        std::fill_n(t.data<float>(), pc, 0.f);
        sum = std::move(t);
      }
      for (int64_t o = 0; o < pc; ++o) sum->data<float>()[o] += b->data<float>()[o];
    }
    *bias3 = std::move(sum);
  }
  const core::Isa isa = info.options.isa;
  // Both pointwise convs around a depthwise one on a small static plane: the chain's pixel-major path.
  const ir::ValueType* xt = info.input_types[0];
  const auto plane = xt ? xt->shape.known_plane() : std::nullopt;
  const bool small = w1 && w3 && !shortcut && g == m && plane &&
                     cpu::FastConvChain::small_plane(plane->first, plane->second, stride, info.options.threads);
  auto pointwise = [&](const Tensor& w, const cpu::FusedActivation& act) -> Result<cpu::FastConv> {
    KESTREL_ASSIGN_OR_RETURN(cpu::FastConv c, small ? cpu::FastConv::create_transposed_pointwise(w, act, isa)
                                                    : cpu::FastConv::create(w, 1, act, isa, false, 0));
    if (info.options.bf16) KESTREL_RETURN_IF_ERROR(c.enable_bf16());
    return c;
  };
  std::optional<cpu::FastConv> expansion, projection;
  if (w1) {
    KESTREL_ASSIGN_OR_RETURN(cpu::FastConv c, pointwise(*w1, *acts[0]));
    expansion = std::move(c);
  }
  KESTREL_ASSIGN_OR_RETURN(cpu::FastConv depthwise, cpu::FastConv::create(*w2, g, *acts[1], isa, false, 0));
  if (info.options.bf16) KESTREL_RETURN_IF_ERROR(depthwise.enable_bf16());
  if (w3) {
    KESTREL_ASSIGN_OR_RETURN(cpu::FastConv p3, pointwise(w34 ? *w34 : *w3, *acts[2]));
    projection = std::move(p3);
  }
  Result<cpu::FastConvChain> chain =
      cpu::FastConvChain::create(std::move(expansion), std::move(depthwise), std::move(projection), shortcut ? c : 0);
  if (!chain.is_ok() && chain.status().code() == core::StatusCode::kUnsupported) return None();
  if (!chain.is_ok()) return chain.status().with_context(info.node.describe());
  return None(std::move(*chain));
}

}  // namespace

Result<std::unique_ptr<OpKernel>> make_fused_pointwise_depthwise(
    const KernelCreateInfo& info, const std::array<std::optional<cpu::FusedActivation>, 3>& fast_acts,
    const std::array<ref::ActivationParams, 3>& ref_acts) {
  auto present = [&](size_t i) { return i < info.input_types.size() && info.input_types[i] != nullptr; };
  if (!present(0) || !present(3)) return info.fail("X and W2 (inputs 0 and 3) are required");
  auto k = std::make_shared<PointwiseDepthwise>();
  KESTREL_ASSIGN_OR_RETURN(k->window, ir::read_pointwise_depthwise_window(info.node));
  k->expand = present(1);
  k->project = present(5);
  if (info.node.has_attr("group")) {
    KESTREL_ASSIGN_OR_RETURN(k->group, info.node.attr_int("group"));
    if (k->group < 1) return info.fail("group must be >= 1, is ", k->group);
  }
  if (!k->expand && present(2)) return info.fail("B1 (input 2) needs W1 (input 1)");
  if (!k->expand && !k->project) return info.fail("needs W1 (input 1), W3 (input 5) or both");
  if (!k->project && (present(6) || present(7))) return info.fail("B3 (input 6) and Z (input 7) need W3 (input 5)");
  k->shortcut = present(8);
  if (k->shortcut && (!k->project || present(7))) return info.fail("the shortcut W4 (input 8) needs W3 and no Z");
  if (!k->shortcut && present(9)) return info.fail("B4 (input 9) needs W4 (input 8)");
  k->params.act1 = ref_acts[0];
  k->params.act2 = ref_acts[1];
  k->params.act3 = ref_acts[2];
  KESTREL_ASSIGN_OR_RETURN(k->fast, make_fast_chain(info, k->window, k->expand, k->project, k->group, fast_acts,
                                                    k->shortcut, &k->fast_bias3));
  const char* name = k->fast ? k->fast->name() : "reference";
  return make_kernel([k](KernelContext& ctx) -> Status { return k->run(ctx); }, name);
}

namespace {

// ConvTranspose: the GEMM + col2im kernel for f32 with constant 1-D / 2-D weights, else the
// reference (through make_conv). Pads are resolved once per input shape (RunKey), so a
// static-shape run allocates nothing.
Result<std::unique_ptr<OpKernel>> make_conv_transpose(const KernelCreateInfo& info) {
  KESTREL_ASSIGN_OR_RETURN(ConvBinding b, read_binding(info, true));
  bool f32 = !info.options.reference_only && b.window.spatial() <= 2;
  for (const ir::ValueType* t : info.input_types)
    if (t && t->dtype != core::DType::kF32) f32 = false;
  const Tensor* w = info.constant_inputs.size() > 1 ? info.constant_inputs[1] : nullptr;
  if (!f32 || !w || w->dtype() != core::DType::kF32 || w->rank() != static_cast<int64_t>(b.window.spatial()) + 2 ||
      w->dim(0) % b.group != 0)
    return make_conv(info, true);
  KESTREL_ASSIGN_OR_RETURN(cpu::FastConvTranspose k, cpu::FastConvTranspose::create(*w, b.group, info.options.isa));
  const char* name = k.name();
  struct Cache {
    RunKey key;
    ref::ConvParams p;
  };
  return make_kernel(
      [b = std::move(b), k = std::move(k), c = Cache()](KernelContext& ctx) mutable -> Status {
        c.key.begin().add_dims(ctx.input(0).dims()).add_dims(ctx.input(1).dims()).add_dims(ctx.output(0).dims());
        if (!c.key.same()) {
          KESTREL_RETURN_IF_ERROR(resolve(b, ctx.input(0), ctx.input(1), ctx.output(0), &c.p));
          c.key.commit();
        }
        return k.run(c.p, ctx.input(0), ctx.input_or_null(2), ctx.output(0), ctx.pool());
      },
      name);
}

}  // namespace

void register_conv_kernels(KernelRegistry& r) {
  r.add("Conv", [](const KernelCreateInfo& info) { return make_conv(info, false); });
  r.add("ConvTranspose", make_conv_transpose);
}

}  // namespace kestrel::runtime
