// Collapses a chain of shape-only ops (Reshape, Flatten, Squeeze, Unsqueeze) whose result has a
// static shape into one Reshape by a constant shape: Squeeze / Unsqueeze / Flatten next to a
// Reshape (or each other) fold away. Intermediates must be used only inside the chain.
#include "passes/fusion_util.h"
#include "passes/pass.h"

namespace kestrel::passes {

namespace {

bool reshape_like(const ir::Node* n) {
  if (!n || !n->domain().empty() || !n->input(0)) return false;
  const std::string& op = n->op_type();
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze";
}

class MergeReshapes final : public Pass {
 public:
  const char* name() const override { return "merge-reshapes"; }

  core::Result<PassStats> run(ir::Graph& g, const PassContext&) override {
    PassStats stats;
    for (ir::Node* n : g.nodes()) {
      if (!reshape_like(n)) continue;
      auto dims = static_dims(n->output(0));
      if (!dims) continue;
      std::vector<ir::Node*> chain{n};
      ir::Value* x = n->input(0);
      while (reshape_like(x->producer()) && only_consumer(x, chain.back())) {
        chain.push_back(x->producer());
        x = x->producer()->input(0);
      }
      if (chain.size() < 2) continue;
      core::Tensor shape = core::Tensor::from_vector<int64_t>(*dims, {static_cast<int64_t>(dims->size())});
      ir::Value* sv = g.add_constant(g.unique_value_name(n->output(0)->name() + "_shape"), std::move(shape));
      std::map<std::string, ir::Attribute> attrs;
      for (int64_t d : *dims)
        if (d == 0) attrs["allowzero"] = int64_t{1};
      KESTREL_RETURN_IF_ERROR(replace_chain(g, n, chain, "Reshape", "", {x, sv}, attrs, n->name()).status());
      stats.removed += static_cast<int>(chain.size()) - 1;
    }
    if (stats.changed()) g.remove_unused_values();
    return stats;
  }
};

}  // namespace

std::unique_ptr<Pass> make_merge_reshapes() {
  return std::make_unique<MergeReshapes>();
}

}  // namespace kestrel::passes
