// Fusion helpers.
#include "passes/fusion_util.h"

#include <cmath>

#include "passes/rewrite_util.h"

namespace kestrel::passes {

ir::Node* producer_is(const ir::Value* v, const char* op) {
  if (!v || !v->producer()) return nullptr;
  ir::Node* p = v->producer();
  return p->domain().empty() && p->op_type() == op ? p : nullptr;
}

bool only_consumer(const ir::Value* v, const ir::Node* consumer) {
  return v && !v->is_graph_output() && v->uses().size() == 1 && v->uses()[0].node == consumer &&
         v->uses()[0].input_index >= 0;
}

ir::Node* single_consumer(const ir::Value* v) {
  if (!v || v->is_graph_output() || v->uses().size() != 1 || v->uses()[0].input_index < 0) return nullptr;
  return v->uses()[0].node;
}

ir::Node* single_consumer_is(const ir::Value* v, const char* op) {
  ir::Node* c = single_consumer(v);
  return c && c->domain().empty() && c->op_type() == op ? c : nullptr;
}

ir::Value* other_input(const ir::Node* n, const ir::Value* v) {
  if (n->num_inputs() != 2) return nullptr;
  if (n->input(0) == v && n->input(1) != v) return n->input(1);
  if (n->input(1) == v && n->input(0) != v) return n->input(0);
  return nullptr;
}

std::optional<double> scalar_constant(const ir::Value* v) {
  if (!v || !v->is_constant() || v->constant().num_elements() != 1) return std::nullopt;
  const core::DType dt = v->constant().dtype();
  if (dt == core::DType::kString || dt == core::DType::kBool) return std::nullopt;
  return v->constant().element_as_double(0);
}

bool near(double a, double b, double rel) {
  return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b));
}

std::optional<std::vector<double>> f32_constant(const ir::Value* v) {
  if (!v || !v->is_constant() || v->constant().dtype() != core::DType::kF32) return std::nullopt;
  const core::Tensor& t = v->constant();
  std::vector<double> out(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = t.data<float>()[i];
  return out;
}

ir::Value* add_f32_constant(ir::Graph& g, const std::string& hint, const std::vector<double>& data, core::Dims dims) {
  core::Tensor t = core::Tensor::allocate(core::DType::kF32, std::move(dims)).value();
  for (size_t i = 0; i < data.size(); ++i) t.data<float>()[i] = static_cast<float>(data[i]);
  return g.add_constant(g.unique_value_name(hint), std::move(t));
}

bool is_float_value(const ir::Value* v) {
  return v && (v->dtype() == core::DType::kF32 || v->dtype() == core::DType::kF16 || v->dtype() == core::DType::kF64 ||
               v->dtype() == core::DType::kBF16);
}

std::optional<core::Dims> static_dims(const ir::Value* v) {
  if (!v || !v->shape().fully_known()) return std::nullopt;
  return v->shape().concrete();
}

core::Status remove_nodes(ir::Graph& g, std::vector<ir::Node*> nodes) {
  while (!nodes.empty()) {
    bool progress = false;
    for (size_t i = 0; i < nodes.size(); ++i) {
      bool used = false;
      for (const ir::Value* v : nodes[i]->outputs()) used = used || !v->uses().empty() || v->is_graph_output();
      if (used) continue;
      KESTREL_RETURN_IF_ERROR(g.remove_node(nodes[i]));
      nodes.erase(nodes.begin() + static_cast<std::ptrdiff_t>(i));
      progress = true;
      break;
    }
    if (!progress) return core::internal_error("fusion: a matched node still has consumers outside the pattern");
  }
  return core::Status::ok();
}

core::Result<ir::Node*> replace_chain(ir::Graph& g, ir::Node* last, const std::vector<ir::Node*>& dead,
                                      const std::string& op, const std::string& domain,
                                      const std::vector<ir::Value*>& inputs,
                                      const std::map<std::string, ir::Attribute>& attrs, const std::string& node_name) {
  ir::Value* old_out = last->output(0);
  ir::Node* n =
      g.insert_node_before(last, op, inputs, {g.unique_value_name(old_out->name() + "_fused")}, node_name, domain);
  for (const auto& [k, a] : attrs) n->set_attr(k, a);
  n->output(0)->set_type(old_out->type());
  forward_value(g, old_out, n->output(0));
  KESTREL_RETURN_IF_ERROR(remove_nodes(g, dead));
  return n;
}

}  // namespace kestrel::passes
