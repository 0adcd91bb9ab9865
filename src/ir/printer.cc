// Graph printer.
#include "ir/printer.h"

#include <sstream>

namespace kestrel::ir {

namespace {
std::string value_ref(const Value* v) {
  if (!v) return "_";
  return "%" + v->name();
}
}  // namespace

void print_graph(const Graph& g, std::ostream& os, int indent) {
  std::string pad(static_cast<size_t>(indent), ' ');
  os << pad << "graph " << g.name() << "(";
  for (size_t i = 0; i < g.inputs().size(); ++i)
    os << (i ? ", " : "") << value_ref(g.inputs()[i]) << ":" << g.inputs()[i]->type().to_string();
  os << ") {\n";
  for (const Value* c : g.constants())
    os << pad << "  " << value_ref(c) << ":" << c->type().to_string() << " = constant\n";
  for (const Node* n : g.nodes()) {
    os << pad << "  ";
    for (size_t i = 0; i < n->num_outputs(); ++i)
      os << (i ? ", " : "") << value_ref(n->output(i)) << ":" << n->output(i)->type().to_string();
    os << " = " << (n->domain().empty() ? "" : n->domain() + ".") << n->op_type() << "(";
    for (size_t i = 0; i < n->num_inputs(); ++i) os << (i ? ", " : "") << value_ref(n->input(i));
    os << ")";
    if (!n->attributes().empty()) {
      os << " {";
      bool first = true;
      for (const auto& [k, a] : n->attributes()) {
        os << (first ? "" : ", ") << k << "=" << a.to_string();
        first = false;
      }
      os << "}";
    }
    os << "  # " << n->name() << "\n";
    for (const Graph* sub : n->subgraphs()) print_graph(*sub, os, indent + 4);
  }
  os << pad << "  return ";
  for (size_t i = 0; i < g.outputs().size(); ++i) os << (i ? ", " : "") << value_ref(g.outputs()[i]);
  os << "\n" << pad << "}\n";
}

std::string graph_to_string(const Graph& g) {
  std::ostringstream os;
  print_graph(g, os);
  return os.str();
}

}  // namespace kestrel::ir
