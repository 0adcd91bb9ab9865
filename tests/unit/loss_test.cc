// Tests of the loss ops: reference kernels against a naive computation written here (every
// reduction, with and without weights and ignore_index, N-d shapes, f32/f64/f16), hand-computed
// values, bad targets, and the ONNX path through Session (log_prob output, shape errors).
#include "kernels/reference/loss.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "common/onnx_builder.h"
#include "core/tensor.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

using core::Dims;
using core::DType;
using core::Tensor;
using kernels::ref::LossParams;
using kernels::ref::LossReduction;
using testing::OnnxBuilder;

Tensor random_f32(const Dims& dims, uint32_t seed) {
  Tensor t = Tensor::allocate(DType::kF32, dims).value();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-4.f, 4.f);
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

// Naive loss: x indexed by explicit (n, c, rest) with strides recomputed here; `logsm` applies
// log_softmax over C first. Returns per-sample losses and the reduced value.
struct NaiveLoss {
  std::vector<double> per_sample;
  double sum = 0, wsum = 0;
};

NaiveLoss naive_loss(const Tensor& x, const std::vector<int64_t>& target, const std::vector<double>* weight,
                     std::optional<int64_t> ignore, bool logsm) {
  const int64_t n_dim = x.dim(0), c_dim = x.dim(1);
  int64_t rest = 1;
  for (int64_t i = 2; i < x.rank(); ++i) rest *= x.dim(i);
  NaiveLoss r;
  for (int64_t n = 0; n < n_dim; ++n) {
    for (int64_t k = 0; k < rest; ++k) {
      std::vector<double> v(static_cast<size_t>(c_dim));
      for (int64_t c = 0; c < c_dim; ++c)
        v[static_cast<size_t>(c)] = x.element_as_double(n * c_dim * rest + c * rest + k);
      if (logsm) {
        double s = 0;
        for (double e : v) s += std::exp(e);
        for (double& e : v) e -= std::log(s);
      }
      int64_t t = target[static_cast<size_t>(n * rest + k)];
      if (ignore && t == *ignore) {
        r.per_sample.push_back(0);
        continue;
      }
      double w = weight ? (*weight)[static_cast<size_t>(t)] : 1.0;
      r.per_sample.push_back(-v[static_cast<size_t>(t)] * w);
      r.sum += -v[static_cast<size_t>(t)] * w;
      r.wsum += w;
    }
  }
  return r;
}

TEST(LossKernel, MatchesNaiveOverShapesWeightsIgnoreAndReductions) {
  const std::vector<Dims> shapes = {{1, 1}, {3, 5}, {2, 3, 7}, {2, 4, 3, 2}, {1, 3, 2, 1, 3}};
  uint32_t seed = 1;
  for (const Dims& xs : shapes) {
    Tensor x = random_f32(xs, seed++);
    const int64_t c = xs[1];
    Dims ts{xs[0]};
    for (size_t i = 2; i < xs.size(); ++i) ts.push_back(xs[i]);
    std::mt19937 rng(seed++);
    std::vector<int64_t> tv(static_cast<size_t>(core::num_elements(ts)));
    for (auto& t : tv) t = static_cast<int64_t>(rng() % static_cast<uint32_t>(c));
    Tensor target = Tensor::from_vector<int64_t>(tv, ts);
    std::vector<double> wv;
    std::vector<float> wf;
    for (int64_t i = 0; i < c; ++i) {
      wf.push_back(0.5f + static_cast<float>(i) * 0.25f);
      wv.push_back(wf.back());
    }
    Tensor weight = Tensor::from_vector<float>(wf, {c});
    for (bool use_weight : {false, true}) {
      for (std::optional<int64_t> ignore : {std::optional<int64_t>{}, std::optional<int64_t>{0},
                                            std::optional<int64_t>{-1}, std::optional<int64_t>{c + 3}}) {
        for (bool sce : {false, true}) {
          NaiveLoss want = naive_loss(x, tv, use_weight ? &wv : nullptr, ignore, sce);
          for (LossReduction red : {LossReduction::kNone, LossReduction::kSum, LossReduction::kMean}) {
            LossParams p{red, ignore};
            Tensor loss = Tensor::allocate(DType::kF32, red == LossReduction::kNone ? ts : Dims{}).value();
            Tensor log_prob = Tensor::allocate(DType::kF32, xs).value();
            auto st = sce ? kernels::ref::softmax_cross_entropy_loss(p, x, target, use_weight ? &weight : nullptr, loss,
                                                                     &log_prob)
                          : kernels::ref::nll_loss(p, x, target, use_weight ? &weight : nullptr, loss);
            ASSERT_TRUE(st.is_ok()) << st.to_string();
            std::string what = core::str_cat(core::dims_to_string(xs), " w=", use_weight,
                                             " ii=", ignore ? std::to_string(*ignore) : "none", " sce=", sce);
            if (red == LossReduction::kNone) {
              for (size_t i = 0; i < want.per_sample.size(); ++i)
                EXPECT_NEAR(loss.data<float>()[i], want.per_sample[i], 1e-5) << what << " i=" << i;
            } else if (red == LossReduction::kSum) {
              EXPECT_NEAR(loss.data<float>()[0], want.sum, 1e-4) << what;
            } else if (want.wsum == 0) {
              EXPECT_TRUE(std::isnan(loss.data<float>()[0])) << what;
            } else {
              EXPECT_NEAR(loss.data<float>()[0], want.sum / want.wsum, 1e-5) << what;
            }
          }
        }
      }
    }
  }
}

