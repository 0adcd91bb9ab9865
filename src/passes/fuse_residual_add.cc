// Fuses a residual Add into the epilogue of the Conv / MatMul that produces one of its operands:
// Add(conv(x), z) -> kestrel.FusedConv(x, W, B, Z=z), Add(matmul(a, b), z) -> kestrel.FusedMatMul
// with Z. z must already have the output's static shape (no broadcasting) and dtype; the producer
// must have no activation yet (the epilogue adds Z before the activation) and no other consumer.
#include <algorithm>

#include "ir/op_schema.h"
#include "ir/ops/fused_activation.h"
#include "passes/fusion_util.h"
#include "passes/pass.h"

namespace kestrel::passes {

namespace {

// The fused op `p` becomes when it takes a residual, or null.
const char* residual_form(const ir::Node* p) {
  if (!p || p->num_outputs() != 1 || !is_float_value(p->output(0))) return nullptr;
  if (p->domain().empty()) {
    if (p->op_type() == "Conv") return "FusedConv";
    if (p->op_type() == "MatMul") {
      const ir::Shape& b = p->input(1)->shape();
      return b.rank_known() && b.rank() >= 2 ? "FusedMatMul" : nullptr;
    }
    return nullptr;
  }
  if (p->domain() != ir::kKestrelDomain || (p->op_type() != "FusedConv" && p->op_type() != "FusedMatMul"))
    return nullptr;
  if (p->has_attr("pool_kernel_shape")) return nullptr;  // the epilogue runs before the pool
  auto spec = ir::read_fused_activation(*p);
  if (!spec.is_ok() || spec->kind != ir::FusedActivation::kNone || p->input(3)) return nullptr;
  return p->op_type().c_str();
}

class FuseResidualAdd final : public Pass {
 public:
  const char* name() const override { return "fuse-residual-add"; }

  core::Result<PassStats> run(ir::Graph& g, const PassContext&) override {
    PassStats stats;
    for (ir::Node* add : g.nodes()) {
      if (!add->domain().empty() || add->op_type() != "Add" || add->num_inputs() != 2) continue;
      for (size_t i = 0; i < 2; ++i) {
        ir::Value* y = add->input(i);
        ir::Value* z = add->input(1 - i);
        ir::Node* p = y->producer();
        const char* fused_op = residual_form(p);
        if (!fused_op || z == y || !only_consumer(y, add)) continue;
        auto yd = static_dims(y), zd = static_dims(z), od = static_dims(add->output(0));
        if (!yd || !zd || !od || *yd != *zd || *yd != *od || y->dtype() != z->dtype()) continue;
        std::vector<ir::Value*> ins = p->inputs();  // a FusedConv's channel scale (input 4) stays
        ins.resize(std::max<size_t>(ins.size(), 4), nullptr);
        ins[3] = z;
        KESTREL_RETURN_IF_ERROR(
            replace_chain(g, add, {p, add}, fused_op, ir::kKestrelDomain, ins, p->attributes(), p->name()).status());
        ++stats.fused;
        break;
      }
    }
    return stats;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_residual_add() {
  return std::make_unique<FuseResidualAdd>();
}

}  // namespace kestrel::passes
