// Tests of the normalization ops against hand-checked values and naive computations written here:
// BatchNormalization (inference, mixed parameter dtypes, training mode: batch statistics and running
// updates), Instance-, Layer- (axes, statistics outputs, broadcast scale), Group- (per channel /
// per group), LRN, Lp and MVN.
#include "kernels/reference/normalization.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "common/nn_test_util.h"

namespace kestrel {
namespace {

using core::Dims;
using core::DType;
using core::Tensor;
using testing::OnnxBuilder;

// Mean and biased variance of v[idx] for the given indices.
std::pair<double, double> stats(const std::vector<double>& v, const std::vector<size_t>& idx) {
  double m = 0, s = 0;
  for (size_t i : idx) m += v[i];
  m /= static_cast<double>(idx.size());
  for (size_t i : idx) s += (v[i] - m) * (v[i] - m);
  return {m, s / static_cast<double>(idx.size())};
}

TEST(BatchNormReference, HandCheckedAndMixedParamDtypes) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});  // N=2, C=2, D=2
  Tensor scale = Tensor::from_vector<float>({1, 2}), bias = Tensor::from_vector<float>({0, 1});
  Tensor mean = Tensor::from_vector<double>({1, 2}), var = Tensor::from_vector<double>({4, 0.25});
  Tensor y = *Tensor::allocate(DType::kF32, {2, 2, 2});
  ASSERT_TRUE(kernels::ref::batch_norm(x, scale, bias, mean, var, 0.f, y).is_ok());
  // c0: (x - 1) / 2; c1: (x - 2) / 0.5 * 2 + 1
  testing::expect_close(y, {0, 0.5, 5, 9, 2, 2.5, 21, 25});
  Tensor xh = testing::to_dtype(x, DType::kF16), yh = *Tensor::allocate(DType::kF16, {2, 2, 2});
  ASSERT_TRUE(kernels::ref::batch_norm(xh, scale, bias, mean, var, 0.f, yh).is_ok());
  testing::expect_close(yh, {0, 0.5, 5, 9, 2, 2.5, 21, 25}, 1e-2, 1e-3);
  Tensor bad = Tensor::from_vector<float>({1, 2, 3});
  EXPECT_FALSE(kernels::ref::batch_norm(x, bad, bias, mean, var, 0.f, y).is_ok());
}

OnnxBuilder bn_model(int64_t training, const Dims& xd, int64_t c, bool extra_outputs = false) {
  OnnxBuilder m(15);
  m.input("x", 1, xd);
  std::vector<float> ones(static_cast<size_t>(c), 1.f), zeros(static_cast<size_t>(c), 0.f);
  m.initializer_f32("s", {c}, ones).initializer_f32("b", {c}, zeros).initializer_f32("m", {c}, zeros);
  m.initializer_f32("v", {c}, ones);
  std::vector<std::string> outs = {"y"};
  if (extra_outputs) outs = {"y", "rm", "rv"};
  auto& n = m.node("BatchNormalization", {"x", "s", "b", "m", "v"}, outs, "bn");
  OnnxBuilder::attr(n, "training_mode", training);
  OnnxBuilder::attr(n, "epsilon", 0.0f);
  for (const auto& o : outs) m.output(o);
  return m;
}

TEST(BatchNormSession, TrainingModeAndChannelsChecked) {
  auto st = testing::open_error(bn_model(2, {1, 2, 3}, 2), "bn");
  EXPECT_TRUE(testing::contains(st, "training_mode")) << st.to_string();
  EXPECT_TRUE(testing::contains(testing::open_error(bn_model(0, {1, 3, 3}, 2), "bn"), "channel"));
  Tensor x = testing::random_tensor({2, 2, 3}, 5);
  auto out = testing::run_model(bn_model(0, x.dims(), 2, true), {x});
  ASSERT_EQ(out.size(), 3u);
  testing::expect_close(out[0], testing::values(x));  // mean 0, var 1, eps 0: identity
  testing::expect_close(out[1], {0, 0});              // running stats pass through in inference
  testing::expect_close(out[2], {1, 1});
  // Training mode through a session: channel 0 holds 1, 3 / 5, 7 ... see BatchNormTraining below.
  Tensor xt = Tensor::from_vector<float>({1, 3, 10, 10, 5, 7, 10, 10}, {2, 2, 2});
  auto t = testing::run_model(bn_model(1, xt.dims(), 2, true), {xt});
  ASSERT_EQ(t.size(), 3u);
  // c0: {1, 3, 5, 7}, mean 4, population var 5; c1: all 10, var 0 (eps 0 gives 0 / 0 = NaN).
  const double s5 = std::sqrt(5.0);
  testing::expect_close(t[0], {-3 / s5, -1 / s5, NAN, NAN, 1 / s5, 3 / s5, NAN, NAN});
  testing::expect_close(t[1], {0.1 * 4, 0.1 * 10});  // 0.9 * 0 + 0.1 * mean
  testing::expect_close(t[2], {0.9 + 0.1 * 5, 0.9});  // 0.9 * 1 + 0.1 * var
  // Training mode with only Y listed.
  auto y_only = testing::run_model(bn_model(1, xt.dims(), 2, false), {xt});
  ASSERT_EQ(y_only.size(), 1u);
  testing::expect_close(y_only[0], testing::values(t[0]));
}