TEST(LossKernel, HandComputedSoftmaxCrossEntropy) {
  // Two classes with equal scores: log_softmax = log(1/2) everywhere.
  Tensor x = Tensor::from_vector<float>({1, 1, 3, 3}, {2, 2});
  Tensor t = Tensor::from_vector<int32_t>({0, 1}, {2});
  Tensor loss = Tensor::allocate(DType::kF32, {}).value();
  Tensor lp = Tensor::allocate(DType::kF32, {2, 2}).value();
  ASSERT_TRUE(kernels::ref::softmax_cross_entropy_loss({LossReduction::kMean, {}}, x, t, nullptr, loss, &lp).is_ok());
  EXPECT_NEAR(loss.data<float>()[0], std::log(2.0), 1e-6);
  for (float v : lp.span<float>()) EXPECT_NEAR(v, -std::log(2.0), 1e-6);
  // Large scores do not overflow.
  Tensor big = Tensor::from_vector<float>({1000, 0}, {1, 2});
  Tensor t0 = Tensor::from_vector<int64_t>({1}, {1});
  ASSERT_TRUE(
      kernels::ref::softmax_cross_entropy_loss({LossReduction::kSum, {}}, big, t0, nullptr, loss, nullptr).is_ok());
  EXPECT_NEAR(loss.data<float>()[0], 1000.f, 1e-3);
}

TEST(LossKernel, WeightedMeanDividesBySumOfWeights) {
  // NLL on given log-probs: samples (t=0, t=2, t=2), weights [1, 5, 3].
  Tensor x = Tensor::from_vector<double>({-1, -2, -3, -4, -5, -6, -7, -8, -9}, {3, 3});
  Tensor t = Tensor::from_vector<int64_t>({0, 2, 2}, {3});
  Tensor w = Tensor::from_vector<double>({1, 5, 3}, {3});
  Tensor loss = Tensor::allocate(DType::kF64, {}).value();
  ASSERT_TRUE(kernels::ref::nll_loss({LossReduction::kMean, {}}, x, t, &w, loss).is_ok());
  EXPECT_DOUBLE_EQ(loss.data<double>()[0], (1 * 1 + 6 * 3 + 9 * 3) / 7.0);
  ASSERT_TRUE(kernels::ref::nll_loss({LossReduction::kMean, int64_t{2}}, x, t, &w, loss).is_ok());
  EXPECT_DOUBLE_EQ(loss.data<double>()[0], 1.0);
}

TEST(LossKernel, Float16) {
  Tensor x = Tensor::allocate(DType::kF16, {2, 3}).value();
  const float vals[] = {-0.5f, -1.5f, -2.5f, -3.f, -0.25f, -1.f};
  for (int i = 0; i < 6; ++i) x.data<core::Float16>()[i] = core::Float16(vals[i]);
  Tensor t = Tensor::from_vector<int64_t>({1, 0}, {2});
  Tensor loss = Tensor::allocate(DType::kF16, {2}).value();
  ASSERT_TRUE(kernels::ref::nll_loss({LossReduction::kNone, {}}, x, t, nullptr, loss).is_ok());
  EXPECT_EQ(static_cast<float>(loss.data<core::Float16>()[0]), 1.5f);
  EXPECT_EQ(static_cast<float>(loss.data<core::Float16>()[1]), 3.f);
}

