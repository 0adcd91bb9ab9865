// Removes nodes that do not change their input: Identity, inference Dropout, Cast to the same
// type, and Reshape/Flatten/Squeeze/Unsqueeze/Expand/Tile/Slice/Pad/Transpose/Concat whose
// parameters make them the identity.
#include "ir/onnx_types.h"
#include "passes/pass.h"
#include "passes/rewrite_util.h"

namespace kestrel::passes {

namespace {

bool same_static_shape(const ir::Node* n) {
  const ir::Value* in = n->input(0);
  const ir::Value* out = n->output(0);
  return in && in->shape().fully_known() && out->shape().fully_known() && in->shape() == out->shape() &&
         in->dtype() == out->dtype();
}

bool is_noop(const ir::Node* n) {
  const std::string& op = n->op_type();
  if (!n->domain().empty() || n->num_inputs() == 0 || !n->input(0)) return false;
  if (op == "Identity") return true;
  if (op == "Dropout") {
    // Inference Dropout is the identity; the mask output must be unused.
    if (n->num_outputs() > 1 && (!n->output(1)->uses().empty() || n->output(1)->is_graph_output())) return false;
    if (n->input(2) && !is_constant_all(n->input(2), 0)) return false;  // training_mode
    return true;
  }
  if (op == "Cast") {
    auto to = n->attr_int("to");
    return to.is_ok() && ir::dtype_from_onnx(*to) == n->input(0)->dtype();
  }
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Expand" || op == "Tile")
    return same_static_shape(n);
  if (op == "Transpose") {
    auto perm = n->attr_ints("perm", std::vector<int64_t>{});
    if (!perm.is_ok() || perm->empty()) return n->input(0)->shape().rank() == 1 || n->input(0)->shape().rank() == 0;
    for (size_t i = 0; i < perm->size(); ++i)
      if ((*perm)[i] != static_cast<int64_t>(i)) return false;
    return true;
  }
  if (op == "Slice") {
    if (!same_static_shape(n)) return false;
    ir::Value* steps = n->input(4);
    if (!steps) return true;
    if (!steps->is_constant()) return false;
    for (int64_t i = 0; i < steps->constant().num_elements(); ++i)
      if (steps->constant().element_as_int64(i) <= 0) return false;
    return true;
  }
  if (op == "Pad") return same_static_shape(n) && is_constant_all(n->input(1), 0);
  if (op == "Concat") return n->num_inputs() == 1;
  return false;
}

class RemoveNoops final : public Pass {
 public:
  const char* name() const override { return "remove-noops"; }

  core::Result<PassStats> run(ir::Graph& g, const PassContext&) override {
    PassStats stats;
    for (ir::Node* n : g.nodes()) {
      if (!is_noop(n)) continue;
      ir::Value* in = n->input(0);
      ir::Value* out = n->output(0);
      if (!can_forward(out, in)) continue;
      forward_value(g, out, in);
      KESTREL_RETURN_IF_ERROR(g.remove_node(n));
      ++stats.removed;
    }
    return stats;
  }
};

}  // namespace

std::unique_ptr<Pass> make_remove_noops() { return std::make_unique<RemoveNoops>(); }

}  // namespace kestrel::passes
