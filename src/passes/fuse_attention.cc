// Rewrites scaled-dot-product attention on 4-D [B, H, S, D] operands
//   MatMul(Q, K^T) -> [Mul / Div by a scalar constant] -> [Add mask] -> Softmax(last axis) -> MatMul(., V)
// into one kestrel.Attention(Q, K, V, [mask], scale). K^T is usually Transpose(K, [0,1,3,2]) (or
// a Transpose whose perm swaps the last two axes of another one): K is then read from that
// Transpose's input through the complementary permutation; otherwise a Transpose is inserted.
// Every intermediate must be used only inside the pattern.
#include <cmath>
#include <numeric>

#include "ir/op_schema.h"
#include "passes/fusion_util.h"
#include "passes/pass.h"

namespace kestrel::passes {

namespace {

ir::Node* single_use_producer(const ir::Value* v, const ir::Node* user, const char* op) {
  ir::Node* p = producer_is(v, op);
  return p && only_consumer(v, user) ? p : nullptr;
}

bool rank4(const ir::Value* v) {
  return v && v->shape().rank_known() && v->shape().rank() == 4;
}

// v is MatMul(Q, Kt) of 4-D operands, possibly scaled by a scalar constant (Mul / Div).
bool scores_product(const ir::Value* v) {
  const ir::Node* p = v->producer();
  if (p && p->domain().empty() && (p->op_type() == "Mul" || p->op_type() == "Div") && p->num_inputs() == 2) {
    for (size_t i = 0; i < 2; ++i)
      if (scalar_constant(p->input(1 - i)) && (i == 0 || p->op_type() == "Mul")) {
        p = p->input(i)->producer();
        break;
      }
  }
  return p && p->domain().empty() && p->op_type() == "MatMul" && rank4(p->input(0)) && rank4(p->input(1));
}

// The value K with Kt = K^T (last two axes swapped), inserting a Transpose before `before` if needed.
ir::Value* untransposed(ir::Graph& g, ir::Value* kt, ir::Node* before) {
  if (ir::Node* t = producer_is(kt, "Transpose")) {
    auto perm = t->attr_ints("perm", std::vector<int64_t>{});
    if (perm.is_ok() && perm->size() == 4) {
      std::vector<int64_t> p = *perm;
      std::swap(p[2], p[3]);
      std::vector<int64_t> id(4);
      std::iota(id.begin(), id.end(), 0);
      if (p == id) return t->input(0);
      ir::Node* n = g.insert_node_before(before, "Transpose", {t->input(0)}, {g.unique_value_name(kt->name() + "_k")},
                                         t->name() + "_k");
      n->set_attr("perm", p);
      return n->output(0);
    }
  }
  ir::Node* n =
      g.insert_node_before(before, "Transpose", {kt}, {g.unique_value_name(kt->name() + "_k")}, kt->name() + "_k");
  n->set_attr("perm", std::vector<int64_t>{0, 1, 3, 2});
  return n->output(0);
}

class FuseAttention final : public Pass {
 public:
  const char* name() const override { return "fuse-attention"; }

  core::Result<PassStats> run(ir::Graph& g, const PassContext&) override {
    PassStats stats;
    for (ir::Node* out : g.nodes()) {
      if (!out->domain().empty() || out->op_type() != "MatMul") continue;
      ir::Value* v = out->input(1);
      ir::Node* sm = single_use_producer(out->input(0), out, "Softmax");
      if (!sm || !rank4(v) || !rank4(out->output(0)) || !is_float_value(v)) continue;
      auto axis = sm->attr_int("axis", -1);
      if (!axis.is_ok() || (*axis != -1 && *axis != 3)) continue;
      std::vector<ir::Node*> nodes{sm, out};
      ir::Node* user = sm;  // the consumer of s inside the pattern
      ir::Value* s = sm->input(0);
      ir::Value* mask = nullptr;
      if (ir::Node* add = single_use_producer(s, sm, "Add"); add && add->num_inputs() == 2) {
        // The scores are the operand that comes from the scaled (or plain) Q K^T product.
        for (size_t i = 0; i < 2 && !mask; ++i) {
          if (scores_product(add->input(i))) {
            mask = add->input(1 - i);
            s = add->input(i);
          }
        }
        if (!mask || !only_consumer(s, add) || mask->dtype() != v->dtype()) continue;
        auto sd = static_dims(s), ad = static_dims(add->output(0));
        if (!mask->shape().rank_known() || mask->shape().rank() > 4 || (sd && ad && *sd != *ad) ||
            (!sd && !mask->shape().fully_known()))
          continue;
        nodes.push_back(add);
        user = add;
      }
      double scale = 1.0;
      if (ir::Node* sc = s->producer();
          sc && sc->domain().empty() && (sc->op_type() == "Mul" || sc->op_type() == "Div")) {
        if (!only_consumer(s, user) || sc->num_inputs() != 2) continue;
        std::optional<double> c;
        ir::Value* qk = nullptr;
        if (sc->op_type() == "Div") {
          c = scalar_constant(sc->input(1));
          if (c && *c != 0) c = 1.0 / *c;
          qk = sc->input(0);
        } else {
          for (size_t i = 0; i < 2 && !c; ++i)
            if ((c = scalar_constant(sc->input(1 - i)))) qk = sc->input(i);
        }
        if (!c || !std::isfinite(*c)) continue;
        scale = *c;
        nodes.push_back(sc);
        user = sc;
        s = qk;
      }
      ir::Node* mm = producer_is(s, "MatMul");
      if (!mm || !only_consumer(s, user) || !rank4(mm->input(0)) || !rank4(mm->input(1))) continue;
      if (mm->input(0)->dtype() != v->dtype()) continue;
      nodes.push_back(mm);
      ir::Value* k = untransposed(g, mm->input(1), out);
      std::vector<ir::Value*> ins{mm->input(0), k, v};
      if (mask) ins.push_back(mask);
      KESTREL_RETURN_IF_ERROR(replace_chain(g, out, nodes, "Attention", ir::kKestrelDomain, ins,
                                            {{"scale", static_cast<float>(scale)}}, out->name() + "_attention")
                                  .status());
      stats.fused += 1;
      stats.removed += static_cast<int>(nodes.size()) - 1;
    }
    return stats;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_attention() {
  return std::make_unique<FuseAttention>();
}

}  // namespace kestrel::passes
