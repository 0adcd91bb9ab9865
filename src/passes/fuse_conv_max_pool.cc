// Fuses a 2-D MaxPool into the Conv / FusedConv that produces its input, as kestrel.FusedConv's
// pool_* attributes (docs/fused_ops.md), where the conv takes the direct stem kernel (3x3 stride 2
// over at most kStemMaxChannels input channels, group 1, constant weights): that kernel pools strips
// of rows from per-thread scratch, so the network stem's full-resolution output (3 MiB for
// SqueezeNet) is never written. Only when the conv output has no other consumer, is not a graph
// output, and the MaxPool has no Indices output, no dilation and explicit (NOTSET) padding.
#include "ir/op_schema.h"
#include "ir/ops/window_geometry.h"
#include "kernels/cpu/conv/conv.h"  // FastConv::kStemMaxChannels: fuse only where the stem kernel runs
#include "passes/fusion_util.h"
#include "passes/pass.h"

namespace kestrel::passes {

namespace {

bool ints_are(const ir::Node& n, const char* name, int64_t value, size_t count) {
  if (!n.has_attr(name)) return true;
  auto v = n.attr_ints(name);
  if (!v.is_ok() || v->size() != count) return false;
  for (int64_t x : *v)
    if (x != value) return false;
  return true;
}

// A conv the stem kernel runs: float, constant W [M, C <= kStemMaxChannels, 3, 3], group 1,
// strides 2, dilations 1, no residual, not pooled already.
bool stem_conv(const ir::Node* p) {
  if (!p || p->num_outputs() != 1 || !is_float_value(p->output(0))) return false;
  const bool plain = p->domain().empty() && p->op_type() == "Conv";
  const bool fused = p->domain() == ir::kKestrelDomain && p->op_type() == "FusedConv";
  if (!(plain || fused) || p->num_inputs() > 3 || (fused && p->input(3))) return false;
  if (p->has_attr("pool_kernel_shape")) return false;
  const ir::Value* w = p->input(1);
  if (!w || !w->is_constant() || w->constant().dtype() != core::DType::kF32) return false;
  const core::Dims& wd = w->constant().dims();
  if (wd.size() != 4 || wd[1] > kernels::cpu::FastConv::kStemMaxChannels || wd[2] != 3 || wd[3] != 3) return false;
  auto group = p->attr_int("group", 1);
  return group.is_ok() && *group == 1 && ints_are(*p, "strides", 2, 2) && p->has_attr("strides") &&
         ints_are(*p, "dilations", 1, 2);
}

class FuseConvMaxPool final : public Pass {
 public:
  const char* name() const override { return "fuse-conv-max-pool"; }

  core::Result<PassStats> run(ir::Graph& g, const PassContext&) override {
    PassStats stats;
    for (ir::Node* n : g.nodes()) {
      if (!n->domain().empty() || n->op_type() != "MaxPool" || n->num_inputs() != 1) continue;
      if (n->num_outputs() > 1 && n->output(1)) continue;  // Indices wanted
      ir::Value* x = n->input(0);
      ir::Node* p = x->producer();
      if (!stem_conv(p) || !only_consumer(x, n)) continue;
      // The MaxPool's window as its binding reads it; left alone unless FusedConv accepts it.
      auto kernel = n->attr_ints("kernel_shape");
      if (!kernel.is_ok()) continue;
      auto w = ir::read_window_attrs(*n, *kernel, true);
      if (!w.is_ok() || !ir::check_fused_max_pool(*w, "").is_ok()) continue;
      std::map<std::string, ir::Attribute> attrs = p->attributes();
      attrs["pool_kernel_shape"] = ir::Attribute(w->kernel);
      attrs["pool_strides"] = ir::Attribute(w->strides);
      attrs["pool_pads"] = ir::Attribute(w->pads);
      attrs["pool_ceil_mode"] = ir::Attribute(int64_t{w->ceil_mode ? 1 : 0});
      KESTREL_RETURN_IF_ERROR(
          replace_chain(g, n, {p, n}, "FusedConv", ir::kKestrelDomain, p->inputs(), attrs, p->name()).status());
      ++stats.fused;
    }
    return stats;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_conv_max_pool() {
  return std::make_unique<FuseConvMaxPool>();
}

}  // namespace kestrel::passes
