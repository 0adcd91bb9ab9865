// Calibration methods against hand-computed ranges: percentile of a known distribution, KL
// clipping outliers, the moving-average formula, min-max, u8 parameters, and a calibration run.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "quant/calibrate.h"
#include "quant/quantize.h"

namespace kestrel::quant {
namespace {

core::Tensor vec(const std::vector<float>& v) {
  return core::Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())});
}

TEST(QuantCalibrate, PercentileOfUniformValues) {
  // Values 0..9999 in 10000 bins of width 1: the 99th percentile is the edge 9900, the 1st 100.
  Histogram h;
  h.lo = 0, h.hi = 10000;
  h.counts.assign(10000, 0.0);
  for (int i = 0; i < 10000; ++i) h.add(static_cast<float>(i));
  TensorRange r = percentile_range(h, 99.0);
  EXPECT_NEAR(r.max, 9900, 1.0);
  EXPECT_NEAR(r.min, 100, 1.0);
  r = percentile_range(h, 100.0);
  EXPECT_NEAR(r.max, 10000, 1e-3);
  EXPECT_NEAR(r.min, 0, 1e-3);
}

TEST(QuantCalibrate, PercentileClipsOneOutlierPerThousand) {
  RangeCollector rc({CalibMethod::kPercentile, 99.5, 0.9, 2048});
  std::vector<float> v(1000);
  for (int i = 0; i < 1000; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i % 100) / 100.0f;  // [0, 0.99]
  v[7] = 1000.0f;                                                                                   // one outlier
  core::Tensor t = vec(v);
  rc.observe(0, "x", t);
  rc.observe(1, "x", t);
  TensorRange r = rc.ranges().at("x");
  EXPECT_EQ(r.min, 0.0f);
  EXPECT_LT(r.max, 2.0f);  // the outlier is clipped (minmax would give 1000)
  EXPECT_GT(r.max, 0.9f);
}

TEST(QuantCalibrate, KlClipsOutliers) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(200000);
  for (float& x : v) x = nd(rng);
  for (int i = 0; i < 20; ++i) v[static_cast<size_t>(i)] = 60.0f;  // far outliers
  RangeCollector rc({CalibMethod::kKl, 99.99, 0.9, 2048});
  core::Tensor t = vec(v);
  rc.observe(0, "x", t);
  rc.observe(1, "x", t);
  TensorRange r = rc.ranges().at("x");
  EXPECT_LT(r.max, 10.0f);
  EXPECT_GT(r.max, 2.0f);
  EXPECT_GT(r.min, -10.0f);
  EXPECT_LT(r.min, -2.0f);
}

TEST(QuantCalibrate, KlKeepsTheRangeOfAUniformDistribution) {
  std::vector<double> counts(2048, 100.0);  // |x| uniform on [0, 1]: nothing to clip
  const double t = kl_threshold(counts, 1.0, 255);
  EXPECT_GT(t, 0.9);
  EXPECT_LE(t, 1.0);
}

TEST(QuantCalibrate, EmaFormula) {
  RangeCollector rc({CalibMethod::kEma, 99.99, 0.9, 2048});
  EXPECT_EQ(rc.passes(), 1);
  rc.observe(0, "x", vec({-1, 2}));
  rc.observe(0, "x", vec({-3, 4}));
  rc.observe(0, "x", vec({0.5f, 1}));
  // min: -1 -> 0.9 * -1 + 0.1 * -3 = -1.2 -> 0.9 * -1.2 + 0.1 * 0.5 = -1.03
  // max:  2 -> 0.9 *  2 + 0.1 *  4 =  2.2 -> 0.9 *  2.2 + 0.1 * 1   =  2.08
  TensorRange r = rc.ranges().at("x");
  EXPECT_NEAR(r.min, -1.03, 1e-5);
  EXPECT_NEAR(r.max, 2.08, 1e-5);
}

TEST(QuantCalibrate, MinMaxContainsZeroAndSkipsNonFinite) {
  RangeCollector rc({CalibMethod::kMinMax, 99.99, 0.9, 2048});
  rc.observe(0, "x", vec({1, 2, 3, NAN, INFINITY}));
  rc.observe(0, "x", vec({2.5f, 1.5f}));
  TensorRange r = rc.ranges().at("x");
  EXPECT_EQ(r.min, 0.0f);
  EXPECT_EQ(r.max, 3.0f);
}

TEST(QuantCalibrate, U8Parameters) {
  float s;
  int zp;
  u8_params({-1, 3}, &s, &zp);
  EXPECT_FLOAT_EQ(s, 4.0f / 255);
  EXPECT_EQ(zp, 64);  // round(1 / (4 / 255)) = round(63.75)
  u8_params({0, 6}, &s, &zp);
  EXPECT_FLOAT_EQ(s, 6.0f / 255);
  EXPECT_EQ(zp, 0);
  u8_params({-2, -1}, &s, &zp);  // widened to [-2, 0]
  EXPECT_FLOAT_EQ(s, 2.0f / 255);
  EXPECT_EQ(zp, 255);
  u8_params({0, 0}, &s, &zp);  // constant zero: any positive scale
  EXPECT_GT(s, 0);
  EXPECT_EQ(zp, 0);
}

TEST(QuantCalibrate, ParseMethod) {
  CalibMethod m;
  EXPECT_TRUE(parse_calib_method("kl", &m));
  EXPECT_EQ(m, CalibMethod::kKl);
  EXPECT_TRUE(parse_calib_method("entropy", &m));
  EXPECT_TRUE(parse_calib_method("ema", &m));
  EXPECT_EQ(m, CalibMethod::kEma);
  EXPECT_FALSE(parse_calib_method("median", &m));
}

TEST(QuantCalibrate, CalibrationRunSeesIntermediateTensors) {
  ir::Graph g;
  ir::Value* x = g.add_input("x", {core::DType::kF32, ir::Shape(core::Dims{1, 4})});
  ir::Node* relu = g.add_node("Relu", {x}, {"r"}, "relu");
  ir::Node* neg = g.add_node("Neg", {relu->output(0)}, {"y"}, "neg");
  g.add_output(neg->output(0));
  std::vector<Sample> samples = {{core::Tensor::from_vector<float>({-1, 2, 3, -4}, {1, 4})},
                                 {core::Tensor::from_vector<float>({5, -6, 0.5f, 1}, {1, 4})}};
  auto r = calibrate(g, samples, {"x", "r", "y"}, {CalibMethod::kMinMax, 99.99, 0.9, 2048});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->at("x").min, -6.0f);
  EXPECT_EQ(r->at("x").max, 5.0f);
  EXPECT_EQ(r->at("r").min, 0.0f);
  EXPECT_EQ(r->at("r").max, 5.0f);
  EXPECT_EQ(r->at("y").min, -5.0f);
  EXPECT_EQ(r->at("y").max, 0.0f);
  EXPECT_FALSE(calibrate(g, samples, {"nope"}, {}).is_ok());
  EXPECT_FALSE(calibrate(g, {}, {"x"}, {}).is_ok());
}

}  // namespace
}  // namespace kestrel::quant
