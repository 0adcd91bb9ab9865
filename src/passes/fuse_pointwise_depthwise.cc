// Fuses MobileNet's inverted residual, expand 1x1 conv -> depthwise k x k conv -> optionally project 1x1 conv
// (each a Conv or a kestrel.FusedConv with its bias, activation and, on the projection, residual), into one
// kestrel.FusedPointwiseDepthwise (docs/fused_ops.md); likewise RegNet's blocks, whose middle conv is grouped
// (the fused node's `group`, written only when it is not M). Then, where no expansion precedes it, the middle
// conv and its projection (the first block of MobileNet-V2 / V3 and MnasNet, ShuffleNet's downsampling
// branch): the fused node without W1 / B1 / activation1, which reads the middle conv's input X itself. Its
// fast kernel (kernels/cpu/conv/conv_chain.h) runs the convs over strips of rows, so the expanded tensor (and
// the middle conv's output) never goes to memory. Only where that kernel runs: float, constant f32 weights, a
// middle conv that is depthwise 3x3 / 5x5 or grouped k x k (1 < k <= 7) with groups of a multiple of 16
// channels (whole vectors on every ISA), at most 256, with stride 1 or 2, explicit pads each smaller than the
// kernel, no dilation, an activation the fast epilogue has, and a large plane (the intermediate tensors
// are what the fusion saves), or, for expand -> depthwise -> project, a small one (FastConvChain::small_plane:
// there the chain keeps the tensors between its convs pixel-major, which saves their transposes). The
// intermediate values must have no other consumer and must not be graph outputs.
// Last, a strided 1x1 conv of the chain's X that adds the chain's output as its residual (RegNet's downsampling
// blocks, proj(x) + f(x), whose Add fuse-residual-add gave to proj) joins the chain as its shortcut (W4, B4, its
// activation as activation3): the kernel folds it into the projection's GEMM, so X is read once.
#include <optional>

#include "ir/op_schema.h"
#include "ir/ops/fused_activation.h"
#include "ir/ops/window_geometry.h"
#include "kernels/cpu/conv/conv_chain.h"  // FastConvChain::small_plane
#include "passes/fusion_util.h"
#include "passes/pass.h"