// Naive training-mode batch norm: per channel over every (n, spatial) element, population variance.
struct NaiveBnTraining {
  std::vector<double> y, running_mean, running_var;
};
NaiveBnTraining naive_bn_training(const Tensor& x, const std::vector<double>& s, const std::vector<double>& b,
                                  const std::vector<double>& m0, const std::vector<double>& v0, double eps,
                                  double momentum) {
  auto xv = testing::values(x);
  const size_t n = static_cast<size_t>(x.dim(0)), c = static_cast<size_t>(x.dim(1));
  const size_t inner = n * c == 0 ? 0 : xv.size() / (n * c);
  NaiveBnTraining r;
  r.y.resize(xv.size());
  for (size_t ch = 0; ch < c; ++ch) {
    std::vector<size_t> idx;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < inner; ++j) idx.push_back((i * c + ch) * inner + j);
    auto [mean, var] = stats(xv, idx);
    for (size_t i : idx) r.y[i] = (xv[i] - mean) / std::sqrt(var + eps) * s[ch] + b[ch];
    r.running_mean.push_back(m0[ch] * momentum + mean * (1 - momentum));
    r.running_var.push_back(v0[ch] * momentum + var * (1 - momentum));
  }
  return r;
}

TEST(BatchNormTraining, HandComputed) {
  // N = 2, C = 1: x = {1, 3}, mean 2, population var 1 (the sample variance would be 2).
  Tensor x = Tensor::from_vector<float>({1, 3}, {2, 1});
  Tensor s = Tensor::from_vector<float>({2}, {1}), b = Tensor::from_vector<float>({1}, {1});
  Tensor m = Tensor::from_vector<float>({10}, {1}), v = Tensor::from_vector<float>({4}, {1});
  Tensor y = *Tensor::allocate(DType::kF32, {2, 1}), rm = *Tensor::allocate(DType::kF32, {1}),
         rv = *Tensor::allocate(DType::kF32, {1});
  ASSERT_TRUE(kernels::ref::batch_norm_training(x, s, b, m, v, 0.f, 0.75f, y, &rm, &rv).is_ok());
  testing::expect_close(y, {-1, 3});              // (x - 2) / 1 * 2 + 1
  testing::expect_close(rm, {10 * 0.75 + 2 * 0.25});  // 8
  testing::expect_close(rv, {4 * 0.75 + 1 * 0.25});   // 3.25
  // epsilon 3: y = (x - 2) / 2 * 2 + 1.
  ASSERT_TRUE(kernels::ref::batch_norm_training(x, s, b, m, v, 3.f, 0.75f, y, nullptr, nullptr).is_ok());
  testing::expect_close(y, {-1 + 1, 1 + 1});
}

TEST(BatchNormTraining, MatchesNaive) {
  uint32_t seed = 40;
  for (const Dims& d : {Dims{1, 1}, Dims{3, 2}, Dims{2, 3, 4, 5}, Dims{1, 5, 7}, Dims{2, 2, 1, 3, 2}})
    for (DType dt : {DType::kF32, DType::kF64, DType::kF16})
      for (float momentum : {0.9f, 0.f, 0.3f}) {
        const int64_t c = d[1];
        Tensor x = testing::random_tensor(d, seed++, -2.f, 3.f);
        if (dt == DType::kF16) x = testing::to_dtype(testing::to_dtype(x, DType::kF16), DType::kF32);
        Tensor s = testing::random_tensor({c}, seed++), b = testing::random_tensor({c}, seed++);
        Tensor m = testing::random_tensor({c}, seed++), v = testing::random_tensor({c}, seed++, 0.5f, 2.f);
        const float eps = 1e-2f;
        auto want = naive_bn_training(x, testing::values(s), testing::values(b), testing::values(m),
                                      testing::values(v), static_cast<double>(eps), static_cast<double>(momentum));
        // Statistics keep the parameters' dtype (f64 here), which may differ from x's.
        Tensor md = testing::to_dtype(m, DType::kF64), vd = testing::to_dtype(v, DType::kF64);
        Tensor y = *Tensor::allocate(dt, d), rm = *Tensor::allocate(DType::kF64, {c}),
               rv = *Tensor::allocate(DType::kF64, {c});
        ASSERT_TRUE(kernels::ref::batch_norm_training(testing::to_dtype(x, dt), s, b, md, vd, eps, momentum, y, &rm,
                                                      &rv)
                        .is_ok());
        const double tol = dt == DType::kF16 ? 1e-2 : 1e-5;
        const std::string what = core::dims_to_string(d) + " " + core::dtype_name(dt);
        testing::expect_close(y, want.y, tol, tol, what + " y");
        testing::expect_close(rm, want.running_mean, 1e-5, 1e-5, what + " running_mean");
        testing::expect_close(rv, want.running_var, 1e-5, 1e-5, what + " running_var");
      }
}

