// Graph verifier.
#include "ir/verifier.h"

#include <algorithm>
#include <unordered_set>

#include "core/str_util.h"
#include "ir/op_schema.h"

namespace kestrel::ir {

using core::Status;
using core::str_cat;

namespace {

bool defined_in_enclosing(const Graph& g, const std::string& name) {
  for (const Graph* p = g.parent(); p; p = p->parent())
    if (p->find_value(name)) return true;
  return false;
}

Status verify(const Graph& g) {
  std::unordered_set<const Value*> defined;
  for (const Value* v : g.inputs()) defined.insert(v);
  for (const Value* v : g.values()) {
    if (v->kind() == ValueKind::kConstant) defined.insert(v);
    if (v->kind() == ValueKind::kOuterScope) {
      if (!defined_in_enclosing(g, v->name()))
        return core::invalid_model(str_cat("graph '", g.name(), "': value '", v->name(),
                                           "' is used but never defined (not an input, initializer or node output)"));
      defined.insert(v);
    }
  }
  const OpRegistry& reg = OpRegistry::global();
  for (const Node* n : g.nodes()) {
    if (!reg.find(n->domain(), n->op_type())) return core::unsupported(str_cat(n->describe(), ": unknown op"));
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const Value* v = n->input(i);
      if (!v) continue;
      if (v->graph() != &g)
        return core::invalid_model(str_cat(n->describe(), ": input ", i, " '", v->name(), "' belongs to another graph"));
      if (!defined.count(v)) {
        if (v->producer())
          return core::invalid_model(str_cat(n->describe(), ": input '", v->name(), "' is used before ",
                                             v->producer()->describe(), " defines it (graph is not in topological order or has a cycle)"));
        return core::invalid_model(str_cat(n->describe(), ": input '", v->name(), "' is not defined"));
      }
      const auto& uses = v->uses();
      if (std::find(uses.begin(), uses.end(), Use{const_cast<Node*>(n), static_cast<int>(i)}) == uses.end())
        return core::internal_error(str_cat(n->describe(), ": use list of '", v->name(), "' is stale"));
    }
    for (const Value* v : n->implicit_inputs())
      if (!defined.count(v))
        return core::invalid_model(str_cat(n->describe(), ": outer value '", v->name(), "' is not defined"));
    for (size_t i = 0; i < n->num_outputs(); ++i) {
      const Value* v = n->output(i);
      if (v->producer() != n)
        return core::internal_error(str_cat(n->describe(), ": output '", v->name(), "' has another producer"));
      if (!defined.insert(v).second)
        return core::invalid_model(str_cat(n->describe(), ": output '", v->name(), "' is defined twice"));
    }
    for (const Graph* sub : n->subgraphs()) {
      Status st = verify(*sub);
      if (!st.is_ok()) return st.with_context(str_cat(n->describe(), ", subgraph '", sub->name(), "'"));
    }
  }
  for (const Value* v : g.outputs())
    if (!defined.count(v))
      return core::invalid_model(str_cat("graph '", g.name(), "': output '", v->name(), "' is never computed"));
  return Status::ok();
}

}  // namespace

Status verify_graph(const Graph& g) { return verify(g); }

}  // namespace kestrel::ir
