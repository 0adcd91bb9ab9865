// The fast kernels behind kestrel.FusedConv / FusedGemm / FusedMatMul / FusedPointwiseDepthwise (activation,
// bias and residual in the sgemm / depthwise epilogue) against the same node run with reference kernels,
// on every ISA of this CPU, with constant weights (the pre-packed path), and the fallback for the
// activation the fast epilogue lacks (GeluTanh).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "common/fast_kernel_util.h"
#include "ir/graph.h"
#include "ir/op_schema.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

using core::Isa;
using core::Tensor;
using Attrs = std::map<std::string, ir::Attribute>;

struct Run {
  Tensor y;
  std::string impl;
};

// inputs[i] is a constant when constant[i], else a graph input; undefined = omitted.
core::Result<Run> run_node(const std::string& op, const std::vector<Tensor>& inputs, const std::vector<bool>& constant,
                           const Attrs& attrs, const runtime::SessionOptions& opts) {
  auto g = std::make_unique<ir::Graph>("test");
  std::vector<ir::Value*> ins;
  std::vector<const Tensor*> feed;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    if (!inputs[i].defined()) {
      ins.push_back(nullptr);
    } else if (constant[i]) {
      ins.push_back(g->add_constant(name, inputs[i]));
    } else {
      ins.push_back(g->add_input(name, {inputs[i].dtype(), ir::Shape(inputs[i].dims())}));
      feed.push_back(&inputs[i]);
    }
  }
  ir::Node* n = g->add_node(op, ins, {"y"}, "node", ir::kKestrelDomain);
  for (const auto& [k, a] : attrs) n->set_attr(k, a);
  g->add_output(n->output(0));
  runtime::LoadedModel m;
  m.graph = std::move(g);
  KESTREL_ASSIGN_OR_RETURN(auto s, runtime::Session::from_model(std::move(m), opts));
  Run r;
  s->executor().set_profiler([&](const runtime::Executor::ProfileEvent& e) {
    if (e.node.op_type() == op) r.impl = e.impl;
  });
  std::vector<Tensor> outs;
  KESTREL_RETURN_IF_ERROR(s->run(feed, outs));
  r.y = std::move(outs[0]);
  return r;
}

class FastFusedTest : public ::testing::TestWithParam<Isa> {
 protected:
  // Runs fast (this ISA) and reference; expects the fast impl name to contain `impl` and close outputs.
  void compare(const std::string& op, const std::vector<Tensor>& inputs, const std::vector<bool>& constant,
               const Attrs& attrs, const std::string& impl) {
    runtime::SessionOptions fast, ref;
    fast.isa = core::isa_name(GetParam());
    ref.reference_only = true;
    auto a = run_node(op, inputs, constant, attrs, fast);
    auto b = run_node(op, inputs, constant, attrs, ref);
    ASSERT_TRUE(a.is_ok()) << a.status().to_string();
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    EXPECT_NE(a->impl.find(impl), std::string::npos) << "impl " << a->impl;
    EXPECT_EQ(b->impl, "reference");
    EXPECT_TRUE(testing::close_f32(a->y, b->y));
  }
};

const std::vector<std::pair<std::string, std::vector<float>>>& acts() {
  static const std::vector<std::pair<std::string, std::vector<float>>> a = {
      {"", {}},        {"Relu", {}},        {"Clip", {0.f, 6.f}}, {"LeakyRelu", {0.2f}},
      {"Sigmoid", {}}, {"HardSigmoid", {}}, {"HardSwish", {}},    {"Silu", {}},
      {"Gelu", {}},    {"Tanh", {}}};
  return a;
}

Attrs with_act(Attrs a, const std::pair<std::string, std::vector<float>>& act) {
  if (!act.first.empty()) a["activation"] = ir::Attribute(act.first);
  if (!act.second.empty()) a["activation_params"] = ir::Attribute(act.second);
  return a;
}