TEST(BatchNormTraining, EmptyBatchAndBadInput) {
  // N = 0: no statistics (0 / 0), so the running values become NaN; Y is empty.
  Tensor x = *Tensor::allocate(DType::kF32, {0, 2, 3});
  Tensor p = Tensor::from_vector<float>({1, 1});
  Tensor y = *Tensor::allocate(DType::kF32, {0, 2, 3}), rm = *Tensor::allocate(DType::kF32, {2}),
         rv = *Tensor::allocate(DType::kF32, {2});
  ASSERT_TRUE(kernels::ref::batch_norm_training(x, p, p, p, p, 1e-5f, 0.9f, y, &rm, &rv).is_ok());
  EXPECT_TRUE(std::isnan(rm.data<float>()[0]) && std::isnan(rv.data<float>()[1]));
  Tensor x2 = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor y2 = *Tensor::allocate(DType::kF32, {2, 2});
  Tensor bad = Tensor::from_vector<float>({1, 2, 3});
  EXPECT_FALSE(kernels::ref::batch_norm_training(x2, bad, p, p, p, 0.f, 0.9f, y2, nullptr, nullptr).is_ok());
  Tensor wrong_out = *Tensor::allocate(DType::kF64, {2});
  EXPECT_FALSE(kernels::ref::batch_norm_training(x2, p, p, p, p, 0.f, 0.9f, y2, &wrong_out, nullptr).is_ok());
  Tensor x1 = Tensor::from_vector<float>({1, 2});
  EXPECT_FALSE(kernels::ref::batch_norm_training(x1, p, p, p, p, 0.f, 0.9f, x1, nullptr, nullptr).is_ok());
}

TEST(InstanceNormReference, MatchesNaive) {
  Tensor x = testing::random_tensor({2, 3, 4, 5}, 11, -2.f, 3.f);
  Tensor scale = testing::random_tensor({3}, 12), bias = testing::random_tensor({3}, 13);
  auto xv = testing::values(x), sv = testing::values(scale), bv = testing::values(bias);
  std::vector<double> want(xv.size());
  for (size_t plane = 0; plane < 6; ++plane) {
    std::vector<size_t> idx;
    for (size_t j = 0; j < 20; ++j) idx.push_back(plane * 20 + j);
    auto [m, v] = stats(xv, idx);
    for (size_t i : idx) want[i] = sv[plane % 3] * (xv[i] - m) / std::sqrt(v + 1e-3) + bv[plane % 3];
  }
  for (DType dt : {DType::kF32, DType::kF64}) {
    Tensor y = *Tensor::allocate(dt, x.dims());
    ASSERT_TRUE(kernels::ref::instance_norm(testing::to_dtype(x, dt), testing::to_dtype(scale, dt),
                                            testing::to_dtype(bias, dt), 1e-3f, y)
                    .is_ok());
    testing::expect_close(y, want, 1e-5, 1e-4);
  }
}