TEST(LossKernel, BadTargetsAndShapesAreErrors) {
  Tensor x = random_f32({2, 3}, 7);
  Tensor loss = Tensor::allocate(DType::kF32, {}).value();
  for (int64_t bad : {3, -1, 100}) {
    Tensor t = Tensor::from_vector<int64_t>({0, bad}, {2});
    auto st = kernels::ref::nll_loss({LossReduction::kSum, {}}, x, t, nullptr, loss);
    EXPECT_EQ(st.code(), core::StatusCode::kOutOfRange) << bad;
    // ... unless it is the ignore_index.
    EXPECT_TRUE(kernels::ref::nll_loss({LossReduction::kSum, bad}, x, t, nullptr, loss).is_ok());
  }
  Tensor wrong = Tensor::from_vector<int64_t>({0, 1, 2}, {3});
  EXPECT_FALSE(kernels::ref::nll_loss({LossReduction::kSum, {}}, x, wrong, nullptr, loss).is_ok());
  Tensor tf = Tensor::from_vector<float>({0, 1}, {2});
  EXPECT_FALSE(kernels::ref::nll_loss({LossReduction::kSum, {}}, x, tf, nullptr, loss).is_ok());
  Tensor w2 = Tensor::from_vector<float>({1, 1}, {2});
  Tensor t = Tensor::from_vector<int64_t>({0, 1}, {2});
  EXPECT_FALSE(kernels::ref::nll_loss({LossReduction::kSum, {}}, x, t, &w2, loss).is_ok());
}

// --- Through Session

TEST(LossSession, SoftmaxCrossEntropyWithLogProbAndWeights) {
  OnnxBuilder b(13);
  b.input("x", 1, {2, 3, 2}).input("t", 7, {2, 2}).initializer_f32("w", {3}, {1, 2, 0.5f});
  auto& n = b.node("SoftmaxCrossEntropyLoss", {"x", "t", "w"}, {"loss", "lp"});
  OnnxBuilder::attr(n, "reduction", std::string("none"));
  OnnxBuilder::attr(n, "ignore_index", int64_t{-7});
  b.output("loss").output("lp");
  std::string bytes = b.bytes();
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  Tensor x = random_f32({2, 3, 2}, 3);
  std::vector<int64_t> tv = {2, -7, 0, 1};
  std::vector<double> wv = {1, 2, 0.5};
  std::vector<Tensor> out;
  ASSERT_TRUE((*s)->run({{"x", x}, {"t", Tensor::from_vector<int64_t>(tv, {2, 2})}}, out).is_ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].dims(), (Dims{2, 2}));
  EXPECT_EQ(out[1].dims(), (Dims{2, 3, 2}));
  NaiveLoss want = naive_loss(x, tv, &wv, int64_t{-7}, true);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(out[0].data<float>()[i], want.per_sample[i], 1e-5);
  EXPECT_EQ(out[0].data<float>()[1], 0.f);
  // log_prob sums to 1 in probability space over C.
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t d = 0; d < 2; ++d) {
      double s = 0;
      for (int64_t c = 0; c < 3; ++c) s += std::exp(out[1].data<float>()[n * 6 + c * 2 + d]);
      EXPECT_NEAR(s, 1.0, 1e-5);
    }
}

TEST(LossSession, BadModelsFailAtLoadNamingTheNode) {
  struct Case {
    Dims x, t;
    std::string reduction;
    const char* expect;
  };
  const Case cases[] = {
      {{2, 3}, {3}, "mean", "does not match"},
      {{2, 3, 4}, {2, 5}, "sum", "does not match"},
      {{2, 3}, {2}, "avg", "reduction"},
      {{3}, {3}, "mean", "rank"},
  };
  for (const Case& c : cases) {
    OnnxBuilder b(13);
    b.input("x", 1, c.x).input("t", 7, c.t);
    auto& n = b.node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"}, "nll");
    OnnxBuilder::attr(n, "reduction", c.reduction);
    b.output("loss");
    std::string bytes = b.bytes();
    auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
    ASSERT_FALSE(s.is_ok()) << c.expect;
    EXPECT_NE(s.status().message().find("nll"), std::string::npos) << s.status().message();
    EXPECT_NE(s.status().message().find(c.expect), std::string::npos) << s.status().message();
  }
}

TEST(LossSession, OutOfRangeTargetFailsTheRun) {
  OnnxBuilder b(13);
  b.input("x", 1, {2, 3}).input("t", 7, {2});
  b.node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"}, "nll");
  b.output("loss");
  std::string bytes = b.bytes();
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(s.is_ok());
  std::vector<Tensor> out;
  auto st = (*s)->run({{"x", random_f32({2, 3}, 1)}, {"t", Tensor::from_vector<int64_t>({0, 3}, {2})}}, out);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("outside [0, 3)"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace kestrel
