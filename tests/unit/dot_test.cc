// Tests of the Graphviz DOT writer used by `kestrel inspect --graph`.
#include "ir/dot.h"

#include <gtest/gtest.h>

#include "ir/graph.h"

namespace kestrel {
namespace {

TEST(GraphToDot, QuotesNamesAndDrawsEdgesInputsOutputs) {
  EXPECT_EQ(ir::dot_quote("a\"b\\c\nd\te"), "\"a\\\"b\\\\c\\nd e\"");
  ir::Graph g("g\"1");
  ir::Value* x = g.add_input("x\"in", {core::DType::kF32, ir::Shape(core::Dims{2, 3})});
  ir::Value* w = g.add_constant("w", core::Tensor::from_vector<float>({1, 2, 3}, {3}));
  ir::Node* add = g.add_node("Add", {x, w}, {"s"}, "add\\node");
  ir::Node* relu = g.add_node("FusedThing", {add->output(0)}, {"y"}, "relu", "kestrel");
  relu->set_attr("activation", std::string("Relu"));
  g.add_output(relu->output(0));
  const std::string dot = ir::graph_to_dot(g);
  EXPECT_EQ(dot.rfind("digraph \"g\\\"1\" {", 0), 0u) << dot;
  EXPECT_NE(dot.find("label=\"x\\\"in\\n"), std::string::npos) << dot;
  EXPECT_NE(dot.find("Add\\nadd\\\\node\\n(1 constant)"), std::string::npos) << dot;
  EXPECT_NE(dot.find("kestrel.FusedThing\\nrelu\\nactivation=\\\"Relu\\\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("in0 -> n0"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n0 -> n1"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n1 -> out0"), std::string::npos) << dot;
  EXPECT_EQ(dot.find("-> n0 [label=\"f32[3]\"]"), std::string::npos) << "constants are not drawn as edges";
  EXPECT_EQ(dot.back(), '\n');
}

}  // namespace
}  // namespace kestrel
