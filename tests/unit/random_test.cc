// Tests of the random ops: shapes, dtypes and ranges, distribution moments on large samples (fixed
// seeds, so not flaky), seeded reproducibility across sessions and runs, unseeded sessions that
// differ, and that the optimizer neither folds nor merges random nodes.
#include "kernels/reference/random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/onnx_builder.h"
#include "core/tensor.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

using core::Dims;
using core::DType;
using core::Tensor;
namespace ref = kernels::ref;
using testing::OnnxBuilder;

std::vector<double> values(const Tensor& t) {
  return core::tensor_to_doubles(t);
}

TEST(RandomKernel, UniformRangeAndMomentsForEveryFloatType) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    ref::RandomGenerator g(42);
    Tensor y = Tensor::allocate(t, {20000}).value();
    ASSERT_TRUE(ref::random_uniform(g, -2.0, 3.0, y).is_ok());
    double sum = 0;
    for (double v : values(y)) {
      ASSERT_GE(v, -2.0) << core::dtype_name(t);
      ASSERT_LT(v, 3.0) << core::dtype_name(t);
      sum += v;
    }
    // Mean 0.5, standard error 5 / sqrt(12 * 20000) ~ 0.01.
    EXPECT_NEAR(sum / 20000, 0.5, 0.06) << core::dtype_name(t);
  }
  // A range narrower than one f16 step still stays below `high`.
  ref::RandomGenerator g(1);
  Tensor h = Tensor::allocate(DType::kF16, {100}).value();
  ASSERT_TRUE(ref::random_uniform(g, 1.0, 1.0004, h).is_ok());
  for (double v : values(h)) EXPECT_EQ(v, 1.0);
  // high <= low gives low.
  ASSERT_TRUE(ref::random_uniform(g, 2.0, 1.0, h).is_ok());
  for (double v : values(h)) EXPECT_EQ(v, 2.0);
}

TEST(RandomKernel, NormalMoments) {
  ref::RandomGenerator g(7);
  Tensor y = Tensor::allocate(DType::kF64, {50000}).value();
  ASSERT_TRUE(ref::random_normal(g, 1.5, 2.0, y).is_ok());
  double sum = 0, sq = 0;
  for (double v : values(y)) {
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    sq += v * v;
  }
  const double mean = sum / 50000, var = sq / 50000 - mean * mean;
  EXPECT_NEAR(mean, 1.5, 0.05);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.05);
  Tensor i = Tensor::allocate(DType::kI32, {3}).value();
  EXPECT_FALSE(ref::random_normal(g, 0, 1, i).is_ok());
}

TEST(RandomKernel, BernoulliExtremesFrequencyAndErrors) {
  ref::RandomGenerator g(3);
  Tensor p = Tensor::allocate(DType::kF32, {30000}).value();
  for (int64_t i = 0; i < 30000; ++i) p.data<float>()[i] = i % 3 == 0 ? 0.f : (i % 3 == 1 ? 1.f : 0.3f);
  Tensor y = Tensor::allocate(DType::kBool, {30000}).value();
  ASSERT_TRUE(ref::bernoulli(g, p, y).is_ok());
  int64_t ones = 0;
  for (int64_t i = 0; i < 30000; ++i) {
    if (i % 3 == 2) {
      ones += y.data<bool>()[i];
    } else {
      ASSERT_EQ(y.data<bool>()[i], i % 3 == 1) << i;
    }
  }
  EXPECT_NEAR(static_cast<double>(ones) / 10000, 0.3, 0.03);
  Tensor yi = Tensor::allocate(DType::kI64, {30000}).value();
  ASSERT_TRUE(ref::bernoulli(g, p, yi).is_ok());
  for (double v : values(yi)) ASSERT_TRUE(v == 0 || v == 1);
  for (float bad : {-0.1f, 1.5f, std::numeric_limits<float>::quiet_NaN()}) {
    Tensor pb = Tensor::from_vector<float>({0.5f, bad}, {2});
    Tensor yb = Tensor::allocate(DType::kF32, {2}).value();
    EXPECT_FALSE(ref::bernoulli(g, pb, yb).is_ok()) << bad;
  }
}

