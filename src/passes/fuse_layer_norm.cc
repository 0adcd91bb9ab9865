// Rewrites the decomposed layer normalization that exporters emit
//   m = ReduceMean(x, trailing axes); d = x - m; v = ReduceMean(d^2 | d*d, same axes);
//   y = d / Sqrt(v + eps) [* gamma] [+ beta]
// into one LayerNormalization(x, gamma, beta, axis, epsilon). gamma / beta must not broadcast
// beyond the normalized dims; every intermediate must be used only inside the pattern.
#include <unordered_set>

#include "passes/fusion_util.h"
#include "passes/pass.h"

namespace kestrel::passes {

namespace {

// The normalized axes of a keepdims ReduceMean over the trailing axes of its rank-r input, as
// the first axis (>= 0), or -1.
int64_t trailing_reduce_axis(const ir::Node* rm) {
  if (!rm->input(0)) return -1;
  auto keep = rm->attr_int("keepdims", 1);
  auto noop = rm->attr_int("noop_with_empty_axes", 0);
  const ir::Shape& xs = rm->input(0)->shape();
  if (!keep.is_ok() || *keep != 1 || !noop.is_ok() || !xs.rank_known() || xs.rank() == 0) return -1;
  std::vector<int64_t> axes;
  if (rm->input(1)) {
    if (!rm->input(1)->is_constant()) return -1;
    const core::Tensor& t = rm->input(1)->constant();
    for (int64_t i = 0; i < t.num_elements(); ++i) axes.push_back(t.element_as_int64(i));
  } else {
    auto a = rm->attr_ints("axes", std::vector<int64_t>{});
    if (!a.is_ok()) return -1;
    axes = *a;
  }
  if (axes.empty()) return -1;
  const int64_t r = xs.rank();
  std::vector<bool> seen(static_cast<size_t>(r), false);
  for (int64_t a : axes) {
    if (a < -r || a >= r) return -1;
    seen[static_cast<size_t>(a < 0 ? a + r : a)] = true;
  }
  const int64_t first = r - static_cast<int64_t>(axes.size());
  for (int64_t i = 0; i < r; ++i)
    if (seen[static_cast<size_t>(i)] != (i >= first)) return -1;
  return first;
}

ir::Node* single_use_producer(const ir::Value* v, const ir::Node* user, const char* op) {
  ir::Node* p = producer_is(v, op);
  return p && only_consumer(v, user) ? p : nullptr;
}

class FuseLayerNorm final : public Pass {
 public:
  const char* name() const override { return "fuse-layer-norm"; }

  core::Result<PassStats> run(ir::Graph& g, const PassContext&) override {
    PassStats stats;
    std::unordered_set<const ir::Node*> gone;  // removed later nodes still in the snapshot
    for (ir::Node* div : g.nodes()) {
      if (gone.count(div) || !div->domain().empty() || div->op_type() != "Div" || div->num_inputs() != 2) continue;
      ir::Value* d = div->input(0);
      ir::Node* sqrt = single_use_producer(div->input(1), div, "Sqrt");
      ir::Node* sub = producer_is(d, "Sub");
      if (!sqrt || !sub || d->is_graph_output()) continue;
      ir::Node* add_eps = single_use_producer(sqrt->input(0), sqrt, "Add");
      if (!add_eps || add_eps->num_inputs() != 2) continue;
      std::optional<double> eps;
      ir::Value* v = nullptr;
      for (size_t i = 0; i < 2 && !eps; ++i)
        if ((eps = scalar_constant(add_eps->input(1 - i)))) v = add_eps->input(i);
      ir::Node* rm2 = v ? single_use_producer(v, add_eps, "ReduceMean") : nullptr;
      if (!rm2 || *eps < 0) continue;
      ir::Value* sq = rm2->input(0);
      ir::Node* sqn = sq ? sq->producer() : nullptr;
      if (!sqn || !only_consumer(sq, rm2) || !sqn->domain().empty()) continue;
      const bool pow2 = sqn->op_type() == "Pow" && sqn->input(0) == d && scalar_constant(sqn->input(1)) == 2.0;
      const bool mul2 = sqn->op_type() == "Mul" && sqn->input(0) == d && sqn->input(1) == d;
      // d is used by the square (once, or twice as Mul(d, d)) and the Div, nothing else.
      if ((!pow2 && !mul2) || d->uses().size() != (pow2 ? 2u : 3u)) continue;
      ir::Value* x = sub->input(0);
      ir::Node* rm1 = sub->input(1) ? producer_is(sub->input(1), "ReduceMean") : nullptr;
      if (!rm1 || rm1->input(0) != x || !only_consumer(sub->input(1), sub) || !is_float_value(x)) continue;
      const int64_t axis = trailing_reduce_axis(rm1);
      if (axis < 0 || trailing_reduce_axis(rm2) != axis) continue;
      const int64_t normalized = x->shape().rank() - axis;
      std::vector<ir::Node*> nodes{rm1, sub, sqn, rm2, add_eps, sqrt, div};
      ir::Node* last = div;
      // Optional affine: * gamma, + beta (each must not broadcast x to a larger shape).
      auto affine = [&](const char* op) -> ir::Value* {
        ir::Node* n = single_consumer_is(last->output(0), op);
        if (!n || n->num_inputs() != 2) return nullptr;
        ir::Value* p = other_input(n, last->output(0));
        if (!p || !p->shape().rank_known() || p->shape().rank() > normalized || p->dtype() != x->dtype())
          return nullptr;
        auto od = static_dims(n->output(0)), xd = static_dims(x);
        if (!od || !xd || *od != *xd) return nullptr;
        nodes.push_back(n);
        last = n;
        return p;
      };
      ir::Value* gamma = affine("Mul");
      ir::Value* beta = affine("Add");
      if (!gamma) {
        // LayerNormalization needs a scale: ones of the normalized shape.
        auto xd = static_dims(x);
        if (!xd || x->dtype() != core::DType::kF32) continue;
        core::Dims nd(xd->end() - normalized, xd->end());
        gamma = add_f32_constant(g, x->name() + "_ln_ones", std::vector<double>(core::num_elements(nd), 1.0), nd);
      }
      std::vector<ir::Value*> ins{x, gamma};
      if (beta) ins.push_back(beta);
      std::map<std::string, ir::Attribute> attrs{{"axis", axis}, {"epsilon", static_cast<float>(*eps)}};
      KESTREL_RETURN_IF_ERROR(
          replace_chain(g, last, nodes, "LayerNormalization", "", ins, attrs, div->name() + "_layernorm").status());
      for (ir::Node* n : nodes) gone.insert(n);
      stats.fused += 1;
      stats.removed += static_cast<int>(nodes.size()) - 1;
    }
    if (stats.changed()) g.remove_unused_values();
    return stats;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_layer_norm() {
  return std::make_unique<FuseLayerNorm>();
}

}  // namespace kestrel::passes