TEST_P(FastFusedTest, FusedConv) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  std::mt19937 rng(3);
  const std::string isa = core::isa_name(GetParam());
  struct Case {
    core::Dims x, w, y;
    Attrs attrs;
  };
  const Case cases[] = {
      {{1, 8, 7, 9}, {12, 8, 1, 1}, {1, 12, 7, 9}, {}},
      {{2, 6, 11, 11},
       {6, 1, 3, 3},
       {2, 6, 6, 6},
       {{"group", ir::Attribute(int64_t{6})},
        {"strides", ir::Attribute(std::vector<int64_t>{2, 2})},
        {"pads", ir::Attribute(std::vector<int64_t>{1, 1, 1, 1})}}},
      {{1, 4, 9, 9},
       {4, 1, 5, 5},
       {1, 4, 9, 9},
       {{"group", ir::Attribute(int64_t{4})}, {"pads", ir::Attribute(std::vector<int64_t>{2, 2, 2, 2})}}},
      {{1, 3, 10, 10}, {5, 3, 3, 3}, {1, 5, 10, 10}, {{"auto_pad", ir::Attribute(std::string("SAME_UPPER"))}}},
  };
  int i = 0;
  for (const Case& c : cases)
    for (const auto& act : acts()) {
      SCOPED_TRACE(i);
      Tensor x = testing::random_f32(c.x, rng), w = testing::random_f32(c.w, rng);
      Tensor b = testing::random_f32({c.w[0]}, rng), z = testing::random_f32(c.y, rng);
      const bool with_z = i % 2 == 0, with_b = i % 3 != 0;
      ++i;
      compare("FusedConv", {x, w, with_b ? b : Tensor(), with_z ? z : Tensor()}, {false, true, true, false},
              with_act(c.attrs, act), "conv." + isa);
    }
}

TEST_P(FastFusedTest, FusedGemmAndMatMul) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  std::mt19937 rng(5);
  const std::string impl = std::string("sgemm.") + core::isa_name(GetParam());
  int i = 0;
  for (const auto& act : acts()) {
    SCOPED_TRACE(i++);
    Tensor a = testing::random_f32({7, 19}, rng), bt = testing::random_f32({13, 19}, rng);
    Tensor c = testing::random_f32({13}, rng);
    compare("FusedGemm", {a, bt, c}, {false, true, true}, with_act({{"transB", ir::Attribute(int64_t{1})}}, act), impl);
    Tensor a3 = testing::random_f32({2, 5, 19}, rng), b2 = testing::random_f32({19, 17}, rng);
    Tensor bias = testing::random_f32({17}, rng), z = testing::random_f32({2, 5, 17}, rng);
    compare("FusedMatMul", {a3, b2, bias, z}, {false, true, true, false}, with_act({}, act), impl);
    compare("FusedMatMul", {a3, b2, Tensor(), Tensor()}, {false, false, false, false}, with_act({}, act), impl);
  }
}

TEST_P(FastFusedTest, GeluTanhFallsBackToReferenceEpilogue) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  std::mt19937 rng(9);
  Tensor a = testing::random_f32({2, 5, 19}, rng), b = testing::random_f32({19, 17}, rng);
  // The inner MatMul is still the fast one; only the epilogue is the reference pass.
  compare("FusedMatMul", {a, b}, {false, true}, {{"activation", ir::Attribute(std::string("GeluTanh"))}},
          std::string("sgemm.") + core::isa_name(GetParam()));
}