TEST(RandomKernel, MultinomialFollowsSoftmaxAndSkipsImpossibleClasses) {
  ref::RandomGenerator g(5);
  const float ninf = -std::numeric_limits<float>::infinity();
  // Row 0: probabilities 1/6, 2/6, 3/6 (log-space); row 1: only class 2 possible.
  Tensor logits = Tensor::from_vector<float>({std::log(1.f), std::log(2.f), std::log(3.f), ninf, ninf, 4.f}, {2, 3});
  Tensor y = Tensor::allocate(DType::kI64, {2, 30000}).value();
  ASSERT_TRUE(ref::multinomial(g, logits, y).is_ok());
  int64_t count[3] = {0, 0, 0};
  for (int64_t s = 0; s < 30000; ++s) {
    int64_t c = y.data<int64_t>()[s];
    ASSERT_TRUE(c >= 0 && c < 3);
    ++count[c];
    ASSERT_EQ(y.data<int64_t>()[30000 + s], 2);
  }
  EXPECT_NEAR(count[0] / 30000.0, 1.0 / 6, 0.02);
  EXPECT_NEAR(count[1] / 30000.0, 2.0 / 6, 0.02);
  EXPECT_NEAR(count[2] / 30000.0, 3.0 / 6, 0.02);
  Tensor dead = Tensor::from_vector<float>({ninf, ninf}, {1, 2});
  Tensor y1 = Tensor::allocate(DType::kI32, {1, 4}).value();
  EXPECT_FALSE(ref::multinomial(g, dead, y1).is_ok());
}

TEST(RandomKernel, SeedsAreReproducible) {
  auto draw = [](ref::RandomGenerator g) {
    Tensor y = Tensor::allocate(DType::kF32, {16}).value();
    EXPECT_TRUE(ref::random_normal(g, 0, 1, y).is_ok());
    return values(y);
  };
  EXPECT_EQ(draw(ref::RandomGenerator::from_onnx_seed(3.f)), draw(ref::RandomGenerator::from_onnx_seed(3.f)));
  EXPECT_NE(draw(ref::RandomGenerator::from_onnx_seed(3.f)), draw(ref::RandomGenerator::from_onnx_seed(4.f)));
  EXPECT_NE(draw(ref::RandomGenerator::from_entropy()), draw(ref::RandomGenerator::from_entropy()));
}

// --- Through Session

std::unique_ptr<runtime::Session> open(const std::string& bytes) {
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? std::move(s).value() : nullptr;
}

// RandomUniform -> Add(constant): all inputs are known at load, but the node must not be folded.
std::string uniform_model(bool seeded) {
  OnnxBuilder b(13);
  b.initializer_f32("one", {}, {1.f});
  auto& n = b.node("RandomUniform", {}, {"r"});
  OnnxBuilder::attr(n, "shape", std::vector<int64_t>{2, 50});
  OnnxBuilder::attr(n, "low", 2.f);
  OnnxBuilder::attr(n, "high", 4.f);
  if (seeded) OnnxBuilder::attr(n, "seed", 11.f);
  b.node("Add", {"r", "one"}, {"y"});
  b.output("y");
  return b.bytes();
}

TEST(RandomSession, SeededStreamsRepeatAcrossSessionsAndAdvanceAcrossRuns) {
  auto a = open(uniform_model(true));
  auto b = open(uniform_model(true));
  ASSERT_TRUE(a && b);
  std::vector<Tensor> a1, a2, b1, b2;
  ASSERT_TRUE(a->run(std::vector<std::pair<std::string, Tensor>>{}, a1).is_ok());
  ASSERT_TRUE(a->run(std::vector<std::pair<std::string, Tensor>>{}, a2).is_ok());
  ASSERT_TRUE(b->run(std::vector<std::pair<std::string, Tensor>>{}, b1).is_ok());
  ASSERT_TRUE(b->run(std::vector<std::pair<std::string, Tensor>>{}, b2).is_ok());
  EXPECT_EQ(a1[0].dims(), (Dims{2, 50}));
  EXPECT_EQ(values(a1[0]), values(b1[0]));
  EXPECT_EQ(values(a2[0]), values(b2[0]));
  EXPECT_NE(values(a1[0]), values(a2[0]));  // not folded into a constant
  for (double v : values(a1[0])) {
    EXPECT_GE(v, 3.0);
    EXPECT_LT(v, 5.0);
  }
}

