// Folds a squeeze-excite block's channel scaling into the 1x1 conv that reads it:
// Conv1x1(Mul(x, s)) -> kestrel.FusedConv(x, W, B, Z, S=s) with s [N, C, 1, 1] and x [N, C, H, W], so the kernel
// scales the weights per run (M x C multiplies) instead of making a pass over x (the squeeze-excite blocks of
// EfficientNet and MobileNet-V3, whose Mul feeds the block's projection). The conv may already be a
// FusedConv (residual, activation), but not a pooled one; it must be group 1, 1x1, stride 1, unpadded, with
// constant weights; the Mul's output must have no other reader; and the plane must have at least
// kMinPixelsPerOutputChannel x M pixels: the kernel's GEMM reads the scaled weights unpacked, which on smaller
// planes costs more than the Mul's pass saves. EfficientNet-B0, 1 thread, each projection against Mul + conv
// (medians of 3 interleaved traces): 112 x 112 and 56 x 56 planes (M 16 / 24) 0.81-0.86 of the time, 28 x 28
// (M 40) 0.89-0.95, 14 x 14 (M 80 / 112) 1.03-1.12 with the weights scaled and 1.04-1.09 with X scaled into scratch
// for the pre-packed kernel instead; so those stay unfused.
#include "ir/op_schema.h"
#include "passes/fusion_util.h"
#include "passes/pass.h"

namespace kestrel::passes {

namespace {

bool all_equal(const ir::Node* n, const char* attr, int64_t want) {
  if (!n->has_attr(attr)) return true;
  auto v = n->attr_ints(attr);
  if (!v.is_ok()) return false;
  for (int64_t x : *v)
    if (x != want) return false;
  return true;
}

// A Conv / FusedConv the scale can be folded into.
bool pointwise_consumer(const ir::Node* c, const ir::Value* x) {
  const bool plain = c->domain().empty() && c->op_type() == "Conv";
  const bool fused = c->domain() == ir::kKestrelDomain && c->op_type() == "FusedConv";
  if (!(plain || fused) || c->input(0) != x || c->num_inputs() < 2 || c->num_inputs() > 4) return false;
  if (fused && c->has_attr("pool_kernel_shape")) return false;
  const ir::Value* w = c->input(1);
  auto wd = static_dims(w);
  if (!w->is_constant() || !is_float_value(w) || !wd || wd->size() != 4 || (*wd)[2] != 1 || (*wd)[3] != 1) return false;
  auto pad = c->attr_string("auto_pad", std::string("NOTSET"));
  auto group = c->attr_int("group", 1);
  return pad.is_ok() && (*pad == "NOTSET" || *pad == "VALID") && group.is_ok() && *group == 1 &&
         all_equal(c, "strides", 1) && all_equal(c, "dilations", 1) && all_equal(c, "pads", 0);
}

constexpr int64_t kMinPixelsPerOutputChannel = 8;

class FuseSeScale final : public Pass {
 public:
  const char* name() const override { return "fuse-se-scale"; }

  core::Result<PassStats> run(ir::Graph& g, const PassContext&) override {
    PassStats stats;
    // Over the convs, so that the nodes replaced (the Mul before, the conv itself) are never visited again.
    for (ir::Node* c : g.nodes()) {
      ir::Value* y = c->num_inputs() > 0 ? c->input(0) : nullptr;
      ir::Node* mul = y ? y->producer() : nullptr;
      if (!mul || !mul->domain().empty() || mul->op_type() != "Mul" || mul->num_inputs() != 2) continue;
      if (single_consumer(y) != c || !pointwise_consumer(c, y) || !is_float_value(y)) continue;
      auto yd = static_dims(y), wd = static_dims(c->input(1));
      if (!yd || yd->size() != 4 || (*yd)[2] * (*yd)[3] < kMinPixelsPerOutputChannel * (*wd)[0]) continue;
      for (size_t i = 0; i < 2; ++i) {
        ir::Value* x = mul->input(i);
        ir::Value* s = mul->input(1 - i);
        auto xd = static_dims(x), sd = static_dims(s);
        if (!xd || !sd || *xd != *yd || x->dtype() != y->dtype() || s->dtype() != y->dtype()) continue;
        if (*sd != core::Dims{(*xd)[0], (*xd)[1], 1, 1}) continue;
        std::vector<ir::Value*> ins = c->inputs();
        ins[0] = x;
        ins.resize(4, nullptr);
        ins.push_back(s);
        KESTREL_RETURN_IF_ERROR(
            replace_chain(g, c, {mul, c}, "FusedConv", ir::kKestrelDomain, ins, c->attributes(), c->name()).status());
        ++stats.fused;
        break;
      }
    }
    return stats;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_se_scale() {
  return std::make_unique<FuseSeScale>();
}

}  // namespace kestrel::passes