namespace kestrel::passes {

namespace {

// Plane thresholds (static shapes; smaller chains stay unfused). kestrel_conv_bench BM_Chain on Zen 5
// (docs/architecture.md, "Fused inverted residuals"), unfused -> fused:
// - with a projection, the middle conv's output plane (OH * OW): blocks on 14x14 with stride 1 gain at 2 threads
//   (0.64-0.89) and hold at 1 (0.93-1.02); blocks ending on 7x7 (stride 2 from 14, or 7 -> 7) do not (0.99-1.12);
// - without one (the depthwise output goes to memory, e.g. read by a squeeze-excite gate), the expansion's input
//   plane (H * W): on 14x14 such chains lost at 2 threads (1.36-1.52: each thread expands the rows its neighbour
//   needs too, 2 of 7 with 3x3, 4 of 7 with 5x5), so they keep the 28 x 28 rule that all chains had until stop 28.
constexpr int64_t kMinProjectedPlane = 14 * 14;
constexpr int64_t kMinUnprojectedPlane = 28 * 28;

// A Conv / FusedConv as the fusion sees it.
struct ConvNode {
  ir::Node* node = nullptr;
  ir::Value* x = nullptr;
  ir::Value* w = nullptr;  // constant f32 [M, C / group, KH, KW]
  ir::Value* b = nullptr;  // or null
  ir::Value* z = nullptr;  // FusedConv's residual, or null
  core::Dims wd;
  int64_t group = 1;
  ir::WindowAttrs window;
  ir::FusedActivationSpec act;
};

// A 2-D float Conv or FusedConv with constant f32 weights, explicit (NOTSET) pads, no dilation, no pool_*
// attributes and an activation the fast epilogue has (all but GeluTanh, as to_fast_activation in
// runtime/ops/fused.cc).
std::optional<ConvNode> read_conv(ir::Node* n) {
  if (!n || n->num_outputs() != 1 || !n->output(0) || n->output(0)->dtype() != core::DType::kF32) return std::nullopt;
  const bool plain = n->domain().empty() && n->op_type() == "Conv";
  const bool fused = n->domain() == ir::kKestrelDomain && n->op_type() == "FusedConv";
  if (!(plain || fused) || n->num_inputs() < 2 || n->num_inputs() > (fused ? 4u : 3u)) return std::nullopt;
  if (n->has_attr("pool_kernel_shape")) return std::nullopt;
  ConvNode c;
  c.node = n;
  c.x = n->input(0);
  c.w = n->input(1);
  c.b = n->input(2);
  c.z = fused ? n->input(3) : nullptr;
  if (!c.x || c.x->dtype() != core::DType::kF32 || !c.w || !c.w->is_constant() ||
      c.w->constant().dtype() != core::DType::kF32 || c.w->constant().rank() != 4)
    return std::nullopt;
  c.wd = c.w->constant().dims();
  if (c.b && (c.b->dtype() != core::DType::kF32 || c.b->shape().rank() != 1)) return std::nullopt;
  auto group = n->attr_int("group", 1);
  if (!group.is_ok() || *group < 1) return std::nullopt;
  c.group = *group;
  auto window = ir::read_window_attrs(*n, {c.wd[2], c.wd[3]}, false);
  if (!window.is_ok() || window->auto_pad != ir::AutoPad::kNotSet) return std::nullopt;
  if (n->has_attr("kernel_shape")) {
    auto k = n->attr_ints("kernel_shape");
    if (!k.is_ok() || *k != window->kernel) return std::nullopt;
  }
  for (int64_t d : window->dilations)
    if (d != 1) return std::nullopt;
  c.window = std::move(*window);
  auto act = ir::read_fused_activation(*n);
  if (!act.is_ok() || act->kind == ir::FusedActivation::kGeluTanh) return std::nullopt;
  c.act = *act;
  return c;
}

bool all_are(const std::vector<int64_t>& v, int64_t value) {
  for (int64_t x : v)
    if (x != value) return false;
  return true;
}

// 1x1, stride 1, no pads, group 1.
bool pointwise(const ConvNode& c) {
  return c.group == 1 && c.wd[2] == 1 && c.wd[3] == 1 && c.wd[0] >= 1 && c.wd[1] >= 1 && all_are(c.window.strides, 1) &&
         all_are(c.window.pads, 0);
}

// Group widths (channels per group) of a grouped middle conv the fast chain runs on every ISA: whole vectors
// of 16 (AVX-512), 8 (AVX2) and 1 (scalar) lanes, at most kMaxGroupWidth (FastConv::has_direct_rows).
constexpr int64_t kGroupWidthMultiple = 16;
constexpr int64_t kMaxGroupWidth = 256;

// k x k, `channels` in and out, either one filter per channel (k 3 or 5) or grouped (group > 1, group width
// a multiple of kGroupWidthMultiple up to kMaxGroupWidth, 1 < k <= 7); equal strides 1 or 2, each pad < k,
// no residual.
bool depthwise(const ConvNode& c, int64_t channels) {
  const int64_t k = c.wd[2];
  if (c.z || c.wd[0] != channels || channels % c.group != 0 || c.wd[1] * c.group != channels || c.wd[3] != k)
    return false;
  if (c.group == channels) {
    if (k != 3 && k != 5) return false;
  } else {
    const int64_t cg = channels / c.group;
    if (c.group < 2 || cg % kGroupWidthMultiple != 0 || cg > kMaxGroupWidth || k <= 1 || k > 7) return false;
  }
  const int64_t s = c.window.strides[0];
  if (c.window.strides[1] != s || (s != 1 && s != 2)) return false;
  for (int64_t p : c.window.pads)
    if (p >= k) return false;
  return true;
}

// The node reading v (input 0) alone, if v is not a graph output.
ir::Node* sole_reader(const ir::Value* v) {
  ir::Node* n = single_consumer(v);
  return n && n->input(0) == v && only_consumer(v, n) ? n : nullptr;
}

// A depthwise (not grouped) d whose static input plane makes a projected chain take FastConvChain's small-plane
// path (the 7x7 stages, and stride-1 planes up to 14 x 14): fused although below kMinProjectedPlane.
bool small_depthwise(const ConvNode& d) {
  const auto plane = d.x->shape().known_plane();
  return d.group == d.wd[0] && plane &&
         kernels::cpu::FastConvChain::small_plane(plane->first, plane->second, d.window.strides[0], 0);  // any threads
}

// v has a static plane (H * W of [N, C, H, W]) of at least `min` pixels.
bool plane_at_least(const ir::Value* v, int64_t min) {
  const auto plane = v->shape().known_plane();
  return plane && static_cast<double>(plane->first) * static_cast<double>(plane->second) >= static_cast<double>(min);
}

// The expand conv feeding the depthwise conv `d` (read by it alone), if the pair can fuse (the plane thresholds
// apart, which depend on what follows).
std::optional<ConvNode> expand_of(const ConvNode& d) {
  std::optional<ConvNode> p1 = read_conv(d.x->producer());
  if (!p1 || p1->z || !pointwise(*p1) || sole_reader(p1->node->output(0)) != d.node || !depthwise(d, p1->wd[0]))
    return std::nullopt;
  return p1;
}

// Whether the 1x1 conv `p3` can be the projection of the chain [p1 ->] d (it reads d's output alone, from M
// channels; its residual, if any, comes from outside the chain: the chain's values have one reader each).
bool projects(const ConvNode* p1, const ConvNode& d, const ConvNode& p3) {
  return pointwise(p3) && p3.wd[1] == d.wd[0] && sole_reader(d.node->output(0)) == p3.node &&
         (!p1 || p3.z != p1->node->output(0)) && p3.z != d.node->output(0);
}

// Replaces [p1 ->] d [-> p3], which ends in `last`, by one kestrel.FusedPointwiseDepthwise named after its first
// conv (no W1 / B1 / activation1 without p1: the node reads d's input).
core::Status fuse(ir::Graph& g, ir::Node* last, const std::optional<ConvNode>& p1, const ConvNode& d,
                  const std::optional<ConvNode>& p3) {
  std::vector<ir::Value*> inputs{p1 ? p1->x : d.x, p1 ? p1->w : nullptr, p1 ? p1->b : nullptr, d.w, d.b};
  if (p3) {
    inputs.push_back(p3->w);
    inputs.push_back(p3->b);
    inputs.push_back(p3->z);
  }
  while (!inputs.back()) inputs.pop_back();
  std::map<std::string, ir::Attribute> attrs;
  attrs["kernel_shape"] = ir::Attribute(d.window.kernel);
  attrs["strides"] = ir::Attribute(d.window.strides);
  attrs["pads"] = ir::Attribute(d.window.pads);
  if (d.group != d.wd[0]) attrs["group"] = ir::Attribute(d.group);
  std::vector<ir::Node*> dead{d.node};
  if (p1) dead.push_back(p1->node);
  if (p3) dead.push_back(p3->node);
  KESTREL_ASSIGN_OR_RETURN(ir::Node * fused, replace_chain(g, last, dead, "FusedPointwiseDepthwise", ir::kKestrelDomain,
                                                           inputs, attrs, (p1 ? p1->node : d.node)->name()));
  if (p1) ir::set_fused_activation(*fused, p1->act, "activation1");
  ir::set_fused_activation(*fused, d.act, "activation2");
  if (p3) ir::set_fused_activation(*fused, p3->act, "activation3");
  return core::Status::ok();
}

bool is_chain(const ir::Node* n) {
  return n && n->domain() == ir::kKestrelDomain && n->op_type() == "FusedPointwiseDepthwise";
}

// Whether sc, a conv of the chain f's X, can be f's shortcut: 1x1, group 1, no pads, f's strides, f's output
// channels; f has a projection (constant W3) and no shortcut yet.
bool folds_shortcut(const ir::Node* f, const ConvNode& sc) {
  if (!is_chain(f) || f->num_inputs() < 6 || f->num_inputs() > 8 || !f->input(5) || f->input(0) != sc.x ||
      sc.group != 1 || sc.wd[2] != 1 || sc.wd[3] != 1 || !all_are(sc.window.pads, 0))
    return false;
  auto strides = f->attr_ints("strides");
  return strides.is_ok() && *strides == sc.window.strides && f->input(5)->is_constant() &&
         f->input(5)->constant().rank() == 4 && f->input(5)->constant().dim(0) == sc.wd[0];
}

// Replaces the chain f and its shortcut conv sc (ending in `last`, one of them) by f with W4 / B4 = sc's W / B, no
// residual, and act3 as its activation3.
core::Status fold_shortcut(ir::Graph& g, ir::Node* f, const ConvNode& sc, ir::Node* last,
                           const ir::FusedActivationSpec& act3) {
  std::vector<ir::Value*> inputs = f->inputs();
  inputs.resize(10, nullptr);
  inputs[7] = nullptr;
  inputs[8] = sc.w;
  inputs[9] = sc.b;
  while (!inputs.back()) inputs.pop_back();
  KESTREL_ASSIGN_OR_RETURN(ir::Node * fused, replace_chain(g, last, {f, sc.node}, "FusedPointwiseDepthwise",
                                                           ir::kKestrelDomain, inputs, f->attributes(), f->name()));
  ir::set_fused_activation(*fused, act3, "activation3");
  return core::Status::ok();
}

class FusePointwiseDepthwise final : public Pass {
 public:
  const char* name() const override { return "fuse-pointwise-depthwise"; }

