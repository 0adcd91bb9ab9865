// Tests of Resize and GridSample: the kernels through their bindings against naive re-computations
// written here (Resize: the ONNX reference's algorithm, one axis at a time over the whole input with
// n-nearest neighbour search; GridSample: PyTorch-style per-point sampling), hand-computed
// values, every mode / coordinate transformation / padding, dtypes, the importer's Upsample and
// Resize-10 canonicalization, run-time scales and sizes, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "common/onnx_builder.h"
#include "common/op_test_util.h"
#include "common/value_test_util.h"

namespace kestrel {
namespace {

using core::Dims;
using core::DType;
using core::Tensor;
using ir::Attribute;
using testing::Attrs;
using testing::eval_op;
using testing::fails_with;
using testing::i64s;
using testing::make;
using testing::near_all;
using testing::OnnxBuilder;
using testing::random_f32;
using testing::run_op;
using testing::tensors_equal;
using testing::unravel;
using testing::values;

Tensor f32s(const std::vector<float>& v) {
  return make<float>({static_cast<int64_t>(v.size())}, v);
}

// ---------------------------------------------------------------------------------------------
// Naive Resize: the ONNX reference algorithm. Each output element interpolates the whole input
// one axis at a time (outermost last), finding the n nearest input indices of the source
// coordinate by sorting, with edge padding.

struct NaiveResize {
  std::string mode = "nearest";
  std::string ctm = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";
  double a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation = 0;
};

double keys(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return (a + 2) * x * x * x - (a + 3) * x * x + 1;
  if (x < 2) return a * x * x * x - 5 * a * x * x + 8 * a * x - 4 * a;
  return 0;
}

// Coefficients for ratio in (0, 1] (1 when the coordinate is an integer), as the reference.
std::vector<double> naive_coeffs(const NaiveResize& p, double ratio, double scale) {
  if (p.mode == "nearest") {
    if (ratio == 1) return {0, 1};
    if (p.nearest_mode == "round_prefer_floor") return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
    if (p.nearest_mode == "round_prefer_ceil") return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    if (p.nearest_mode == "floor") return {1, 0};
    return {0, 1};
  }
  std::vector<double> c;
  if (p.mode == "linear") {
    if (!p.antialias) return {1 - ratio, ratio};
    const double s = std::min(scale, 1.0);
    const int start = static_cast<int>(std::floor(-1 / s) + 1);
    const int footprint = 2 - 2 * start;
    for (int k = 0; k < footprint; ++k) c.push_back(std::max(0.0, 1 - std::fabs((start + k - ratio) * s)));
  } else {
    if (!p.antialias) return {keys(ratio + 1, p.a), keys(ratio, p.a), keys(1 - ratio, p.a), keys(2 - ratio, p.a)};
    const double s = std::min(scale, 1.0);
    const int i_start = static_cast<int>(std::floor(-2 / s) + 1);
    for (int i = i_start; i < 2 - i_start; ++i) c.push_back(keys(s * (i - ratio), p.a));
  }
  double sum = 0;
  for (double v : c) sum += v;
  for (double& v : c) v /= sum;
  return c;
}

double naive_interp_1d(const NaiveResize& p, const std::vector<double>& data, double scale, int64_t out_len, double x,
                       double roi_lo, double roi_hi) {
  const auto in = static_cast<double>(data.size());
  const double out_w = scale * in;
  double xo;
  if (p.ctm == "align_corners")
    xo = out_len == 1 ? 0 : x * (in - 1) / (out_w - 1);
  else if (p.ctm == "asymmetric")
    xo = x / scale;
  else if (p.ctm == "tf_half_pixel_for_nn")
    xo = (x + 0.5) / scale;
  else if (p.ctm == "pytorch_half_pixel")
    xo = out_len == 1 ? 0 : (x + 0.5) / scale - 0.5;
  else if (p.ctm == "half_pixel_symmetric")
    xo = in / 2 * (1 - static_cast<double>(out_len) / out_w) + (x + 0.5) / scale - 0.5;
  else if (p.ctm == "tf_crop_and_resize") {
    xo = out_len == 1 ? (roi_hi - roi_lo) * (in - 1) / 2 : x * (roi_hi - roi_lo) * (in - 1) / (out_w - 1);
    xo += roi_lo * (in - 1);
    if (xo < 0 || xo > in - 1) return p.extrapolation;
  } else {
    xo = (x + 0.5) / scale - 0.5;
  }
  const double xi = std::floor(xo);
  const double ratio = xo == xi ? 1.0 : xo - xi;
  std::vector<double> c = naive_coeffs(p, ratio, scale);
  const auto n = static_cast<int64_t>(c.size());
  // The n integers nearest xo (ties: the smaller), ascending.
  std::vector<int64_t> cand;
  for (int64_t q = static_cast<int64_t>(xi) - n - 2; q <= static_cast<int64_t>(xi) + n + 2; ++q) cand.push_back(q);
  std::stable_sort(cand.begin(), cand.end(), [&](int64_t u, int64_t v) {
    const double du = std::fabs(xo - static_cast<double>(u)), dv = std::fabs(xo - static_cast<double>(v));
    return du != dv ? du < dv : u < v;
  });
  cand.resize(static_cast<size_t>(n));
  std::sort(cand.begin(), cand.end());
  if (p.exclude_outside) {
    double sum = 0;
    for (size_t k = 0; k < c.size(); ++k) {
      if (cand[k] < 0 || cand[k] >= static_cast<int64_t>(data.size())) c[k] = 0;
      sum += c[k];
    }
    for (double& v : c) v /= sum;
  }
  double r = 0;
  for (size_t k = 0; k < c.size(); ++k)
    r += c[k] * data[static_cast<size_t>(std::clamp<int64_t>(cand[k], 0, static_cast<int64_t>(data.size()) - 1))];
  return r;
}

// Interpolates `data` (dims) at output coordinates xs, axis by axis like the reference's recursion.
double naive_interp_nd(const NaiveResize& p, const std::vector<double>& data, const Dims& dims,
                       const std::vector<double>& scales, const Dims& out, const Dims& xs,
                       const std::vector<double>& roi, size_t axis) {
  const size_t rank = dims.size();
  const double lo = roi.empty() ? 0 : roi[axis], hi = roi.empty() ? 1 : roi[axis + rank];
  if (axis + 1 == rank) return naive_interp_1d(p, data, scales[axis], out[axis], static_cast<double>(xs[axis]), lo, hi);
  int64_t inner = 1;
  for (size_t d = axis + 1; d < rank; ++d) inner *= dims[d];
  std::vector<double> line;
  for (int64_t i = 0; i < dims[axis]; ++i) {
    std::vector<double> sub(data.begin() + i * inner, data.begin() + (i + 1) * inner);
    line.push_back(naive_interp_nd(p, sub, dims, scales, out, xs, roi, axis + 1));
  }
  return naive_interp_1d(p, line, scales[axis], out[axis], static_cast<double>(xs[axis]), lo, hi);
}

std::vector<double> naive_resize(const NaiveResize& p, const Tensor& x, const std::vector<double>& scales,
                                 const Dims& out, const std::vector<double>& roi = {}) {
  std::vector<double> data = core::tensor_to_doubles(x);
  std::vector<double> r;
  for (int64_t o = 0; o < core::num_elements(out); ++o)
    r.push_back(naive_interp_nd(p, data, x.dims(), scales, out, unravel(o, out), roi, 0));
  return r;
}

Attrs resize_attrs(const NaiveResize& p) {
  Attrs a{{"mode", Attribute(p.mode)},
          {"coordinate_transformation_mode", Attribute(p.ctm)},
          {"nearest_mode", Attribute(p.nearest_mode)},
          {"cubic_coeff_a", Attribute(static_cast<float>(p.a))},
          {"exclude_outside", Attribute(int64_t{p.exclude_outside})},
          {"antialias", Attribute(int64_t{p.antialias})},
          {"extrapolation_value", Attribute(static_cast<float>(p.extrapolation))}};
  return a;
}

TEST(ResizeKernel, EveryModeAndCoordinateTransformMatchesTheOnnxAlgorithm) {
  const char* ctms[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                        "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  struct Case {
    Dims in;
    std::vector<float> scales;
  };
  const Case cases[] = {
      {{1, 1, 4, 5}, {1, 1, 2.f, 1.5f}},
      {{1, 2, 5, 4}, {1, 1, 0.6f, 0.75f}},
      {{2, 7}, {1, 0.4f}},
      {{3, 1, 3}, {1.f, 1, 3.f}},
      {{1, 1, 8, 9}, {1, 1, 0.5f, 0.34f}},
      {{2, 3, 4}, {1.5f, 1, 0.5f}},
      {{1, 1, 2, 3, 3}, {1, 1, 2.f, 1.f, 0.7f}},
  };
  uint32_t seed = 7;
  int checked = 0;
  for (const Case& c : cases) {
    Tensor x = random_f32(c.in, seed++);
    const auto rank = static_cast<int64_t>(c.in.size());
    Dims out;
    std::vector<double> scales;
    for (size_t d = 0; d < c.in.size(); ++d) {
      out.push_back(static_cast<int64_t>(std::floor(static_cast<float>(c.in[d]) * c.scales[d])));
      scales.push_back(c.scales[d]);
    }
    std::vector<float> roi_v;
    for (int64_t d = 0; d < rank; ++d) roi_v.push_back(d % 2 ? 0.2f : -0.1f);
    for (int64_t d = 0; d < rank; ++d) roi_v.push_back(d % 2 ? 0.9f : 1.15f);
    const std::vector<double> roi_d(roi_v.begin(), roi_v.end());
    for (const char* ctm : ctms) {
      for (const char* mode : {"nearest", "linear", "cubic"}) {
        std::vector<NaiveResize> variants;
        if (std::string(mode) == "nearest") {
          for (const char* nm : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
            variants.push_back({mode, ctm, nm});
        } else {
          for (int opt = 0; opt < 4; ++opt) {
            NaiveResize p{mode, ctm};
            p.exclude_outside = opt & 1;
            p.antialias = opt & 2;
            if (std::string(mode) == "cubic" && opt == 1) p.a = -0.5;
            variants.push_back(p);
          }
        }
        for (NaiveResize p : variants) {
          const bool tf = std::string(ctm) == "tf_crop_and_resize";
          p.extrapolation = tf ? 7.5 : 0;
          Tensor roi = tf ? f32s(roi_v) : Tensor();
          auto r = eval_op("Resize", {x, roi, f32s(c.scales)}, resize_attrs(p));
          ASSERT_TRUE(r.is_ok()) << r.status().to_string();
          ASSERT_EQ((*r)[0].dims(), out);
          std::vector<double> want = naive_resize(p, x, scales, out, tf ? roi_d : std::vector<double>{});
          EXPECT_TRUE(near_all((*r)[0], want, 1e-5))
              << core::dims_to_string(c.in) << " " << mode << " " << ctm << " " << p.nearest_mode << " exclude "
              << p.exclude_outside << " antialias " << p.antialias;
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 7 * 7 * 12);
}

TEST(ResizeKernel, HandComputedValues) {
  // Nearest 2x (half_pixel, round_prefer_floor).
  KESTREL_EVAL1(y, "Resize", {make<float>({1, 1, 2, 2}, {1, 2, 3, 4}), Tensor(), f32s({1, 1, 2, 2})});
  EXPECT_EQ(values(y), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  // Linear half_pixel: x_original = -0.25, 0.25, 0.75, 1.25; the edge repeats.
  KESTREL_EVAL1(l, "Resize", {f32s({0, 10}), Tensor(), f32s({2})}, Attrs{{"mode", Attribute("linear")}});
  EXPECT_EQ(values(l), (std::vector<float>{0, 2.5f, 7.5f, 10}));
  // Antialiased linear halving: the triangle filter is 4 taps wide, weights 1/8, 3/8, 3/8, 1/8.
  KESTREL_EVAL1(aa, "Resize", {f32s({0, 1, 2, 3, 4, 5, 6, 7}), Tensor(), f32s({0.5f})},
                Attrs{{"mode", Attribute("linear")}, {"antialias", Attribute(int64_t{1})}});
  EXPECT_TRUE(near_all(aa, {0.625, 2.5, 4.5, 6.375}, 1e-6));
  // half_pixel_symmetric, 4 -> floor(2.4) = 2: x_original = 1/3 + (x + 0.5) / 0.6 - 0.5.
  KESTREL_EVAL1(
      hs, "Resize", {f32s({0, 1, 2, 3}), Tensor(), f32s({0.6f})},
      Attrs{{"mode", Attribute("linear")}, {"coordinate_transformation_mode", Attribute("half_pixel_symmetric")}});
  EXPECT_TRUE(near_all(hs, {2.0 / 3, 7.0 / 3}, 1e-6));
  // tf_crop_and_resize: roi [0.5, 1.5] of a 3-long axis -> coordinates 1, 2, 3 (3 is outside).
  KESTREL_EVAL1(tf, "Resize", {f32s({10, 20, 30}), f32s({0.5f, 1.5f}), Tensor(), i64s({3})},
                Attrs{{"mode", Attribute("linear")},
                      {"coordinate_transformation_mode", Attribute("tf_crop_and_resize")},
                      {"extrapolation_value", Attribute(-1.f)}});
  EXPECT_EQ(values(tf), (std::vector<float>{20, 30, -1}));
}

// The opset-18/19 examples of the ONNX operator documentation, with their published outputs
// (the onnx 1.12 node tests predate antialias, axes, keep_aspect_ratio_policy and
// half_pixel_symmetric).
TEST(ResizeKernel, Opset18And19DocumentationExamples) {
  const Tensor x4 = make<float>({1, 1, 4, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  const Tensor x2 = make<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  const Attrs linear_aa{{"mode", Attribute("linear")}, {"antialias", Attribute(int64_t{1})}};
  const Attrs cubic_aa{{"mode", Attribute("cubic")}, {"antialias", Attribute(int64_t{1})}};
  KESTREL_EVAL1(a, "Resize", {x4, Tensor(), f32s({1, 1, 0.6f, 0.6f})}, linear_aa);
  EXPECT_TRUE(near_all(a, {2.875, 4.5, 9.375, 11}, 1e-6));
  KESTREL_EVAL1(b, "Resize", {x4, Tensor(), Tensor(), i64s({1, 1, 3, 3})}, linear_aa);
  EXPECT_TRUE(
      near_all(b, {2.3636363, 3.590909, 4.818182, 7.2727275, 8.5, 9.727273, 12.181818, 13.409091, 14.636364}, 1e-6));
  KESTREL_EVAL1(c, "Resize", {x4, Tensor(), f32s({1, 1, 0.6f, 0.6f})}, cubic_aa);
  EXPECT_TRUE(near_all(c, {2.5180721, 4.2858863, 9.589329, 11.357142}, 1e-6));
  KESTREL_EVAL1(d, "Resize", {x4, Tensor(), Tensor(), i64s({1, 1, 3, 3})}, cubic_aa);
  EXPECT_TRUE(
      near_all(d, {1.7750092, 3.1200073, 4.4650054, 7.1550016, 8.5, 9.844998, 12.534994, 13.8799925, 15.224991}, 1e-6));
  // axes in either order.
  for (bool swapped : {false, true}) {
    const Attrs ax{{"axes", Attribute(swapped ? std::vector<int64_t>{3, 2} : std::vector<int64_t>{2, 3})}};
    KESTREL_EVAL1(s, "Resize", {x2, Tensor(), swapped ? f32s({3, 2}) : f32s({2, 3})}, ax);
    EXPECT_EQ(values(s), (std::vector<float>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
    KESTREL_EVAL1(z, "Resize", {x2, Tensor(), Tensor(), swapped ? i64s({8, 7}) : i64s({7, 8})}, ax);
    EXPECT_EQ(z.dims(), (Dims{1, 1, 7, 8}));
    Attrs tf = ax;
    tf["mode"] = Attribute("linear");
    tf["coordinate_transformation_mode"] = Attribute("tf_crop_and_resize");
    KESTREL_EVAL1(
        t, "Resize",
        {x4, swapped ? f32s({0.6f, 0.4f, 0.8f, 0.6f}) : f32s({0.4f, 0.6f, 0.6f, 0.8f}), Tensor(), i64s({3, 3})}, tf);
    EXPECT_TRUE(near_all(t, {7.6000004, 7.9, 8.2, 8.8, 9.1, 9.400001, 10, 10.3, 10.6}, 1e-6));
  }
  // keep_aspect_ratio_policy.
  const Attrs nl{{"axes", Attribute(std::vector<int64_t>{2, 3})},
                 {"keep_aspect_ratio_policy", Attribute("not_larger")}};
  const Attrs ns{{"axes", Attribute(std::vector<int64_t>{2, 3})},
                 {"keep_aspect_ratio_policy", Attribute("not_smaller")}};
  KESTREL_EVAL1(up_nl, "Resize", {x2, Tensor(), Tensor(), i64s({7, 8})}, nl);
  EXPECT_EQ(up_nl.dims(), (Dims{1, 1, 7, 7}));
  EXPECT_EQ(values(up_nl)[3], 1);
  EXPECT_EQ(values(up_nl)[4], 2);
  KESTREL_EVAL1(up_ns, "Resize", {x2, Tensor(), Tensor(), i64s({7, 8})}, ns);
  EXPECT_EQ(up_ns.dims(), (Dims{1, 1, 8, 8}));
  const Tensor x24 = make<float>({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  KESTREL_EVAL1(down_nl, "Resize", {x24, Tensor(), Tensor(), i64s({1, 3})}, nl);
  EXPECT_EQ(values(down_nl), (std::vector<float>{1, 3}));
  KESTREL_EVAL1(down_ns, "Resize", {x24, Tensor(), Tensor(), i64s({1, 3})}, ns);
  EXPECT_EQ(down_ns.dims(), (Dims{1, 1, 2, 3}));
  EXPECT_EQ(values(down_ns), (std::vector<float>{1, 2, 4, 5, 6, 8}));
  // half_pixel_symmetric.
  const Attrs hps{{"mode", Attribute("linear")}, {"coordinate_transformation_mode", Attribute("half_pixel_symmetric")}};
  KESTREL_EVAL1(h1, "Resize", {make<float>({1, 1, 1, 4}, {1, 2, 3, 4}), Tensor(), f32s({1, 1, 1, 0.6f})}, hps);
  EXPECT_TRUE(near_all(h1, {1.6666667, 3.3333333}, 1e-6));
  KESTREL_EVAL1(h2, "Resize", {x2, Tensor(), f32s({1, 1, 2.3f, 2.94f})}, hps);
  EXPECT_TRUE(near_all(h2, {1,          1.15986395, 1.5,        1.84013605, 2,          1.56521738, 1.72508133,
                            2.06521738, 2.40535343, 2.56521738, 2.43478262, 2.59464657, 2.93478262, 3.27491867,
                            3.43478262, 3,          3.15986395, 3.5,        3.84013605, 4},
                       1e-6));
}

TEST(ResizeKernel, SizesAxesAndKeepAspectRatio) {
  Tensor x = random_f32({1, 2, 4, 6}, 3);
  for (const char* policy : {"stretch", "not_larger", "not_smaller"}) {
    KESTREL_EVAL1(y, "Resize", {x, Tensor(), Tensor(), i64s({2, 2})},
                  Attrs{{"axes", Attribute(std::vector<int64_t>{2, -1})},
                        {"keep_aspect_ratio_policy", Attribute(policy)},
                        {"mode", Attribute("linear")}});
    // not_larger: scale min(2/4, 2/6) = 1/3 -> round(4/3), round(6/3); not_smaller: scale 1/2.
    const Dims want = std::string(policy) == "stretch"      ? Dims{1, 2, 2, 2}
                      : std::string(policy) == "not_larger" ? Dims{1, 2, 1, 2}
                                                            : Dims{1, 2, 2, 3};
    EXPECT_EQ(y.dims(), want) << policy;
    // Same values as scales on every axis with the scale the policy chose.
    const double s = std::string(policy) == "not_larger" ? 1.0 / 3 : 0.5;
    std::vector<double> scales = {1, 1, std::string(policy) == "stretch" ? 0.5 : s,
                                  std::string(policy) == "stretch" ? 1.0 / 3 : s};
    NaiveResize p{"linear"};
    EXPECT_TRUE(near_all(y, naive_resize(p, x, scales, want), 1e-5)) << policy;
  }
  // Scales with axes: the other axes keep their size.
  KESTREL_EVAL1(z, "Resize", {x, Tensor(), f32s({2.f})}, Attrs{{"axes", Attribute(std::vector<int64_t>{1})}});
  EXPECT_EQ(z.dims(), (Dims{1, 4, 4, 6}));
}

TEST(ResizeKernel, Dtypes) {
  // Nearest is an exact gather for every dtype, strings and 64-bit integers included.
  const int64_t big = (int64_t{1} << 60) + 1;
  KESTREL_EVAL1(i, "Resize", {make<int64_t>({2}, {big, -big}), Tensor(), f32s({2})});
  EXPECT_TRUE(tensors_equal(i, make<int64_t>({4}, {big, big, -big, -big})));
  KESTREL_EVAL1(s, "Resize", {make<std::string>({2}, {"a", "b"}), Tensor(), f32s({1.5f})});
  EXPECT_TRUE(tensors_equal(s, make<std::string>({3}, {"a", "a", "b"})));
  // Linear on integers rounds (half away from zero); cubic overshoot saturates.
  KESTREL_EVAL1(u, "Resize", {make<uint8_t>({2}, {0, 5}), Tensor(), f32s({2})}, Attrs{{"mode", Attribute("linear")}});
  EXPECT_TRUE(tensors_equal(u, make<uint8_t>({4}, {0, 1, 4, 5})));  // 0, 1.25, 3.75, 5
  KESTREL_EVAL1(c, "Resize", {make<uint8_t>({4}, {0, 0, 255, 255}), Tensor(), f32s({2})},
                Attrs{{"mode", Attribute("cubic")}});
  for (int64_t k = 0; k < c.num_elements(); ++k) EXPECT_LE(c.element_as_double(k), 255);
  EXPECT_EQ(c.data<uint8_t>()[0], 0);
  EXPECT_EQ(c.data<uint8_t>()[7], 255);
  // f16 and f64 follow the f32 result.
  Tensor x = random_f32({1, 3, 4}, 11);
  KESTREL_EVAL1(ref, "Resize", {x, Tensor(), f32s({1, 1.5f, 0.75f})}, Attrs{{"mode", Attribute("cubic")}});
  Tensor xd = Tensor::allocate(DType::kF64, x.dims()).value();
  Tensor xh = Tensor::allocate(DType::kF16, x.dims()).value();
  for (int64_t k = 0; k < x.num_elements(); ++k) {
    xd.data<double>()[k] = x.data<float>()[k];
    xh.data<core::Float16>()[k] = core::Float16(x.data<float>()[k]);
  }
  KESTREL_EVAL1(yd, "Resize", {xd, Tensor(), f32s({1, 1.5f, 0.75f})}, Attrs{{"mode", Attribute("cubic")}});
  KESTREL_EVAL1(yh, "Resize", {xh, Tensor(), f32s({1, 1.5f, 0.75f})}, Attrs{{"mode", Attribute("cubic")}});
  ASSERT_EQ(yd.dtype(), DType::kF64);
  ASSERT_EQ(yh.dtype(), DType::kF16);
  for (int64_t k = 0; k < ref.num_elements(); ++k) {
    EXPECT_NEAR(yd.element_as_double(k), ref.element_as_double(k), 1e-5);
    EXPECT_NEAR(yh.element_as_double(k), ref.element_as_double(k), 2e-2);
  }
}

TEST(ResizeKernel, BadInput) {
  Tensor x = random_f32({1, 1, 2, 2}, 1);
  EXPECT_TRUE(
      fails_with(eval_op("Resize", {x, Tensor(), f32s({1, 1, 2, 2}), i64s({1, 1, 4, 4})}).status(), "not both"));
  EXPECT_TRUE(fails_with(eval_op("Resize", {x}).status(), "needs one of"));
  EXPECT_TRUE(fails_with(eval_op("Resize", {x, Tensor(), f32s({1, 1, -2, 2})}).status(), "positive"));
  EXPECT_TRUE(fails_with(eval_op("Resize", {x, Tensor(), f32s({2, 2})}).status(), "expected 4"));
  EXPECT_TRUE(fails_with(eval_op("Resize", {x, Tensor(), Tensor(), i64s({1, 1, -1, 2})}).status(), "negative"));
  EXPECT_TRUE(fails_with(
      eval_op("Resize", {x, Tensor(), f32s({2})}, Attrs{{"axes", Attribute(std::vector<int64_t>{4})}}).status(),
      "out of range"));
  EXPECT_TRUE(
      fails_with(eval_op("Resize", {x, Tensor(), f32s({1, 1, 2, 2})}, Attrs{{"mode", Attribute("area")}}).status(),
                 "unsupported value"));
  EXPECT_TRUE(fails_with(
      eval_op("Resize", {make<std::string>({2}, {"a", "b"}), Tensor(), f32s({2})}, Attrs{{"mode", Attribute("linear")}})
          .status(),
      "numeric"));
  EXPECT_TRUE(fails_with(eval_op("Resize", {x, Tensor(), f32s({1, 1, 1e30f, 1e30f})}).status(), "too many"));
  EXPECT_TRUE(fails_with(eval_op("Resize", {x, f32s({0, 1}), Tensor(), i64s({1, 1, 4, 4})},
                                 Attrs{{"coordinate_transformation_mode", Attribute("tf_crop_and_resize")}})
                             .status(),
                         "roi"));
  // An empty axis cannot grow.
  EXPECT_TRUE(fails_with(
      eval_op("Resize", {Tensor::allocate(DType::kF32, {0, 2}).value(), Tensor(), Tensor(), i64s({2, 2})}).status(),
      "empty"));
}

TEST(ResizeSession, RuntimeScalesAndSizes) {
  Tensor x = random_f32({1, 1, 3, 4}, 5);
  NaiveResize p{"linear"};
  // scales and sizes as graph inputs: the output shape is known only at run time.
  auto r = run_op("Resize", {x, Tensor(), f32s({1, 1, 2, 0.5f})}, {true, false, true}, resize_attrs(p));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims(), (Dims{1, 1, 6, 2}));
  EXPECT_TRUE(near_all((*r)[0], naive_resize(p, x, {1, 1, 2, 0.5}, {1, 1, 6, 2}), 1e-5));
  auto s = run_op("Resize", {x, Tensor(), Tensor(), i64s({5, 3})}, {true, false, false, true},
                  Attrs{{"axes", Attribute(std::vector<int64_t>{2, 3})}, {"mode", Attribute("cubic")}}, 1, true);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ((*s)[0].dims(), (Dims{1, 1, 5, 3}));
  NaiveResize c{"cubic"};
  EXPECT_TRUE(near_all((*s)[0], naive_resize(c, x, {1, 1, 5.0 / 3, 3.0 / 4}, {1, 1, 5, 3}), 1e-5));
  // A scales input of unknown shape next to sizes: empty at run time, so sizes decide.
  auto e = run_op("Resize", {x, Tensor(), Tensor::allocate(DType::kF32, {0}).value(), i64s({1, 1, 2, 2})},
                  {true, false, true, false}, {}, 1, true);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ((*e)[0].dims(), (Dims{1, 1, 2, 2}));
  auto both =
      run_op("Resize", {x, Tensor(), f32s({1, 1, 2, 2}), i64s({1, 1, 2, 2})}, {true, false, true, false}, {}, 1, true);
  EXPECT_TRUE(fails_with(both.status(), "not both"));
  // Bad run-time scales fail the run with a message, not a crash.
  auto bad = run_op("Resize", {x, Tensor(), f32s({1, 1, 2})}, {true, false, true});
  EXPECT_TRUE(fails_with(bad.status(), "expected 4"));
}

std::unique_ptr<runtime::Session> open(const std::string& bytes) {
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? std::move(s).value() : nullptr;
}

TEST(ResizeSession, UpsampleAndResize10BecomeAsymmetricResize) {
  const Tensor x = make<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  const std::vector<float> nearest = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
  {  // Upsample-7: scales attribute.
    OnnxBuilder b(7);
    b.input("x", 1, {1, 1, 2, 2});
    OnnxBuilder::attr(b.node("Upsample", {"x"}, {"y"}), "scales", std::vector<float>{1, 1, 2, 3});
    b.output("y");
    auto s = open(b.bytes());
    ASSERT_TRUE(s);
    std::vector<Tensor> out;
    ASSERT_TRUE(s->run({{"x", x}}, out).is_ok());
    EXPECT_EQ(out[0].dims(), (Dims{1, 1, 4, 6}));
    EXPECT_EQ(values(out[0]), nearest);
  }
  for (int opset : {9, 10}) {  // Upsample-9 and Resize-10: scales input; linear is asymmetric.
    OnnxBuilder b(opset);
    b.input("x", 1, {1, 1, 2, 2}).initializer_f32("scales", {4}, {1, 1, 2, 2});
    OnnxBuilder::attr(b.node(opset == 9 ? "Upsample" : "Resize", {"x", "scales"}, {"y"}), "mode",
                      std::string("linear"));
    b.output("y");
    auto s = open(b.bytes());
    ASSERT_TRUE(s);
    std::vector<Tensor> out;
    ASSERT_TRUE(s->run({{"x", x}}, out).is_ok());
    // x_original = 0, 0.5, 1, 1.5 (clamped) per axis.
    EXPECT_EQ(values(out[0]), (std::vector<float>{1, 1.5f, 2, 2, 2, 2.5f, 3, 3, 3, 3.5f, 4, 4, 3, 3.5f, 4, 4}))
        << opset;
  }
  {  // Resize-10 nearest floors (0.6 -> output index 1 reads input floor(1 / 0.6) = 1).
    OnnxBuilder b(10);
    b.input("x", 1, {1, 1, 1, 5}).initializer_f32("scales", {4}, {1, 1, 1, 0.6f});
    b.node("Resize", {"x", "scales"}, {"y"});
    b.output("y");
    auto s = open(b.bytes());
    ASSERT_TRUE(s);
    std::vector<Tensor> out;
    ASSERT_TRUE(s->run({{"x", make<float>({1, 1, 1, 5}, {0, 1, 2, 3, 4})}}, out).is_ok());
    EXPECT_EQ(values(out[0]), (std::vector<float>{0, 1, 3}));
  }
  {  // Resize-11 with empty roi and scales initializers and a sizes input.
    OnnxBuilder b(11);
    b.input("x", 1, {1, 1, 2, 2}).initializer_f32("roi", {0}, {}).initializer_f32("scales", {0}, {});
    b.initializer_i64("sizes", {4}, {1, 1, 4, 6});
    b.node("Resize", {"x", "roi", "scales", "sizes"}, {"y"});
    b.output("y");
    auto s = open(b.bytes());
    ASSERT_TRUE(s);
    std::vector<Tensor> out;
    ASSERT_TRUE(s->run({{"x", x}}, out).is_ok());
    EXPECT_EQ(out[0].dims(), (Dims{1, 1, 4, 6}));
  }
}

// ---------------------------------------------------------------------------------------------
// GridSample, naive: PyTorch-style sampling of one (N, C) plane at one grid point.

struct NaiveGrid {
  std::string mode, padding;
  bool align_corners;
};

double unnormalize(double g, int64_t len, bool ac) {
  return ac ? (g + 1) / 2 * static_cast<double>(len - 1) : ((g + 1) * static_cast<double>(len) - 1) / 2;
}

// Reflection by repeated folding (the slow, obvious way).
double fold(double v, double lo, double hi) {
  if (hi <= lo) return lo;
  for (int i = 0; i < 100000 && (v < lo || v > hi); ++i) v = v < lo ? 2 * lo - v : 2 * hi - v;
  return v;
}

double naive_grid_point(const NaiveGrid& p, const std::function<double(const std::vector<int64_t>&)>& at,
                        const Dims& sp, const std::vector<double>& g) {
  const size_t r = sp.size();
  std::vector<double> c(r);
  for (size_t d = 0; d < r; ++d) {
    const double lo = p.align_corners ? 0 : -0.5;
    const double hi = p.align_corners ? static_cast<double>(sp[d] - 1) : static_cast<double>(sp[d]) - 0.5;
    c[d] = unnormalize(g[r - 1 - d], sp[d], p.align_corners);
    if (p.mode == "nearest") c[d] = std::nearbyint(c[d]);
    if (c[d] < lo || c[d] > hi) {
      if (p.padding == "border") c[d] = std::clamp(c[d], 0.0, static_cast<double>(sp[d] - 1));
      if (p.padding == "reflection") c[d] = fold(c[d], lo, hi);
    }
  }
  // Value at integer indices with the padding rule.
  auto pixel = [&](std::vector<int64_t> idx) -> double {
    for (size_t d = 0; d < r; ++d) {
      if (idx[d] >= 0 && idx[d] < sp[d]) continue;
      if (p.padding == "zeros") return 0;
      if (p.padding == "border") idx[d] = std::clamp<int64_t>(idx[d], 0, sp[d] - 1);
      if (p.padding == "reflection") {
        const double lo = p.align_corners ? 0 : -0.5;
        const double hi = p.align_corners ? static_cast<double>(sp[d] - 1) : static_cast<double>(sp[d]) - 0.5;
        idx[d] = std::clamp<int64_t>(static_cast<int64_t>(fold(static_cast<double>(idx[d]), lo, hi)), 0, sp[d] - 1);
      }
    }
    return at(idx);
  };
  // Separable weights per axis, then the sum over every corner combination.
  std::vector<std::vector<std::pair<int64_t, double>>> w(r);
  for (size_t d = 0; d < r; ++d) {
    const double f = std::floor(c[d]), t = c[d] - f;
    const auto i = static_cast<int64_t>(f);
    if (p.mode == "nearest")
      w[d] = {{static_cast<int64_t>(c[d]), 1.0}};
    else if (p.mode == "linear")
      w[d] = {{i, 1 - t}, {i + 1, t}};
    else
      w[d] = {
          {i - 1, keys(t + 1, -0.75)}, {i, keys(t, -0.75)}, {i + 1, keys(1 - t, -0.75)}, {i + 2, keys(2 - t, -0.75)}};
  }
  double sum = 0;
  std::vector<size_t> k(r, 0);
  for (;;) {
    std::vector<int64_t> idx(r);
    double wt = 1;
    for (size_t d = 0; d < r; ++d) {
      idx[d] = w[d][k[d]].first;
      wt *= w[d][k[d]].second;
    }
    sum += wt * pixel(idx);
    size_t j = r;
    while (j > 0 && ++k[j - 1] == w[j - 1].size()) k[--j] = 0;
    if (j == 0) break;
  }
  return sum;
}

std::vector<double> naive_grid_sample(const NaiveGrid& p, const Tensor& x, const Tensor& grid) {
  const Dims sp(x.dims().begin() + 2, x.dims().end());
  const Dims gsp(grid.dims().begin() + 1, grid.dims().end() - 1);
  const int64_t points = core::num_elements(gsp), plane = core::num_elements(sp);
  const auto r = static_cast<int64_t>(sp.size());
  std::vector<double> out;
  for (int64_t n = 0; n < x.dim(0); ++n)
    for (int64_t c = 0; c < x.dim(1); ++c)
      for (int64_t pt = 0; pt < points; ++pt) {
        std::vector<double> g;
        for (int64_t k = 0; k < r; ++k) g.push_back(grid.element_as_double((n * points + pt) * r + k));
        auto at = [&](const std::vector<int64_t>& idx) {
          int64_t off = 0;
          for (size_t d = 0; d < idx.size(); ++d) off = off * sp[d] + idx[d];
          return x.element_as_double((n * x.dim(1) + c) * plane + off);
        };
        out.push_back(naive_grid_point(p, at, sp, g));
      }
  return out;
}

TEST(GridSampleKernel, EveryModePaddingAndAlignmentMatchesNaive) {
  struct Case {
    Dims x, grid;
  };
  const Case cases[] = {{{1, 1, 3, 2}, {1, 2, 4, 2}},
                        {{2, 3, 4, 5}, {2, 3, 7, 2}},
                        {{1, 2, 1, 6}, {1, 5, 1, 2}},
                        {{1, 2, 3, 4, 2}, {1, 2, 3, 2, 3}},
                        {{2, 1, 5}, {2, 4, 1}}};
  uint32_t seed = 21;
  int checked = 0;
  for (const Case& cs : cases) {
    Tensor x = random_f32(cs.x, seed++);
    Tensor grid = random_f32(cs.grid, seed++, -1.6f, 1.6f);
    grid.data<float>()[0] = 7.3f;  // far outside: several reflections
    grid.data<float>()[1] = -4.9f;
    for (const char* mode : {"linear", "nearest", "cubic"})
      for (const char* padding : {"zeros", "border", "reflection"})
        for (int64_t ac : {0, 1}) {
          NaiveGrid p{mode, padding, ac != 0};
          KESTREL_EVAL1(
              y, "GridSample", {x, grid},
              Attrs{{"mode", Attribute(mode)}, {"padding_mode", Attribute(padding)}, {"align_corners", Attribute(ac)}});
          Dims want_dims{cs.x[0], cs.x[1]};
          want_dims.insert(want_dims.end(), cs.grid.begin() + 1, cs.grid.end() - 1);
          ASSERT_EQ(y.dims(), want_dims);
          EXPECT_TRUE(near_all(y, naive_grid_sample(p, x, grid), 1e-5))
              << core::dims_to_string(cs.x) << " " << mode << " " << padding << " ac " << ac;
          ++checked;
        }
  }
  EXPECT_EQ(checked, 5 * 18);
}

// The opset-20 examples of the ONNX operator documentation (PyTorch outputs), 2-D and volumetric.
TEST(GridSampleKernel, OnnxDocumentationExamples) {
  const Tensor x = make<float>({1, 1, 3, 2}, {0, 1, 2, 3, 4, 5});
  const Tensor grid = make<float>(
      {1, 2, 4, 2}, {-1, -0.8f, -0.6f, -0.5f, -0.1f, -0.2f, 0.7f, 0, 0, 0.4f, 0.2f, -0.2f, -0.3f, 0.5f, -1, 1});
  struct Want {
    const char* mode;
    int64_t ac;
    std::vector<double> y;
  };
  const Want want2d[] = {
      {"nearest", 0, {0, 0, 2, 3, 4, 3, 4, 4}},
      {"nearest", 1, {0, 0, 2, 3, 2, 3, 4, 4}},
      {"linear", 0, {0, 0.45, 1.8, 2.4, 3.7, 2.1, 3.7, 1}},
      {"linear", 1, {0.4, 1.2, 2.05, 2.85, 3.3, 2.2, 3.35, 4}},
      {"cubic", 0, {-0.173250, 0.284265, 1.923106, 2.568000, 5.170375, 2.284414, 4.744844, 1.046875}},
      {"cubic", 1, {0.304001, 1.128750, 2.266270, 3.144844, 4.531500, 2.455360, 4.599819, 4.000000}},
  };
  for (const Want& w : want2d) {
    KESTREL_EVAL1(y, "GridSample", {x, grid}, Attrs{{"mode", Attribute(w.mode)}, {"align_corners", Attribute(w.ac)}});
    EXPECT_TRUE(near_all(y, w.y, 1e-4)) << w.mode << " " << w.ac;
  }
  const Tensor xv = make<float>({1, 1, 3, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  const Tensor gv =
      make<float>({1, 2, 4, 2, 3}, {-1,    -1,    -1,    -1,   -0.5f, 0.3f, -0.5f, -0.5f, -0.5f, 1,    -0.6f, -1,
                                    -0.2f, -0.2f, -0.2f, 0.4f, 0.2f,  0.6f, 0,     0,     0,     -1,   0,     0,
                                    0,     0,     0,     -1,   1,     0,    -0.2f, -0.2f, -0.2f, 1,    0.4f,  -0.2f,
                                    0.5f,  0.5f,  0.5f,  -1,   -0.8f, 0.8f, 1,     1,     1,     0.4f, 0.6f,  -0.3f});
  const Want want3d[] = {
      {"nearest", 0, {1, 5, 1, 0, 5, 12, 5, 5, 5, 0, 5, 0, 12, 9, 0, 8}},
      {"nearest", 1, {1, 5, 1, 2, 5, 12, 5, 5, 5, 7, 5, 8, 12, 9, 12, 8}},
      {"linear", 0, {0.125, 3.4, 2, 0.45, 4.7, 10.9, 6.5, 3, 6.5, 1.75, 4.7, 3.3, 11, 2.52, 1.5, 5.49}},
      {"linear", 1, {1, 6.7, 3.75, 2.4, 5.4, 9.3, 6.5, 6, 6.5, 7, 5.4, 6.6, 9.25, 8.4, 12, 6.1}},
  };
  for (const Want& w : want3d) {
    KESTREL_EVAL1(y, "GridSample", {xv, gv}, Attrs{{"mode", Attribute(w.mode)}, {"align_corners", Attribute(w.ac)}});
    ASSERT_EQ(y.dims(), (Dims{1, 1, 2, 4, 2}));
    EXPECT_TRUE(near_all(y, w.y, 1e-4)) << "volumetric " << w.mode << " " << w.ac;
  }
}

TEST(GridSampleKernel, HandComputedAndBadInput) {
  // With align_corners, grid points -1 and 1 are the corner pixels' centres: an identity grid.
  Tensor x = make<float>({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor grid = make<float>({1, 2, 3, 2}, {-1, -1, 0, -1, 1, -1, -1, 1, 0, 1, 1, 1});
  KESTREL_EVAL1(y, "GridSample", {x, grid}, Attrs{{"align_corners", Attribute(int64_t{1})}});
  EXPECT_EQ(values(y), values(x));
  // The opset-16 names of the modes still work.
  KESTREL_EVAL1(b, "GridSample", {x, grid},
                Attrs{{"align_corners", Attribute(int64_t{1})}, {"mode", Attribute("bicubic")}});
  EXPECT_TRUE(near_all(b, {1, 2, 3, 4, 5, 6}, 1e-6));
  // Integer X: linear values are rounded.
  KESTREL_EVAL1(i, "GridSample", {make<int32_t>({1, 1, 1, 2}, {0, 3}), make<float>({1, 1, 1, 2}, {0, 0})},
                Attrs{{"align_corners", Attribute(int64_t{1})}});
  EXPECT_EQ(i.data<int32_t>()[0], 2);  // 1.5 rounds away from zero
  EXPECT_TRUE(fails_with(eval_op("GridSample", {x, make<float>({1, 2, 3, 3}, std::vector<float>(18, 0))}).status(),
                         "coordinates"));
  EXPECT_TRUE(
      fails_with(eval_op("GridSample", {x, make<float>({1, 6, 2}, std::vector<float>(12, 0))}).status(), "rank"));
  EXPECT_TRUE(fails_with(eval_op("GridSample", {x, make<int64_t>({1, 2, 3, 2}, std::vector<int64_t>(12, 0))}).status(),
                         "float"));
  EXPECT_TRUE(fails_with(eval_op("GridSample", {x, grid}, Attrs{{"padding_mode", Attribute("wrap")}}).status(),
                         "unsupported value"));
}

}  // namespace
}  // namespace kestrel
