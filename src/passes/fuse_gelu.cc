// Rewrites the decomposed GELU forms into one Gelu node (ONNX opset 20 op):
//   erf form:  0.5 * x * (1 + Erf(x / sqrt 2))              (Div by sqrt 2 or Mul by 1/sqrt 2)
//   tanh form: 0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * Pow(x, 3))))  -> approximate="tanh"
// with the 0.5 applied to x, to (1 + ...), or to their product. Every intermediate must be used
// only inside the pattern.
#include <cmath>

#include "passes/fusion_util.h"
#include "passes/pass.h"

namespace kestrel::passes {

namespace {

// n is Mul/Div(v, constant c) (constant on either side for Mul); returns v and sets *c.
ir::Value* scaled_input(const ir::Node* n, double* c) {
  if (!n || !n->domain().empty() || n->num_inputs() != 2) return nullptr;
  if (n->op_type() == "Div") {
    auto k = scalar_constant(n->input(1));
    if (!k || *k == 0) return nullptr;
    *c = 1.0 / *k;
    return n->input(0);
  }
  if (n->op_type() != "Mul") return nullptr;
  for (size_t i = 0; i < 2; ++i)
    if (auto k = scalar_constant(n->input(1 - i))) {
      *c = *k;
      return n->input(i);
    }
  return nullptr;
}

// Producer of v if it is used only by `user` and is `op` (domain "").
ir::Node* inner(const ir::Value* v, const ir::Node* user, const char* op) {
  ir::Node* p = producer_is(v, op);
  return p && only_consumer(v, user) ? p : nullptr;
}

// a = Add(1, f(x)) with f the erf or tanh core; returns x, appends the matched nodes.
ir::Value* one_plus_core(ir::Value* a, const ir::Node* user, std::vector<ir::Node*>* nodes, bool* tanh_form) {
  ir::Node* add = inner(a, user, "Add");
  if (!add || add->num_inputs() != 2) return nullptr;
  for (size_t i = 0; i < 2; ++i) {
    auto one = scalar_constant(add->input(1 - i));
    if (!one || *one != 1.0) continue;
    ir::Value* t = add->input(i);
    if (ir::Node* erf = inner(t, add, "Erf")) {
      ir::Node* d = erf->input(0)->producer();
      double c = 0;
      ir::Value* x = only_consumer(erf->input(0), erf) ? scaled_input(d, &c) : nullptr;
      if (!x || !near(c, 1.0 / std::sqrt(2.0), 1e-4)) return nullptr;
      nodes->insert(nodes->end(), {add, erf, d});
      *tanh_form = false;
      return x;
    }
    if (ir::Node* th = inner(t, add, "Tanh")) {
      // Tanh(k * (x + 0.044715 * x^3)), k = sqrt(2 / pi).
      ir::Node* mk = only_consumer(th->input(0), th) ? th->input(0)->producer() : nullptr;
      double k = 0;
      ir::Value* v = scaled_input(mk, &k);
      if (!v || !near(k, std::sqrt(2.0 / M_PI), 1e-4)) return nullptr;
      ir::Node* sum = inner(v, mk, "Add");
      if (!sum || sum->num_inputs() != 2) return nullptr;
      for (size_t j = 0; j < 2; ++j) {
        ir::Node* mc = only_consumer(sum->input(j), sum) ? sum->input(j)->producer() : nullptr;
        double c3 = 0;
        ir::Value* cube = scaled_input(mc, &c3);
        if (!cube || !near(c3, 0.044715, 1e-4)) continue;
        ir::Node* pw = inner(cube, mc, "Pow");
        auto e = pw ? scalar_constant(pw->input(1)) : std::nullopt;
        ir::Value* x = sum->input(1 - j);
        if (!pw || !e || *e != 3.0 || pw->input(0) != x) continue;
        nodes->insert(nodes->end(), {add, th, mk, sum, mc, pw});
        *tanh_form = true;
        return x;
      }
      return nullptr;
    }
  }
  return nullptr;
}

// h = Mul(v, 0.5) used only by `user`: returns v.
ir::Value* half_of(ir::Value* h, const ir::Node* user, std::vector<ir::Node*>* nodes) {
  ir::Node* m = inner(h, user, "Mul");
  double c = 0;
  ir::Value* v = scaled_input(m, &c);
  if (!v || c != 0.5) return nullptr;
  nodes->push_back(m);
  return v;
}

class FuseGelu final : public Pass {
 public:
  const char* name() const override { return "fuse-gelu"; }

  core::Result<PassStats> run(ir::Graph& g, const PassContext&) override {
    PassStats stats;
    for (ir::Node* out : g.nodes()) {
      if (!out->domain().empty() || out->op_type() != "Mul" || out->num_inputs() != 2) continue;
      ir::Value* x = nullptr;
      bool tanh_form = false;
      std::vector<ir::Node*> nodes{out};
      for (size_t i = 0; i < 2 && !x; ++i) {
        nodes.resize(1);
        ir::Value* p = out->input(i);
        ir::Value* q = out->input(1 - i);
        if (auto half = scalar_constant(q); half && *half == 0.5) {
          // (x * (1 + f)) * 0.5
          ir::Node* m = inner(p, out, "Mul");
          if (!m || m->num_inputs() != 2) continue;
          for (size_t j = 0; j < 2 && !x; ++j) {
            nodes.resize(1);
            nodes.push_back(m);
            ir::Value* cand = one_plus_core(m->input(j), m, &nodes, &tanh_form);
            if (cand && cand == m->input(1 - j)) x = cand;
          }
          continue;
        }
        // (0.5 * x) * (1 + f)   or   x * ((1 + f) * 0.5)
        ir::Value* hx = half_of(p, out, &nodes);
        if (hx) {
          ir::Value* cand = one_plus_core(q, out, &nodes, &tanh_form);
          if (cand && cand == hx) x = cand;
          continue;
        }
        ir::Node* m = inner(q, out, "Mul");
        double c = 0;
        ir::Value* a = m ? scaled_input(m, &c) : nullptr;
        if (!a || c != 0.5) continue;
        nodes.push_back(m);
        ir::Value* cand = one_plus_core(a, m, &nodes, &tanh_form);
        if (cand && cand == p) x = cand;
      }
      if (!x || !is_float_value(x)) continue;
      std::map<std::string, ir::Attribute> attrs;
      if (tanh_form) attrs["approximate"] = std::string("tanh");
      KESTREL_RETURN_IF_ERROR(replace_chain(g, out, nodes, "Gelu", "", {x}, attrs, out->name()).status());
      stats.fused += 1;
      stats.removed += static_cast<int>(nodes.size()) - 1;
    }
    return stats;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_gelu() {
  return std::make_unique<FuseGelu>();
}

}  // namespace kestrel::passes
