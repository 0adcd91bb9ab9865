// If, Loop and Scan: subgraphs, outer-scope values, loop-carried values, scan outputs.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/onnx_builder.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

using core::DType;
using core::Tensor;
using testing::OnnxBuilder;

std::vector<Tensor> run(const OnnxBuilder& b, const std::vector<std::pair<std::string, Tensor>>& inputs) {
  std::string bytes = b.bytes();
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  std::vector<Tensor> out;
  if (!s.is_ok()) return out;
  auto st = (*s)->run(inputs, out);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return out;
}

// y = cond ? x + outer : x * outer, where `outer` is a main-graph value used inside both branches.
TEST(ControlFlow, IfUsesOuterScopeValues) {
  OnnxBuilder then_b, else_b;
  then_b.node("Add", {"x", "outer"}, {"t"});
  then_b.output("t");
  else_b.node("Mul", {"x", "outer"}, {"e"});
  else_b.output("e");
  OnnxBuilder b;
  b.input("cond", 9, {}).input("x", 1, {3});
  b.initializer_f32("c", {3}, {1, 2, 3});
  b.node("Neg", {"c"}, {"outer"});
  auto& n = b.node("If", {"cond"}, {"y"});
  OnnxBuilder::attr(n, "then_branch", then_b.graph());
  OnnxBuilder::attr(n, "else_branch", else_b.graph());
  b.output("y");
  Tensor x = Tensor::from_vector<float>({10, 20, 30});
  for (bool c : {true, false}) {
    auto out = run(b, {{"cond", Tensor::scalar<bool>(c)}, {"x", x}});
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].num_elements(), 3);
    for (int i = 0; i < 3; ++i) {
      float o = -static_cast<float>(i + 1), xi = x.data<float>()[i];
      EXPECT_FLOAT_EQ(out[0].data<float>()[i], c ? xi + o : xi * o) << "cond " << c << " i " << i;
    }
  }
}

// A Concat input that an If branch also reads (an outer-scope use after the Concat) must keep its
// own memory: the executor places Concat inputs in the output only when the Concat is their last
// reader. Large enough (16 floats per channel) for slices on the arena alignment.
TEST(ControlFlow, ConcatInputReadLaterByABranchKeepsItsValue) {
  OnnxBuilder then_b, else_b;
  then_b.node("Neg", {"a"}, {"t"});
  then_b.output("t");
  else_b.node("Abs", {"a"}, {"e"});
  else_b.output("e");
  OnnxBuilder b;
  b.input("cond", 9, {}).input("x", 1, {1, 2, 16});
  b.node("Relu", {"x"}, {"a"});
  b.node("Exp", {"x"}, {"p"});
  OnnxBuilder::attr(b.node("Concat", {"a", "p"}, {"c"}), "axis", int64_t{1});
  b.node("Sigmoid", {"c"}, {"s"});
  b.node("Exp", {"s"}, {"big"});  // more values alive after the Concat, so the arena has reuse to do
  auto& n = b.node("If", {"cond"}, {"y"});
  OnnxBuilder::attr(n, "then_branch", then_b.graph());
  OnnxBuilder::attr(n, "else_branch", else_b.graph());
  b.output("y").output("big");
  Tensor x = Tensor::allocate(core::DType::kF32, {1, 2, 16}).value();
  for (int i = 0; i < 32; ++i) x.data<float>()[i] = static_cast<float>(i % 7) - 3.f;
  for (bool c : {true, false}) {
    auto out = run(b, {{"cond", Tensor::scalar<bool>(c)}, {"x", x}});
    ASSERT_EQ(out.size(), 2u);
    ASSERT_EQ(out[0].num_elements(), 32);
    for (int i = 0; i < 32; ++i) {
      const float a = std::max(x.data<float>()[i], 0.f);
      EXPECT_FLOAT_EQ(out[0].data<float>()[i], c ? -a : a) << "cond " << c << " i " << i;
    }
  }
}

// Sum 0..M-1 into a carried value, stop early when the sum exceeds a limit, and emit each
// iteration's running sum as a scan output.
TEST(ControlFlow, LoopCarriesValuesAndStacksScanOutputs) {
  OnnxBuilder body;
  body.input("i", 7, {}).input("cond_in", 9, {}).input("acc", 7, {});
  body.node("Add", {"acc", "i"}, {"acc_out"});
  body.node("Less", {"acc_out", "limit"}, {"cond_out"});  // `limit` is an outer-scope value
  body.node("Identity", {"acc_out"}, {"scan_out"});
  body.output("cond_out", 9).output("acc_out", 7).output("scan_out", 7);
  OnnxBuilder b;
  b.input("M", 7, {}).input("acc0", 7, {});
  b.initializer_i64("limit", {}, {10});
  b.node("Identity", {"M"}, {"trip"});
  auto& n = b.node("Loop", {"trip", "", "acc0"}, {"acc_final", "sums"});
  OnnxBuilder::attr(n, "body", body.graph());
  b.output("acc_final", 7).output("sums", 7);
  // 0+1+2+3+4 = 10 -> stops after i=4 (10 is not < 10).
  auto out = run(b, {{"M", Tensor::scalar<int64_t>(100)}, {"acc0", Tensor::scalar<int64_t>(0)}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].data<int64_t>()[0], 10);
  ASSERT_EQ(out[1].dims(), (core::Dims{5}));
  std::vector<int64_t> want = {0, 1, 3, 6, 10};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(out[1].data<int64_t>()[i], want[static_cast<size_t>(i)]);
  // Zero trip count: carried value unchanged, empty scan output.
  out = run(b, {{"M", Tensor::scalar<int64_t>(0)}, {"acc0", Tensor::scalar<int64_t>(7)}});
  EXPECT_EQ(out[0].data<int64_t>()[0], 7);
  EXPECT_EQ(out[1].num_elements(), 0);
}

// Cumulative sum over the rows of x (scan axis 0), and the same in reverse into a second output.
TEST(ControlFlow, ScanForwardAndReverse) {
  OnnxBuilder body;
  body.input("s", 1, {2}).input("row", 1, {2});
  body.node("Add", {"s", "row"}, {"s_out"});
  body.node("Identity", {"s_out"}, {"y"});
  body.output("s_out").output("y");
  OnnxBuilder b;
  b.input("s0", 1, {2}).input("x", 1, {3, 2});
  auto& n = b.node("Scan", {"s0", "x"}, {"s_final", "ys"});
  OnnxBuilder::attr(n, "body", body.graph());
  OnnxBuilder::attr(n, "num_scan_inputs", int64_t{1});
  OnnxBuilder::attr(n, "scan_input_directions", std::vector<int64_t>{1});
  b.output("s_final").output("ys");
  auto out = run(b, {{"s0", Tensor::from_vector<float>({0, 0})},
                     {"x", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2})}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], 9);
  EXPECT_FLOAT_EQ(out[0].data<float>()[1], 12);
  ASSERT_EQ(out[1].dims(), (core::Dims{3, 2}));
  std::vector<float> want = {5, 6, 8, 10, 9, 12};  // reverse input order: rows 2, 1, 0
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(out[1].data<float>()[i], want[static_cast<size_t>(i)]);
}

}  // namespace
}  // namespace kestrel