  // Matched from the chain's last node (the projection, or the depthwise conv when no projection follows),
  // so only nodes visited already are removed. First every expand -> middle [-> project] chain, then, over
  // what is left, middle -> project pairs without an expansion (so an expand conv that can fuse never loses
  // its middle conv to the shorter pattern).
  core::Result<PassStats> run(ir::Graph& g, const PassContext&) override {
    PassStats stats;
    for (ir::Node* n : g.nodes()) {
      std::optional<ConvNode> last = read_conv(n);
      if (!last) continue;
      std::optional<ConvNode> p1, d, p3;
      if (pointwise(*last)) {  // the projection of expand -> depthwise -> it?
        d = read_conv(last->x->producer());
        if (d) p1 = expand_of(*d);
        if (!p1 || !projects(&*p1, *d, *last) ||
            !(plane_at_least(d->node->output(0), kMinProjectedPlane) || small_depthwise(*d)))
          continue;
        p3 = std::move(last);
      } else {  // a depthwise conv whose output is not projected (then the projection ends the chain)
        d = std::move(last);
        p1 = expand_of(*d);
        if (!p1) continue;
        if (std::optional<ConvNode> next = read_conv(sole_reader(d->node->output(0)));
            next && projects(&*p1, *d, *next))
          continue;
        if (!plane_at_least(p1->x, kMinUnprojectedPlane)) continue;
      }
      KESTREL_RETURN_IF_ERROR(fuse(g, n, p1, *d, p3));
      ++stats.fused;
    }
    // Middle conv -> projection: the middle conv reads the chain's input X (M channels) itself.
    for (ir::Node* n : g.nodes()) {
      std::optional<ConvNode> p3 = read_conv(n);
      if (!p3 || !pointwise(*p3)) continue;
      std::optional<ConvNode> d = read_conv(p3->x->producer());
      if (!d || !depthwise(*d, d->wd[0]) || !plane_at_least(d->node->output(0), kMinProjectedPlane) || expand_of(*d) ||
          !projects(nullptr, *d, *p3))
        continue;
      KESTREL_RETURN_IF_ERROR(fuse(g, n, std::nullopt, *d, p3));
      ++stats.fused;
    }
    // Shortcuts, from either side of the block's Add (fuse-residual-add gave it to the operand it met first):
    // n = act(Conv1x1_stride_s(X, W4, B4) + f) with f a chain whose projection has no residual and no activation, or
    // n = a chain whose residual is Conv1x1_stride_s(X, W4, B4) (no activation) read by it alone.
    for (ir::Node* n : g.nodes()) {
      if (std::optional<ConvNode> sc = read_conv(n); sc && sc->z) {
        ir::Node* f = sc->z->producer();
        if (!is_chain(f)) continue;
        auto act3 = ir::read_fused_activation(*f, "activation3");
        if (!act3.is_ok() || act3->kind != ir::FusedActivation::kNone || f->num_inputs() > 7 ||
            !only_consumer(sc->z, n) || !folds_shortcut(f, *sc))
          continue;
        KESTREL_RETURN_IF_ERROR(fold_shortcut(g, f, *sc, n, sc->act));
        ++stats.fused;
      } else if (is_chain(n) && n->num_inputs() == 8 && n->input(7)) {
        std::optional<ConvNode> z = read_conv(n->input(7)->producer());
        auto act3 = ir::read_fused_activation(*n, "activation3");
        if (!z || z->z || z->act.kind != ir::FusedActivation::kNone || !act3.is_ok() ||
            !only_consumer(n->input(7), n) || !folds_shortcut(n, *z))
          continue;
        KESTREL_RETURN_IF_ERROR(fold_shortcut(g, n, *z, n, *act3));
        ++stats.fused;
      }
    }
    return stats;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_pointwise_depthwise() {
  return std::make_unique<FusePointwiseDepthwise>();
}

}  // namespace kestrel::passes