TEST(RandomSession, UnseededSessionsDiffer) {
  auto a = open(uniform_model(false));
  auto b = open(uniform_model(false));
  ASSERT_TRUE(a && b);
  std::vector<Tensor> ya, yb;
  ASSERT_TRUE(a->run(std::vector<std::pair<std::string, Tensor>>{}, ya).is_ok());
  ASSERT_TRUE(b->run(std::vector<std::pair<std::string, Tensor>>{}, yb).is_ok());
  EXPECT_NE(values(ya[0]), values(yb[0]));
}

TEST(RandomSession, IdenticalRandomNodesAreNotMerged) {
  OnnxBuilder b(13);
  b.input("x", 8, {3, 4});  // a string tensor: only its shape is used
  for (const char* out : {"r1", "r2"}) {
    auto& n = b.node("RandomNormalLike", {"x"}, {out});
    OnnxBuilder::attr(n, "dtype", int64_t{1});
  }
  b.output("r1").output("r2");
  auto s = open(b.bytes());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->graph().num_nodes(), 2u);
  Tensor x = Tensor::allocate(DType::kString, {3, 4}).value();
  std::vector<Tensor> out;
  ASSERT_TRUE(s->run({{"x", x}}, out).is_ok());
  EXPECT_EQ(out[0].dims(), (Dims{3, 4}));
  EXPECT_EQ(out[0].dtype(), DType::kF32);
  EXPECT_NE(values(out[0]), values(out[1]));
}

TEST(RandomSession, MultinomialAndBernoulliShapesAndBadAttributes) {
  OnnxBuilder b(15);
  b.input("logits", 1, {2, 5}).input("p", 1, {7});
  auto& m = b.node("Multinomial", {"logits"}, {"idx"});
  OnnxBuilder::attr(m, "sample_size", int64_t{9});
  OnnxBuilder::attr(m, "dtype", int64_t{7});
  auto& be = b.node("Bernoulli", {"p"}, {"bits"});
  OnnxBuilder::attr(be, "dtype", int64_t{9});  // bool
  b.output("idx", 7).output("bits", 9);
  auto s = open(b.bytes());
  ASSERT_TRUE(s);
  std::vector<Tensor> out;
  Tensor logits = Tensor::allocate(DType::kF32, {2, 5}).value();
  Tensor p = Tensor::from_vector<float>({0, 1, 0, 1, 0, 1, 1}, {7});
  ASSERT_TRUE(s->run({{"logits", logits}, {"p", p}}, out).is_ok());
  EXPECT_EQ(out[0].dims(), (Dims{2, 9}));
  EXPECT_EQ(out[0].dtype(), DType::kI64);
  for (double v : values(out[0])) EXPECT_TRUE(v >= 0 && v < 5);
  EXPECT_EQ(out[1].dtype(), DType::kBool);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(out[1].data<bool>()[i], p.data<float>()[i] == 1.f);

  OnnxBuilder bad(13);
  auto& n = bad.node("RandomNormal", {}, {"r"}, "rn");
  OnnxBuilder::attr(n, "shape", std::vector<int64_t>{2, -1});
  bad.output("r");
  std::string bytes = bad.bytes();
  auto sb = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_FALSE(sb.is_ok());
  EXPECT_NE(sb.status().message().find("rn"), std::string::npos) << sb.status().message();
}

}  // namespace
}  // namespace kestrel
