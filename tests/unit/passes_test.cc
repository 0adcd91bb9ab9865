// Unit tests of the cleanup passes on small graphs built in the test: before/after node lists
// and numerics preserved.
#include <gtest/gtest.h>

#include "ir/graph.h"
#include "ir/printer.h"
#include "passes/pass.h"
#include "runtime/kernel.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

using core::DType;
using core::Tensor;

const ir::NodeEvaluator& evaluator() {
  static const ir::NodeEvaluator ev = [](const ir::Node& n, std::span<const Tensor* const> ins) {
    return runtime::evaluate_node(n, ins);
  };
  return ev;
}

passes::PassContext context() {
  passes::PassContext c;
  c.evaluator = &evaluator();
  return c;
}

std::vector<std::string> op_list(const ir::Graph& g) {
  std::vector<std::string> ops;
  for (const ir::Node* n : g.nodes()) ops.push_back(n->op_type());
  return ops;
}

// Runs the graph (which must have one f32 input "x") on x and returns output 0.
Tensor run_graph(std::unique_ptr<ir::Graph> g, const Tensor& x) {
  runtime::LoadedModel m;
  m.graph = std::move(g);
  auto s = runtime::Session::from_model(std::move(m));
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  std::vector<Tensor> out;
  const Tensor* in[] = {&x};
  EXPECT_TRUE((*s)->run(in, out).is_ok());
  return out[0];
}

ir::ValueType f32(core::Dims d) { return {DType::kF32, ir::Shape(d)}; }

TEST(ConstantFolding, FoldsConstantChainsAndKeepsOutputs) {
  auto make = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->add_input("x", f32({3}));
    ir::Value* a = g->add_constant("a", Tensor::from_vector<float>({1, 2, 3}));
    ir::Value* b = g->add_constant("b", Tensor::from_vector<float>({4, 5, 6}));
    ir::Node* ab = g->add_node("Mul", {a, b}, {"ab"});
    ir::Node* e = g->add_node("Exp", {ab->output(0)}, {"e"});
    ir::Node* y = g->add_node("Add", {x, e->output(0)}, {"y"});
    g->add_output(y->output(0));
    return g;
  };
  auto g = make();
  ASSERT_TRUE(ir::infer_graph(*g).is_ok());
  std::vector<passes::PassReport> rep;
  ASSERT_TRUE(passes::optimize(*g, 1, context(), &rep).is_ok());
  EXPECT_EQ(op_list(*g), (std::vector<std::string>{"Add"}));
  EXPECT_EQ(g->outputs()[0]->name(), "y");
  Tensor x = Tensor::from_vector<float>({0.5f, -1, 0});
  Tensor want = run_graph(make(), x);
  Tensor got = run_graph(std::move(g), x);
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(got.data<float>()[i], want.data<float>()[i]);
}

TEST(ConstantFolding, KeepsDequantizedInt8WeightsCompressed) {
  auto make = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->add_input("x", f32({3}));
    ir::Value* wq = g->add_constant("wq", Tensor::from_vector<int8_t>({-4, 0, 7}));
    ir::Value* s = g->add_constant("s", Tensor::from_vector<float>({0.5f}));
    ir::Value* s0 = g->add_constant("s0", Tensor::from_vector<float>({2.0f}));
    ir::Value* s1 = g->add_constant("s1", Tensor::from_vector<float>({3.0f}));
    ir::Node* scale = g->add_node("Mul", {s0, s1}, {"scale"});  // still folded
    (void)scale;
    ir::Node* w = g->add_node("DequantizeLinear", {wq, s}, {"w"});
    ir::Node* y = g->add_node("Mul", {x, w->output(0)}, {"y"});
    g->add_output(y->output(0));
    return g;
  };
  auto g = make();
  ASSERT_TRUE(ir::infer_graph(*g).is_ok());
  ASSERT_TRUE(passes::optimize(*g, 1, context(), nullptr).is_ok());
  EXPECT_EQ(op_list(*g), (std::vector<std::string>{"DequantizeLinear", "Mul"}));
  Tensor x = Tensor::from_vector<float>({1, 2, 3});
  Tensor got = run_graph(std::move(g), x);
  const float want[] = {-2, 0, 10.5f};
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(got.data<float>()[i], want[i]);
}

