// MatMul + Add(bias over the last axis) -> Gemm (2-D operands) or kestrel.FusedMatMul with a bias
// (batched A, as in transformer projections). The bias must be [N] (or [1, ..., 1, N], reshaped when
// constant) so the Add does not broadcast the product to a larger shape.
#include "ir/op_schema.h"
#include "ir/ops/fused_activation.h"
#include "passes/fusion_util.h"
#include "passes/pass.h"

namespace kestrel::passes {

namespace {

class FuseMatMulAdd final : public Pass {
 public:
  const char* name() const override { return "fuse-matmul-add"; }

  core::Result<PassStats> run(ir::Graph& g, const PassContext&) override {
    PassStats stats;
    for (ir::Node* add : g.nodes()) {
      if (!add->domain().empty() || add->op_type() != "Add" || add->num_inputs() != 2) continue;
      for (size_t i = 0; i < 2; ++i) {
        ir::Value* y = add->input(i);
        ir::Value* c = add->input(1 - i);
        ir::Node* p = producer_is(y, "MatMul");
        if (!p || !only_consumer(y, add) || c == y || !is_float_value(y) || c->dtype() != y->dtype()) continue;
        const ir::Shape& as = p->input(0)->shape();
        const ir::Shape& bs = p->input(1)->shape();
        auto yd = static_dims(y), cd = static_dims(c);
        if (!as.rank_known() || !bs.rank_known() || bs.rank() < 2 || !yd || !cd || yd->empty()) continue;
        const int64_t n = yd->back();
        if (cd->empty() || cd->size() > yd->size() || cd->back() != n) continue;
        bool ones = true;
        for (size_t k = 0; k + 1 < cd->size(); ++k) ones = ones && (*cd)[k] == 1;
        if (!ones) continue;
        ir::Value* bias = c;
        if (cd->size() > 1) {
          if (!c->is_constant()) continue;
          auto r = c->constant().reshaped({n});
          if (!r.is_ok()) continue;
          bias = g.add_constant(g.unique_value_name(c->name() + "_1d"), std::move(r).value());
        }
        const bool gemm = as.rank() == 2 && bs.rank() == 2;
        KESTREL_RETURN_IF_ERROR(replace_chain(g, add, {p, add}, gemm ? "Gemm" : "FusedMatMul",
                                              gemm ? "" : ir::kKestrelDomain, {p->input(0), p->input(1), bias}, {},
                                              p->name())
                                    .status());
        ++stats.fused;
        break;
      }
    }
    return stats;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_matmul_add() {
  return std::make_unique<FuseMatMulAdd>();
}

}  // namespace kestrel::passes
