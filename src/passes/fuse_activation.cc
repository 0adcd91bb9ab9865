// Fuses an activation into the epilogue of the Conv / Gemm / MatMul (or already fused op) that
// produces its input: Relu, Clip (Relu6), LeakyRelu, Sigmoid, HardSigmoid, HardSwish (also the
// x * HardSigmoid(x) form), SiLU (x * Sigmoid(x)), Gelu and Tanh. The producer becomes
// kestrel.FusedConv / FusedGemm / FusedMatMul (docs/fused_ops.md). Only when the producer's output
// has no consumer outside the pattern and is not a graph output.
#include <cmath>
#include <limits>

#include "ir/op_schema.h"
#include "ir/ops/fused_activation.h"
#include "passes/fusion_util.h"
#include "passes/pass.h"

namespace kestrel::passes {

namespace {

using ir::FusedActivation;
using ir::FusedActivationSpec;

// The fused op that `p` becomes, or null if p cannot take an activation (already has one, not
// float, or a MatMul whose B might be 1-D).
const char* fused_form(const ir::Node* p) {
  if (!p || !is_float_value(p->output(0)) || p->num_outputs() != 1) return nullptr;
  if (p->domain().empty()) {
    if (p->op_type() == "Conv") return "FusedConv";
    if (p->op_type() == "Gemm") return "FusedGemm";
    if (p->op_type() == "MatMul") {
      const ir::Shape& b = p->input(1)->shape();
      return b.rank_known() && b.rank() >= 2 ? "FusedMatMul" : nullptr;
    }
    return nullptr;
  }
  if (p->domain() != ir::kKestrelDomain) return nullptr;
  if (p->op_type() != "FusedConv" && p->op_type() != "FusedGemm" && p->op_type() != "FusedMatMul") return nullptr;
  if (p->has_attr("pool_kernel_shape")) return nullptr;  // the epilogue runs before the pool
  auto spec = ir::read_fused_activation(*p);
  return spec.is_ok() && spec->kind == FusedActivation::kNone ? p->op_type().c_str() : nullptr;
}

// The activation a single-input node computes, if it is one the epilogues support.
std::optional<FusedActivationSpec> activation_of(const ir::Node* n) {
  if (!n->domain().empty() || !n->input(0)) return std::nullopt;
  const std::string& op = n->op_type();
  FusedActivationSpec s;
  if (op == "Relu") {
    s.kind = FusedActivation::kRelu;
  } else if (op == "Sigmoid") {
    s.kind = FusedActivation::kSigmoid;
  } else if (op == "Tanh") {
    s.kind = FusedActivation::kTanh;
  } else if (op == "HardSwish") {
    s.kind = FusedActivation::kHardSwish;
  } else if (op == "LeakyRelu") {
    auto a = n->attr_float("alpha", 0.01f);
    if (!a.is_ok()) return std::nullopt;
    s.kind = FusedActivation::kLeakyRelu;
    s.alpha = *a;
  } else if (op == "HardSigmoid") {
    auto a = n->attr_float("alpha", 0.2f);
    auto b = n->attr_float("beta", 0.5f);
    if (!a.is_ok() || !b.is_ok()) return std::nullopt;
    s.kind = FusedActivation::kHardSigmoid;
    s.alpha = *a;
    s.beta = *b;
  } else if (op == "Gelu") {
    auto approx = n->attr_string("approximate", std::string("none"));
    if (!approx.is_ok()) return std::nullopt;
    if (*approx == "none")
      s.kind = FusedActivation::kGelu;
    else if (*approx == "tanh")
      s.kind = FusedActivation::kGeluTanh;
    else
      return std::nullopt;
  } else if (op == "Clip") {
    std::optional<double> lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
    if (n->input(1)) lo = scalar_constant(n->input(1));
    if (n->input(2)) hi = scalar_constant(n->input(2));
    if (!lo || !hi || std::isnan(*lo) || std::isnan(*hi) || *lo > *hi) return std::nullopt;
    s.kind = FusedActivation::kClip;
    s.alpha = static_cast<float>(*lo);
    s.beta = static_cast<float>(*hi);
  } else {
    return std::nullopt;
  }
  return s;
}

core::Status fuse(ir::Graph& g, ir::Node* p, const char* fused_op, ir::Node* last, std::vector<ir::Node*> dead,
                  const FusedActivationSpec& spec) {
  std::map<std::string, ir::Attribute> attrs = p->attributes();
  KESTREL_ASSIGN_OR_RETURN(ir::Node * n,
                           replace_chain(g, last, dead, fused_op, ir::kKestrelDomain, p->inputs(), attrs, p->name()));
  ir::set_fused_activation(*n, spec);
  return core::Status::ok();
}

class FuseActivation final : public Pass {
 public:
  const char* name() const override { return "fuse-activation"; }

  core::Result<PassStats> run(ir::Graph& g, const PassContext&) override {
    PassStats stats;
    for (ir::Node* n : g.nodes()) {
      // x * Sigmoid(x) -> Silu, x * HardSigmoid(x) (1/6, 1/2) -> HardSwish.
      if (n->domain().empty() && n->op_type() == "Mul" && n->num_inputs() == 2) {
        for (size_t i = 0; i < 2; ++i) {
          ir::Value* x = n->input(i);
          ir::Value* s = n->input(1 - i);
          ir::Node* p = x->producer();
          const char* fused_op = fused_form(p);
          ir::Node* act = s->producer();
          if (!fused_op || !act || !act->domain().empty() || act->input(0) != x || !only_consumer(s, n)) continue;
          if (x->is_graph_output() || x->uses().size() != 2) continue;
          FusedActivationSpec spec;
          if (act->op_type() == "Sigmoid") {
            spec.kind = FusedActivation::kSilu;
          } else if (act->op_type() == "HardSigmoid") {
            auto a = act->attr_float("alpha", 0.2f);
            auto b = act->attr_float("beta", 0.5f);
            if (!a.is_ok() || !b.is_ok() || !near(*a, 1.0 / 6, 1e-6) || *b != 0.5f) continue;
            spec.kind = FusedActivation::kHardSwish;
          } else {
            continue;
          }
          KESTREL_RETURN_IF_ERROR(fuse(g, p, fused_op, n, {p, act, n}, spec));
          ++stats.fused;
          break;
        }
        continue;
      }
      std::optional<FusedActivationSpec> spec = activation_of(n);
      if (!spec) continue;
      ir::Value* x = n->input(0);
      ir::Node* p = x->producer();
      const char* fused_op = fused_form(p);
      if (!fused_op || !only_consumer(x, n)) continue;
      KESTREL_RETURN_IF_ERROR(fuse(g, p, fused_op, n, {p, n}, *spec));
      ++stats.fused;
    }
    return stats;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_activation() {
  return std::make_unique<FuseActivation>();
}

}  // namespace kestrel::passes
