// Rewrite helpers.
#include "passes/rewrite_util.h"

#include <cstring>

namespace kestrel::passes {

bool can_forward(const ir::Value* from, const ir::Value* to) {
  if (!from->is_graph_output()) return true;
  // `to` must be able to take the output's name: a node output of this graph that is not itself
  // a graph output and has no other consumer that would notice the rename.
  return to->kind() == ir::ValueKind::kNodeOutput && !to->is_graph_output() && to->graph() == from->graph();
}

void forward_value(ir::Graph& g, ir::Value* from, ir::Value* to) {
  bool was_output = from->is_graph_output();
  std::string name = from->name();
  g.replace_all_uses(from, to);
  if (was_output) {
    // The old value disappears with its node; give its name to the replacement.
    std::string tmp = g.unique_value_name(name + "_old");
    g.rename_value(from, tmp);
    g.rename_value(to, name);
  }
}

core::Status replace_with_constants(ir::Graph& g, ir::Node* node, std::vector<core::Tensor> data) {
  std::vector<std::pair<ir::Value*, std::string>> renames;
  for (size_t i = 0; i < node->num_outputs(); ++i) {
    ir::Value* out = node->output(i);
    std::string name = out->name();
    ir::Value* c = g.add_constant(g.unique_value_name(name + "_const"), std::move(data[i]));
    g.replace_all_uses(out, c);
    std::string tmp = g.unique_value_name(name + "_old");
    g.rename_value(out, tmp);
    renames.emplace_back(c, name);
  }
  KESTREL_RETURN_IF_ERROR(g.remove_node(node));
  for (auto& [c, name] : renames) g.rename_value(c, name);
  return core::Status::ok();
}

bool tensors_equal(const core::Tensor& a, const core::Tensor& b) {
  if (a.dtype() != b.dtype() || a.dims() != b.dims()) return false;
  if (a.dtype() == core::DType::kString) {
    for (int64_t i = 0; i < a.num_elements(); ++i)
      if (a.data<std::string>()[i] != b.data<std::string>()[i]) return false;
    return true;
  }
  return a.nbytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

bool attributes_equal(const ir::Attribute& a, const ir::Attribute& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case ir::AttrKind::kTensor: return tensors_equal(a.get<core::Tensor>(), b.get<core::Tensor>());
    case ir::AttrKind::kTensors: {
      const auto& x = a.get<std::vector<core::Tensor>>();
      const auto& y = b.get<std::vector<core::Tensor>>();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!tensors_equal(x[i], y[i])) return false;
      return true;
    }
    case ir::AttrKind::kGraph: return a.get<ir::Attribute::GraphPtr>() == b.get<ir::Attribute::GraphPtr>();
    case ir::AttrKind::kGraphs:
      return a.get<std::vector<ir::Attribute::GraphPtr>>() == b.get<std::vector<ir::Attribute::GraphPtr>>();
    case ir::AttrKind::kFloat: return a.get<float>() == b.get<float>();
    case ir::AttrKind::kInt: return a.get<int64_t>() == b.get<int64_t>();
    case ir::AttrKind::kString: return a.get<std::string>() == b.get<std::string>();
    case ir::AttrKind::kFloats: return a.get<std::vector<float>>() == b.get<std::vector<float>>();
    case ir::AttrKind::kInts: return a.get<std::vector<int64_t>>() == b.get<std::vector<int64_t>>();
    case ir::AttrKind::kStrings: return a.get<std::vector<std::string>>() == b.get<std::vector<std::string>>();
  }
  return false;
}

bool is_constant_all(const ir::Value* v, double x) {
  if (!v || !v->is_constant()) return false;
  const core::Tensor& t = v->constant();
  if (t.dtype() == core::DType::kString) return false;
  for (int64_t i = 0; i < t.num_elements(); ++i)
    if (t.element_as_double(i) != x) return false;
  return true;
}

}  // namespace kestrel::passes
