// Graph -> Graphviz DOT.
#include "ir/dot.h"

#include <map>
#include <sstream>

#include "core/str_util.h"

namespace kestrel::ir {

std::string dot_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out + "\"";
}

namespace {

// Attributes shown in a node's box: short ones only (long lists and tensors would swamp it).
std::string attribute_lines(const Node& n) {
  std::string s;
  for (const auto& [k, a] : n.attributes()) {
    if (a.kind() == AttrKind::kGraph || a.kind() == AttrKind::kGraphs || a.kind() == AttrKind::kTensor ||
        a.kind() == AttrKind::kTensors)
      continue;
    std::string v = a.to_string();
    if (v.size() > 40) v = v.substr(0, 37) + "...";
    s += core::str_cat("\n", k, "=", v);
  }
  return s;
}

const char* fill_color(const Node& n) {
  if (!n.domain().empty()) return "#fdd49e";  // fused / Kestrel ops stand out
  const std::string& op = n.op_type();
  if (op == "Conv" || op == "ConvTranspose" || op == "Gemm" || op == "MatMul") return "#c6dbef";
  if (op == "Reshape" || op == "Transpose" || op == "Squeeze" || op == "Unsqueeze" || op == "Flatten" ||
      op == "Concat" || op == "Slice" || op == "Split" || op == "Gather")
    return "#e5e5e5";
  return "#ffffff";
}

}  // namespace

std::string graph_to_dot(const Graph& g) {
  std::ostringstream os;
  os << "digraph " << dot_quote(g.name()) << " {\n"
     << "  rankdir=TB;\n"
     << "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n"
     << "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\"];\n";
  std::map<const Value*, std::string> source;  // value -> DOT node id that produces it
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Value* v = g.inputs()[i];
    const std::string id = core::str_cat("in", i);
    source[v] = id;
    os << "  " << id
       << " [shape=ellipse, fillcolor=\"#c7e9c0\", label=" << dot_quote(v->name() + "\n" + v->type().to_string())
       << "];\n";
  }
  const std::vector<Node*> nodes = g.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = *nodes[i];
    const std::string id = core::str_cat("n", i);
    int weights = 0;
    for (const Value* in : n.inputs())
      if (in && in->is_constant()) ++weights;
    std::string label = (n.domain().empty() ? "" : n.domain() + ".") + n.op_type();
    if (!n.name().empty()) label += "\n" + n.name();
    label += attribute_lines(n);
    if (weights) label += core::str_cat("\n(", weights, weights == 1 ? " constant)" : " constants)");
    os << "  " << id << " [fillcolor=\"" << fill_color(n) << "\", label=" << dot_quote(label) << "];\n";
    for (const Value* in : n.inputs()) {
      auto it = in ? source.find(in) : source.end();
      if (it == source.end()) continue;  // constants, outer-scope values, omitted inputs
      os << "  " << it->second << " -> " << id << " [label=" << dot_quote(in->type().to_string()) << "];\n";
    }
    for (const Value* out : n.outputs()) source[out] = id;
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const Value* v = g.outputs()[i];
    const std::string id = core::str_cat("out", i);
    os << "  " << id
       << " [shape=ellipse, fillcolor=\"#fcbba1\", label=" << dot_quote(v->name() + "\n" + v->type().to_string())
       << "];\n";
    auto it = source.find(v);
    if (it != source.end()) os << "  " << it->second << " -> " << id << ";\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace kestrel::ir