TEST(LayerNormSession, AxesStatisticsAndBroadcastScale) {
  Tensor x = testing::random_tensor({2, 3, 4}, 21, -1.f, 2.f);
  auto xv = testing::values(x);
  for (int64_t axis : {-1, -2, 0, 1, 2, -3}) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    Dims norm(x.dims().begin() + a, x.dims().end());
    // Scale broadcasts from its trailing dim; bias is full-size.
    Dims sd = {norm.back()};
    Tensor scale = testing::random_tensor(sd, 22), bias = testing::random_tensor(norm, 23);
    OnnxBuilder m(17);
    m.input("x", 1, x.dims()).input("s", 1, sd).input("b", 1, norm);
    auto& n = m.node("LayerNormalization", {"x", "s", "b"}, {"y", "mean", "inv"}, "ln");
    OnnxBuilder::attr(n, "axis", axis);
    OnnxBuilder::attr(n, "epsilon", 1e-4f);
    m.output("y").output("mean").output("inv");
    auto out = testing::run_model(m, {x, scale, bias});
    ASSERT_EQ(out.size(), 3u);
    const size_t nsize = static_cast<size_t>(core::num_elements(norm)), outer = xv.size() / nsize;
    auto sv = testing::values(scale), bv = testing::values(bias);
    std::vector<double> want(xv.size()), want_mean(outer), want_inv(outer);
    for (size_t o = 0; o < outer; ++o) {
      std::vector<size_t> idx;
      for (size_t j = 0; j < nsize; ++j) idx.push_back(o * nsize + j);
      auto [mu, var] = stats(xv, idx);
      want_mean[o] = mu;
      want_inv[o] = 1 / std::sqrt(var + 1e-4);
      for (size_t j = 0; j < nsize; ++j)
        want[o * nsize + j] = (xv[o * nsize + j] - mu) * want_inv[o] * sv[j % sv.size()] + bv[j];
    }
    testing::expect_close(out[0], want, 1e-5, 1e-4, core::str_cat("axis ", axis));
    testing::expect_close(out[1], want_mean, 1e-5, 1e-4);
    testing::expect_close(out[2], want_inv, 1e-5, 1e-4);
    Dims stat_dims = x.dims();
    for (size_t i = static_cast<size_t>(a); i < 3; ++i) stat_dims[i] = 1;
    EXPECT_EQ(out[1].dims(), stat_dims);
    EXPECT_EQ(out[1].dtype(), DType::kF32);
  }
}

TEST(LayerNormReference, NoBiasAndErrors) {
  Tensor x = Tensor::from_vector<float>({1, 3, 2, 2}, {2, 2});
  Tensor scale = Tensor::from_vector<float>({1, 1}), y = *Tensor::allocate(DType::kF32, {2, 2});
  ASSERT_TRUE(kernels::ref::layer_norm(x, scale, nullptr, 1, 1e-6f, y, nullptr, nullptr).is_ok());
  testing::expect_close(y, {-1, 1, 0, 0});
  Tensor bad = Tensor::from_vector<float>({1, 1, 1});
  EXPECT_FALSE(kernels::ref::layer_norm(x, bad, nullptr, 1, 0.f, y, nullptr, nullptr).is_ok());
  OnnxBuilder m(17);
  m.input("x", 1, {2, 3}).input("s", 1, {4});
  m.node("LayerNormalization", {"x", "s"}, {"y"}, "ln");
  m.output("y");
  EXPECT_FALSE(testing::open_error(m, "ln").is_ok());
}

TEST(GroupNormReference, PerChannelAndPerGroupScale) {
  Tensor x = testing::random_tensor({2, 6, 3}, 31, -1.f, 1.f);
  auto xv = testing::values(x);
  const int64_t groups = 3;
  for (bool per_group : {false, true}) {
    const int64_t n = per_group ? groups : 6;
    Tensor scale = testing::random_tensor({n}, 32), bias = testing::random_tensor({n}, 33);
    auto sv = testing::values(scale), bv = testing::values(bias);
    std::vector<double> want(xv.size());
    for (size_t g = 0; g < 6; ++g) {  // N * groups, 2 channels x 3 each
      std::vector<size_t> idx;
      for (size_t j = 0; j < 6; ++j) idx.push_back(g * 6 + j);
      auto [m, v] = stats(xv, idx);
      for (size_t j = 0; j < 6; ++j) {
        size_t ch = (g % 3) * 2 + j / 3, k = per_group ? g % 3 : ch;
        want[g * 6 + j] = (xv[g * 6 + j] - m) / std::sqrt(v + 1e-5) * sv[k] + bv[k];
      }
    }
    Tensor y = *Tensor::allocate(DType::kF32, x.dims());
    ASSERT_TRUE(kernels::ref::group_norm(x, scale, bias, groups, 1e-5f, y).is_ok());
    testing::expect_close(y, want, 1e-5, 1e-4, per_group ? "per group" : "per channel");
  }
  Tensor y = *Tensor::allocate(DType::kF32, x.dims());
  EXPECT_FALSE(
      kernels::ref::group_norm(x, testing::random_tensor({6}, 1), testing::random_tensor({6}, 2), 4, 1e-5f, y).is_ok());
}