// The fast conv chain ([expand 1x1 ->] depthwise or grouped k x k -> [project 1x1] over strips of rows, at least
// one of the 1x1 convs) against the reference convs; GeluTanh anywhere in the chain takes the reference. Grouped
// middle convs have groups of 16 or 32 channels: whole vectors on every ISA. Without the expansion the middle
// conv reads X's rows in place.
TEST_P(FastFusedTest, FusedPointwiseDepthwise) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  std::mt19937 rng(11);
  const std::string isa = core::isa_name(GetParam());
  struct Case {
    int64_t n, c, h, w, m, p, k, stride;  // c = 0: no expansion (X has m channels); p = 0: no projection
    std::vector<int64_t> pads;
    int64_t group = 0;  // the middle conv's; 0: m (depthwise, no attribute)
  };
  const Case cases[] = {{2, 5, 37, 37, 19, 7, 3, 1, {1, 0, 1, 2}},
                        {1, 7, 30, 33, 24, 0, 5, 2, {2, 2, 1, 2}},
                        {1, 16, 19, 21, 40, 16, 3, 2, {1, 1, 1, 1}},
                        {2, 3, 14, 9, 8, 5, 5, 1, {2, 1, 2, 0}},
                        {2, 5, 20, 23, 48, 24, 3, 1, {1, 1, 1, 1}, 3},
                        {1, 8, 21, 19, 64, 0, 3, 2, {1, 0, 1, 1}, 4},
                        {1, 6, 17, 15, 64, 12, 7, 1, {3, 2, 3, 3}, 2},
                        {1, 4, 18, 18, 32, 8, 5, 2, {2, 2, 2, 2}, 2},
                        // No expansion: MobileNetV2's first block (32 -> 16), odd sizes, 5x5 stride 2, grouped.
                        {1, 0, 56, 56, 32, 16, 3, 1, {1, 1, 1, 1}},
                        {2, 0, 37, 37, 19, 7, 3, 1, {1, 0, 1, 2}},
                        {1, 0, 30, 33, 24, 24, 5, 2, {2, 2, 1, 2}},
                        {2, 0, 14, 9, 8, 5, 5, 1, {2, 1, 2, 0}},
                        {2, 0, 20, 23, 48, 24, 3, 1, {1, 1, 1, 1}, 3},
                        {1, 0, 21, 19, 64, 12, 3, 2, {1, 0, 1, 1}, 4}};
  const auto& a = acts();
  int i = 0;
  for (const Case& c : cases) {
    const int64_t oh = (c.h + c.pads[0] + c.pads[2] - c.k) / c.stride + 1;
    const int64_t ow = (c.w + c.pads[1] + c.pads[3] - c.k) / c.stride + 1;
    const bool expand = c.c > 0, project = c.p > 0;
    for (size_t j = 0; j <= a.size(); ++j, ++i) {
      SCOPED_TRACE(i);
      Tensor x = testing::random_f32({c.n, expand ? c.c : c.m, c.h, c.w}, rng);
      Tensor w1 = expand ? testing::random_f32({c.m, c.c, 1, 1}, rng) : Tensor();
      Tensor b1 = expand ? testing::random_f32({c.m}, rng) : Tensor();
      Tensor w2 = testing::random_f32({c.m, c.group ? c.m / c.group : 1, c.k, c.k}, rng);
      Tensor b2 = testing::random_f32({c.m}, rng);
      const bool with_b = i % 3 != 0, with_z = project && i % 2 == 0;
      Attrs attrs{{"kernel_shape", ir::Attribute(std::vector<int64_t>{c.k, c.k})},
                  {"strides", ir::Attribute(std::vector<int64_t>{c.stride, c.stride})},
                  {"pads", ir::Attribute(c.pads)}};
      if (c.group) attrs["group"] = ir::Attribute(c.group);
      // The last round puts GeluTanh (no fast epilogue) on the depthwise conv.
      const bool gelu_tanh = j == a.size();
      auto put = [&](const std::string& name, const std::pair<std::string, std::vector<float>>& act) {
        if (!act.first.empty()) attrs[name] = ir::Attribute(act.first);
        if (!act.second.empty()) attrs[name + "_params"] = ir::Attribute(act.second);
      };
      if (expand) put("activation1", a[j % a.size()]);
      put("activation2",
          gelu_tanh ? std::make_pair(std::string("GeluTanh"), std::vector<float>{}) : a[(j + 4) % a.size()]);
      std::vector<Tensor> ins = {x, w1, expand && with_b ? b1 : Tensor(), w2, with_b ? b2 : Tensor()};
      if (project) {
        put("activation3", a[(j + 7) % a.size()]);
        ins.push_back(testing::random_f32({c.p, c.m, 1, 1}, rng));
        ins.push_back(with_b ? testing::random_f32({c.p}, rng) : Tensor());
        ins.push_back(with_z ? testing::random_f32({c.n, c.p, oh, ow}, rng) : Tensor());
      }
      std::vector<bool> constant(ins.size(), true);
      constant[0] = false;
      if (ins.size() > 7) constant[7] = false;
      compare("FusedPointwiseDepthwise", ins, constant, attrs, gelu_tanh ? "reference" : "conv_chain." + isa);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, FastFusedTest, ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512),
                         testing::isa_param_name);

}  // namespace
}  // namespace kestrel