TEST(DeadCodeElimination, RemovesUnreachableNodes) {
  ir::Graph g;
  ir::Value* x = g.add_input("x", f32({2}));
  ir::Node* dead = g.add_node("Neg", {x}, {"unused"});
  ir::Node* dead2 = g.add_node("Exp", {dead->output(0)}, {"unused2"});
  (void)dead2;
  ir::Node* y = g.add_node("Relu", {x}, {"y"});
  g.add_output(y->output(0));
  ASSERT_TRUE(ir::infer_graph(g).is_ok());
  auto pm = passes::PassManager();
  pm.add(passes::make_dead_code_elimination());
  ASSERT_TRUE(pm.run(g, context()).is_ok());
  EXPECT_EQ(op_list(g), (std::vector<std::string>{"Relu"}));
  EXPECT_EQ(g.find_value("unused"), nullptr);
}

TEST(CommonSubexpressionElimination, MergesTwinsAndEqualConstants) {
  ir::Graph g;
  ir::Value* x = g.add_input("x", f32({2}));
  ir::Value* c1 = g.add_constant("c1", Tensor::from_vector<float>({1, 2}));
  ir::Value* c2 = g.add_constant("c2", Tensor::from_vector<float>({1, 2}));
  ir::Node* a = g.add_node("Add", {x, c1}, {"a"});
  ir::Node* b = g.add_node("Add", {x, c2}, {"b"});
  ir::Node* l1 = g.add_node("LeakyRelu", {a->output(0)}, {"l1"});
  l1->set_attr("alpha", 0.1f);
  ir::Node* l2 = g.add_node("LeakyRelu", {b->output(0)}, {"l2"});
  l2->set_attr("alpha", 0.2f);  // different attribute: must stay
  ir::Node* y = g.add_node("Mul", {l1->output(0), l2->output(0)}, {"y"});
  g.add_output(y->output(0));
  ASSERT_TRUE(ir::infer_graph(g).is_ok());
  passes::PassManager pm;
  pm.add(passes::make_common_subexpression_elimination());
  ASSERT_TRUE(pm.run(g, context()).is_ok());
  EXPECT_EQ(op_list(g), (std::vector<std::string>{"Add", "LeakyRelu", "LeakyRelu", "Mul"}));
}

TEST(RemoveNoops, RemovesIdentityCastAndKeepsOutputName) {
  auto make = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->add_input("x", f32({2}));
    ir::Node* i = g->add_node("Identity", {x}, {"i"});
    ir::Node* c = g->add_node("Cast", {i->output(0)}, {"c"});
    c->set_attr("to", int64_t{1});  // float -> float
    ir::Node* r = g->add_node("Relu", {c->output(0)}, {"r"});
    ir::Node* o = g->add_node("Identity", {r->output(0)}, {"out"});
    g->add_output(o->output(0));
    return g;
  };
  auto g = make();
  ASSERT_TRUE(ir::infer_graph(*g).is_ok());
  ASSERT_TRUE(passes::optimize(*g, 1, context()).is_ok());
  EXPECT_EQ(op_list(*g), (std::vector<std::string>{"Relu"}));
  EXPECT_EQ(g->outputs()[0]->name(), "out");
  Tensor got = run_graph(std::move(g), Tensor::from_vector<float>({-1, 2}));
  EXPECT_FLOAT_EQ(got.data<float>()[0], 0);
  EXPECT_FLOAT_EQ(got.data<float>()[1], 2);
}

TEST(RemoveNoops, KeepsIdentityFromInputToOutput) {
  ir::Graph g;
  ir::Value* x = g.add_input("x", f32({2}));
  ir::Node* o = g.add_node("Identity", {x}, {"out"});
  g.add_output(o->output(0));
  ASSERT_TRUE(passes::optimize(g, 2, context()).is_ok());
  EXPECT_EQ(op_list(g), (std::vector<std::string>{"Identity"}));
  EXPECT_EQ(g.outputs()[0]->name(), "out");
}

}  // namespace
}  // namespace kestrel