TEST(LrnReference, HandCheckedWindow) {
  // C = 4, size = 3: channel c sums c-1..c+1 (clamped).
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 4, 1, 1});
  Tensor y = *Tensor::allocate(DType::kF32, x.dims());
  ASSERT_TRUE(kernels::ref::lrn(x, 3, 0.3f, 0.5f, 2.f, y).is_ok());
  std::vector<double> sq = {1 + 4, 1 + 4 + 9, 4 + 9 + 16, 9 + 16}, want;
  for (size_t c = 0; c < 4; ++c) want.push_back((c + 1.0) / std::pow(2 + 0.1 * sq[c], 0.5));
  testing::expect_close(y, want);
  // Even size: the window is [c - 1, c + 2] for size 4.
  ASSERT_TRUE(kernels::ref::lrn(x, 4, 0.4f, 1.f, 1.f, y).is_ok());
  std::vector<double> sq4 = {1 + 4 + 9, 1 + 4 + 9 + 16, 4 + 9 + 16, 9 + 16};
  for (size_t c = 0; c < 4; ++c) EXPECT_NEAR(y.data<float>()[c], (c + 1.0) / (1 + 0.1 * sq4[c]), 1e-6);
}

TEST(LpNormSession, NegativeAxisP1P2AndZeroNorm) {
  Tensor x = Tensor::from_vector<float>({3, 4, 0, 0, -1, 1}, {3, 2});
  for (int64_t p : {1, 2})
    for (int64_t axis : {-1, 0}) {
      OnnxBuilder m;
      m.input("x", 1, {3, 2});
      auto& n = m.node("LpNormalization", {"x"}, {"y"});
      OnnxBuilder::attr(n, "axis", axis);
      OnnxBuilder::attr(n, "p", p);
      m.output("y");
      auto out = testing::run_model(m, {x});
      ASSERT_EQ(out.size(), 1u);
      std::vector<double> want;
      if (axis == -1 && p == 2) want = {0.6, 0.8, 0, 0, -std::sqrt(0.5), std::sqrt(0.5)};
      if (axis == -1 && p == 1) want = {3.0 / 7, 4.0 / 7, 0, 0, -0.5, 0.5};
      if (axis == 0 && p == 2)
        want = {3 / std::sqrt(10.0), 4 / std::sqrt(17.0), 0, 0, -1 / std::sqrt(10.0), 1 / std::sqrt(17.0)};
      if (axis == 0 && p == 1) want = {0.75, 0.8, 0, 0, -0.25, 0.2};
      testing::expect_close(out[0], want, 1e-6, 1e-6, core::str_cat("p", p, " axis ", axis));
    }
}

TEST(MvnReference, DefaultAndCustomAxes) {
  Tensor x = testing::random_tensor({2, 3, 2, 2}, 41, 0.f, 5.f);
  auto xv = testing::values(x);
  for (const std::vector<int64_t>& axes :
       {std::vector<int64_t>{0, 2, 3}, std::vector<int64_t>{-1}, std::vector<int64_t>{1, 3}}) {
    OnnxBuilder m;
    m.input("x", 1, x.dims());
    auto& n = m.node("MeanVarianceNormalization", {"x"}, {"y"});
    if (axes.size() != 3) OnnxBuilder::attr(n, "axes", axes);
    m.output("y");
    auto out = testing::run_model(m, {x});
    ASSERT_EQ(out.size(), 1u);
    // Group elements by their coordinates on the kept axes.
    std::vector<bool> reduced(4, false);
    for (int64_t a : axes) reduced[static_cast<size_t>(a < 0 ? a + 4 : a)] = true;
    std::map<std::vector<int64_t>, std::vector<size_t>> groups;
    const Dims& d = x.dims();
    for (size_t i = 0; i < xv.size(); ++i) {
      std::vector<int64_t> key;
      int64_t rem = static_cast<int64_t>(i);
      for (size_t ax = 4; ax-- > 0;) {
        if (!reduced[ax]) key.push_back(rem % d[ax]);
        rem /= d[ax];
      }
      groups[key].push_back(i);
    }
    std::vector<double> want(xv.size());
    for (const auto& [k, idx] : groups) {
      auto [mu, var] = stats(xv, idx);
      for (size_t i : idx) want[i] = (xv[i] - mu) / (std::sqrt(var) + 1e-9);
    }
    testing::expect_close(out[0], want, 1e-5, 1e-4, core::str_cat("axes ", core::join(axes)));
  }
}

}  // namespace
}  // namespace kestrel
