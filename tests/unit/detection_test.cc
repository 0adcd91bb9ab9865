// Tests of RoiAlign, MaxRoiPool, MaxUnpool and NonMaxSuppression: naive re-computations written
// here (per-sample bilinear RoiAlign, greedy NMS by repeated arg-max, MaxPool-then-unpool round
// trips), hand-computed values, exact results on linear images, dynamic output shapes, bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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
using testing::random_f32;
using testing::run_op;
using testing::tensors_equal;
using testing::values;

// ---------------------------------------------------------------------------------------------
// RoiAlign

// Bilinear value of one sample with ONNX Runtime's edge rules, plus the four weighted corners
// (for max mode).
std::vector<double> naive_sample(const float* plane, int64_t h, int64_t w, double y, double x) {
  if (y < -1 || y > static_cast<double>(h) || x < -1 || x > static_cast<double>(w)) return {0, 0, 0, 0};
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x);
  int64_t y1 = y0 + 1, x1 = x0 + 1;
  if (y0 >= h - 1) y = static_cast<double>(y1 = y0 = h - 1);
  if (x0 >= w - 1) x = static_cast<double>(x1 = x0 = w - 1);
  const double ly = y - static_cast<double>(y0), lx = x - static_cast<double>(x0);
  auto at = [&](int64_t yy, int64_t xx) { return static_cast<double>(plane[yy * w + xx]); };
  return {(1 - ly) * (1 - lx) * at(y0, x0), (1 - ly) * lx * at(y0, x1), ly * (1 - lx) * at(y1, x0),
          ly * lx * at(y1, x1)};
}

std::vector<double> naive_roi_align(const Tensor& x, const std::vector<float>& rois, const std::vector<int64_t>& bidx,
                                    bool max_mode, bool half_pixel, int64_t oh, int64_t ow, int64_t sr, double scale) {
  const int64_t c_n = x.dim(1), h = x.dim(2), w = x.dim(3);
  std::vector<double> out;
  for (size_t r = 0; r < bidx.size(); ++r) {
    const double off = half_pixel ? 0.5 : 0;
    const double x1 = rois[r * 4] * scale - off, y1 = rois[r * 4 + 1] * scale - off;
    double rw = rois[r * 4 + 2] * scale - off - x1, rh = rois[r * 4 + 3] * scale - off - y1;
    if (!half_pixel) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
    const int64_t gh = sr > 0 ? sr : static_cast<int64_t>(std::max(0.0, std::ceil(rh / static_cast<double>(oh))));
    const int64_t gw = sr > 0 ? sr : static_cast<int64_t>(std::max(0.0, std::ceil(rw / static_cast<double>(ow))));
    for (int64_t c = 0; c < c_n; ++c) {
      const float* plane = x.data<float>() + (bidx[r] * c_n + c) * h * w;
      for (int64_t ph = 0; ph < oh; ++ph)
        for (int64_t pw = 0; pw < ow; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              const double yy =
                  y1 + (static_cast<double>(ph) + (static_cast<double>(iy) + 0.5) / static_cast<double>(gh)) * rh /
                           static_cast<double>(oh);
              const double xx =
                  x1 + (static_cast<double>(pw) + (static_cast<double>(ix) + 0.5) / static_cast<double>(gw)) * rw /
                           static_cast<double>(ow);
              std::vector<double> v = naive_sample(plane, h, w, yy, xx);
              if (max_mode) {
                const double m = *std::max_element(v.begin(), v.end());
                acc = first ? m : std::max(acc, m);
                first = false;
              } else {
                acc += v[0] + v[1] + v[2] + v[3];
              }
            }
          out.push_back(max_mode ? acc : acc / static_cast<double>(std::max<int64_t>(gh * gw, 1)));
        }
    }
  }
  return out;
}

TEST(RoiAlignKernel, MatchesNaiveForEveryAttribute) {
  Tensor x = random_f32({2, 3, 7, 9}, 1);
  // Inside, partly outside, degenerate, inverted and fully outside rois.
  const std::vector<float> rois = {0, 0, 8, 6, 1.5f, 2.2f, 5.1f, 4.9f, -2, -3, 4,    5,    3,    3,
                                   3, 3, 6, 5, 2,    1,    20,   20,   30, 30, 0.3f, 0.7f, 8.9f, 6.8f};
  const std::vector<int64_t> bidx = {0, 1, 1, 0, 1, 0, 1};
  Tensor rois_t = make<float>({7, 4}, rois);
  int checked = 0;
  for (const char* mode : {"avg", "max"})
    for (const char* ctm : {"half_pixel", "output_half_pixel"})
      for (int64_t sr : {0, 1, 2})
        for (float scale : {1.f, 0.5f})
          for (auto [oh, ow] : {std::pair<int64_t, int64_t>{1, 1}, {3, 2}, {5, 5}}) {
            KESTREL_EVAL1(y, "RoiAlign", {x, rois_t, i64s(bidx)},
                          Attrs{{"mode", Attribute(mode)},
                                {"coordinate_transformation_mode", Attribute(ctm)},
                                {"sampling_ratio", Attribute(sr)},
                                {"spatial_scale", Attribute(scale)},
                                {"output_height", Attribute(oh)},
                                {"output_width", Attribute(ow)}});
            ASSERT_EQ(y.dims(), (Dims{7, 3, oh, ow}));
            auto want = naive_roi_align(x, rois, bidx, std::string(mode) == "max", std::string(ctm) == "half_pixel", oh,
                                        ow, sr, scale);
            EXPECT_TRUE(near_all(y, want, 1e-5))
                << mode << " " << ctm << " sr " << sr << " scale " << scale << " " << oh << "x" << ow;
            ++checked;
          }
  EXPECT_EQ(checked, 72);
}

TEST(RoiAlignKernel, AveragesOfALinearImageAreExact) {
  // Bilinear sampling reproduces a linear image, so each bin's average is the image at the bin
  // centre (rois well inside the map).
  const int64_t h = 9, w = 11;
  std::vector<float> img;
  for (int64_t i = 0; i < h; ++i)
    for (int64_t j = 0; j < w; ++j) img.push_back(static_cast<float>(2 * i + 3 * j + 1));
  Tensor x = make<float>({1, 1, h, w}, img);
  KESTREL_EVAL1(y, "RoiAlign", {x, make<float>({1, 4}, {2, 1.5f, 8, 6.5f}), i64s({0})},
                Attrs{{"output_height", Attribute(int64_t{2})}, {"output_width", Attribute(int64_t{3})}});
  // half_pixel: roi x [1.5, 7.5], y [1, 6]; bins 2 wide, 2.5 high.
  std::vector<double> want;
  for (int ph = 0; ph < 2; ++ph)
    for (int pw = 0; pw < 3; ++pw) want.push_back(2 * (1 + 2.5 * (ph + 0.5)) + 3 * (1.5 + 2 * (pw + 0.5)) + 1);
  EXPECT_TRUE(near_all(y, want, 1e-6));
}

TEST(RoiAlignKernel, BadInput) {
  Tensor x = random_f32({1, 1, 4, 4}, 2);
  Tensor rois = make<float>({1, 4}, {0, 0, 1, 1});
  EXPECT_TRUE(fails_with(eval_op("RoiAlign", {x, rois, i64s({1})}).status(), "batch index 1"));
  EXPECT_TRUE(fails_with(eval_op("RoiAlign", {x, make<float>({1, 5}, {0, 0, 0, 1, 1}), i64s({0})}).status(), "rois"));
  EXPECT_TRUE(fails_with(eval_op("RoiAlign", {x, rois, i64s({0, 0})}).status(), "batch_indices"));
  EXPECT_TRUE(fails_with(eval_op("RoiAlign", {x, rois, i64s({0})}, Attrs{{"mode", Attribute("sum")}}).status(),
                         "unsupported mode"));
  EXPECT_TRUE(fails_with(
      eval_op("RoiAlign", {x, rois, i64s({0})}, Attrs{{"output_height", Attribute(int64_t{0})}}).status(), "positive"));
  EXPECT_TRUE(
      fails_with(eval_op("RoiAlign", {x, make<float>({1, 4}, {0, 0, 1e30f, 1e30f}), i64s({0})}).status(), "too large"));
  EXPECT_TRUE(fails_with(
      eval_op("RoiAlign", {x, rois, i64s({0})}, Attrs{{"sampling_ratio", Attribute(int64_t{100000})}}).status(),
      "too many"));
  // Run time: a batch index only known then.
  auto r = run_op("RoiAlign", {x, rois, i64s({3})}, {false, false, true});
  EXPECT_TRUE(fails_with(r.status(), "batch index 3"));
}

TEST(RoiAlignSession, Opset10DefaultsToOutputHalfPixel) {
  testing::OnnxBuilder b(10);
  b.input("x", 1, {1, 1, 4, 4}).initializer_f32("rois", {1, 4}, {0, 0, 2, 2}).initializer_i64("bi", {1}, {0});
  b.node("RoiAlign", {"x", "rois", "bi"}, {"y"});
  b.output("y");
  std::string bytes = b.bytes();
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  Tensor x = random_f32({1, 1, 4, 4}, 9);
  std::vector<Tensor> out;
  ASSERT_TRUE((*s)->run({{"x", x}}, out).is_ok());
  EXPECT_TRUE(near_all(out[0], naive_roi_align(x, {0, 0, 2, 2}, {0}, false, false, 1, 1, 0, 1), 1e-6));
}

// ---------------------------------------------------------------------------------------------
// MaxRoiPool

TEST(MaxRoiPoolKernel, HandComputed) {
  Tensor x = testing::iota<float>({1, 2, 4, 4});
  // Whole map in 2x2 bins: the max of each 2x2 block.
  KESTREL_EVAL1(a, "MaxRoiPool", {x, make<float>({1, 5}, {0, 0, 0, 3, 3})},
                Attrs{{"pooled_shape", Attribute(std::vector<int64_t>{2, 2})}});
  EXPECT_EQ(values(a), (std::vector<float>{5, 7, 13, 15, 21, 23, 29, 31}));
  // spatial_scale 0.5: corners round(0.5) = 1 and round(3) = 3, so a 3x3 roi in bins of 1.5:
  // rows [1, 3) and [2, 4), the same for columns.
  KESTREL_EVAL1(b, "MaxRoiPool", {x, make<float>({2, 5}, {0, 1, 1, 6, 6, 0, 40, 40, 50, 50})},
                Attrs{{"pooled_shape", Attribute(std::vector<int64_t>{2, 2})}, {"spatial_scale", Attribute(0.5f)}});
  EXPECT_EQ(values(b), (std::vector<float>{10, 11, 14, 15, 26, 27, 30, 31,
                                           // a roi outside the map has only empty bins: 0
                                           0, 0, 0, 0, 0, 0, 0, 0}));
  // More bins than roi rows: bins overlap (floor / ceil of multiples of 2/3).
  KESTREL_EVAL1(c, "MaxRoiPool", {testing::iota<float>({1, 1, 2, 2}), make<float>({1, 5}, {0, 1, 0, 1, 1})},
                Attrs{{"pooled_shape", Attribute(std::vector<int64_t>{3, 1})}});
  EXPECT_EQ(values(c), (std::vector<float>{1, 3, 3}));  // rows [0, 1), [0, 2), [1, 2) of column 1
  EXPECT_TRUE(fails_with(eval_op("MaxRoiPool", {x, make<float>({1, 5}, {1, 0, 0, 1, 1})},
                                 Attrs{{"pooled_shape", Attribute(std::vector<int64_t>{1, 1})}})
                             .status(),
                         "batch index"));
  EXPECT_TRUE(fails_with(eval_op("MaxRoiPool", {x, make<float>({1, 4}, {0, 0, 1, 1})},
                                 Attrs{{"pooled_shape", Attribute(std::vector<int64_t>{1, 1})}})
                             .status(),
                         "rois"));
  EXPECT_TRUE(fails_with(eval_op("MaxRoiPool", {x, make<float>({1, 5}, {0, 0, 0, 1, 1})}).status(), "pooled_shape"));
}

// ---------------------------------------------------------------------------------------------
// MaxUnpool

// MaxPool (no padding) with flat indices over the whole input, written out for the round trip.
std::pair<Tensor, Tensor> naive_max_pool(const Tensor& x, const Dims& kernel, const Dims& strides) {
  const size_t k = kernel.size();
  Dims out{x.dim(0), x.dim(1)};
  for (size_t i = 0; i < k; ++i) out.push_back((x.dim(static_cast<int64_t>(i) + 2) - kernel[i]) / strides[i] + 1);
  Tensor v = Tensor::allocate(DType::kF32, out).value(), idx = Tensor::allocate(DType::kI64, out).value();
  const Dims xs = core::row_major_strides(x.dims());
  for (int64_t o = 0; o < v.num_elements(); ++o) {
    Dims oi(out.size());
    int64_t rest = o;
    for (size_t d = out.size(); d-- > 0;) oi[d] = rest % out[d], rest /= out[d];
    float best = -INFINITY;
    int64_t best_i = -1;
    for (int64_t w = 0; w < core::num_elements(kernel); ++w) {
      int64_t off = oi[0] * xs[0] + oi[1] * xs[1], wr = w;
      for (size_t d = k; d-- > 0;) {
        off += (oi[d + 2] * strides[d] + wr % kernel[d]) * xs[d + 2];
        wr /= kernel[d];
      }
      if (x.data<float>()[off] > best) best = x.data<float>()[off], best_i = off;
    }
    v.data<float>()[o] = best;
    idx.data<int64_t>()[o] = best_i;
  }
  return {v, idx};
}

TEST(MaxUnpoolKernel, RoundTripsMaxPoolIn1D2DAnd3D) {
  struct Case {
    Dims x, kernel, strides;
  };
  const Case cases[] = {{{2, 3, 8}, {2}, {2}},
                        {{1, 2, 6, 4}, {2, 2}, {2, 2}},
                        {{1, 1, 4, 6, 4}, {2, 3, 2}, {2, 3, 2}},
                        {{1, 1, 7, 5}, {3, 1}, {3, 1}}};
  uint32_t seed = 3;
  for (const Case& c : cases) {
    Tensor x = random_f32(c.x, seed++, 0.1f, 2.f);  // positive: the zeros of the unpooled map never win
    auto [pooled, idx] = naive_max_pool(x, c.kernel, c.strides);
    KESTREL_EVAL1(y, "MaxUnpool", {pooled, idx},
                  Attrs{{"kernel_shape", Attribute(c.kernel)}, {"strides", Attribute(c.strides)}});
    // Default shape: (in - 1) * stride + kernel, which here is x's shape up to the pooled-away tail.
    Dims want_dims{c.x[0], c.x[1]};
    for (size_t i = 0; i < c.kernel.size(); ++i)
      want_dims.push_back((pooled.dim(static_cast<int64_t>(i) + 2) - 1) * c.strides[i] + c.kernel[i]);
    ASSERT_EQ(y.dims(), want_dims);
    // Every maximum back in place, zeros elsewhere; pooling again gives the pooled values.
    int64_t nonzero = 0;
    for (int64_t i = 0; i < y.num_elements(); ++i) nonzero += y.data<float>()[i] != 0;
    EXPECT_EQ(nonzero, pooled.num_elements());
    if (y.dims() == x.dims()) {
      auto [again, unused] = naive_max_pool(y, c.kernel, c.strides);
      EXPECT_EQ(values(again), values(pooled));
    }
  }
}

TEST(MaxUnpoolKernel, OutputShapeAndBadInput) {
  Tensor v = make<float>({1, 1, 2, 2}, {5, 6, 7, 8});
  Tensor idx = make<int64_t>({1, 1, 2, 2}, {5, 7, 13, 15});
  const Attrs attrs{{"kernel_shape", Attribute(std::vector<int64_t>{2, 2})},
                    {"strides", Attribute(std::vector<int64_t>{2, 2})}};
  // Indices refer to the 4x4 unpooled shape; output_shape 5x5 pads at the end (ONNX reference).
  for (bool runtime : {false, true}) {
    auto r = runtime ? run_op("MaxUnpool", {v, idx, i64s({1, 1, 5, 5})}, {true, true, true}, attrs)
                     : eval_op("MaxUnpool", {v, idx, i64s({1, 1, 5, 5})}, attrs);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(values((*r)[0]),
              (std::vector<float>{0, 0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 0, 0, 7, 0, 8, 0, 0, 0, 0, 0, 0}));
  }
  KESTREL_EVAL1(d, "MaxUnpool", {v, idx}, attrs);
  EXPECT_EQ(values(d), (std::vector<float>{0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 7, 0, 8}));
  // pads shrink the default shape.
  KESTREL_EVAL1(p, "MaxUnpool", {v, make<int64_t>({1, 1, 2, 2}, {0, 1, 2, 3})},
                Attrs{{"kernel_shape", Attribute(std::vector<int64_t>{2, 2})},
                      {"strides", Attribute(std::vector<int64_t>{2, 2})},
                      {"pads", Attribute(std::vector<int64_t>{1, 1, 0, 0})}});
  EXPECT_EQ(p.dims(), (Dims{1, 1, 3, 3}));
  EXPECT_EQ(values(p), (std::vector<float>{5, 6, 7, 8, 0, 0, 0, 0, 0}));
  EXPECT_TRUE(
      fails_with(eval_op("MaxUnpool", {v, make<int64_t>({1, 1, 2, 2}, {0, 1, 2, 16})}, attrs).status(), "outside"));
  EXPECT_TRUE(
      fails_with(eval_op("MaxUnpool", {v, make<int64_t>({1, 1, 2, 2}, {0, 1, 2, -1})}, attrs).status(), "outside"));
  EXPECT_TRUE(fails_with(eval_op("MaxUnpool", {v, idx, i64s({1, 1, 3, 5})}, attrs).status(), "smaller"));
  EXPECT_TRUE(fails_with(eval_op("MaxUnpool", {v, idx, i64s({1, 5, 5})}, attrs).status(), "expected 4"));
  EXPECT_TRUE(fails_with(eval_op("MaxUnpool", {v, make<int64_t>({1, 4}, {0, 1, 2, 3})}, attrs).status(), "shape of X"));
  EXPECT_TRUE(fails_with(eval_op("MaxUnpool", {v, idx}).status(), "kernel_shape"));
  EXPECT_TRUE(fails_with(eval_op("MaxUnpool", {v, idx},
                                 Attrs{{"kernel_shape", Attribute(std::vector<int64_t>{2, 2})},
                                       {"pads", Attribute(std::vector<int64_t>{5, 5, 5, 5})}})
                             .status(),
                         "negative"));
}

// ---------------------------------------------------------------------------------------------
// NonMaxSuppression

double naive_iou(const std::vector<float>& a, const std::vector<float>& b, bool center) {
  auto corners = [&](const std::vector<float>& v) {
    if (center) return std::vector<double>{v[0] - v[2] / 2.0, v[1] - v[3] / 2.0, v[0] + v[2] / 2.0, v[1] + v[3] / 2.0};
    return std::vector<double>{std::min(v[1], v[3]), std::min(v[0], v[2]), std::max(v[1], v[3]), std::max(v[0], v[2])};
  };
  auto p = corners(a), q = corners(b);
  const double iw = std::min(p[2], q[2]) - std::max(p[0], q[0]), ih = std::min(p[3], q[3]) - std::max(p[1], q[1]);
  const double ap = (p[2] - p[0]) * (p[3] - p[1]), aq = (q[2] - q[0]) * (q[3] - q[1]);
  if (iw <= 0 || ih <= 0 || ap <= 0 || aq <= 0) return 0;
  return iw * ih / (ap + aq - iw * ih);
}

// Greedy by repeated arg-max over the remaining candidates.
std::vector<int64_t> naive_nms(const Tensor& boxes, const Tensor& scores, int64_t max_out, float iou, bool has_st,
                               float st, bool center) {
  std::vector<int64_t> out;
  const int64_t nb = boxes.dim(0), nbox = boxes.dim(1), nc = scores.dim(1);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t c = 0; c < nc; ++c) {
      std::vector<bool> alive(static_cast<size_t>(nbox));
      for (int64_t i = 0; i < nbox; ++i)
        alive[static_cast<size_t>(i)] = !has_st || scores.data<float>()[(b * nc + c) * nbox + i] > st;
      int64_t taken = 0;
      while (taken < max_out) {
        int64_t best = -1;
        for (int64_t i = 0; i < nbox; ++i)
          if (alive[static_cast<size_t>(i)] && (best < 0 || scores.data<float>()[(b * nc + c) * nbox + i] >
                                                                scores.data<float>()[(b * nc + c) * nbox + best]))
            best = i;
        if (best < 0) break;
        out.insert(out.end(), {b, c, best});
        ++taken;
        auto box = [&](int64_t i) {
          const float* p = boxes.data<float>() + (b * nbox + i) * 4;
          return std::vector<float>(p, p + 4);
        };
        alive[static_cast<size_t>(best)] = false;
        for (int64_t i = 0; i < nbox; ++i)
          if (alive[static_cast<size_t>(i)] && naive_iou(box(best), box(i), center) > iou)
            alive[static_cast<size_t>(i)] = false;
      }
    }
  return out;
}

TEST(NonMaxSuppressionKernel, MatchesNaiveGreedySelection) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> pos(0, 10), size(0.5f, 4), score(0, 1);
  int checked = 0;
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t nb = 1 + trial % 2, nc = 1 + trial % 3, nbox = 3 + trial * 3;
    const bool center = trial % 4 == 1;
    std::vector<float> bv, sv;
    for (int64_t i = 0; i < nb * nbox; ++i) {
      const float a = pos(rng), b = pos(rng), w = size(rng), h = size(rng);
      if (center)
        bv.insert(bv.end(), {a, b, w, h});
      else if (i % 2)
        bv.insert(bv.end(), {a, b, a + h, b + w});
      else
        bv.insert(bv.end(), {a + h, b + w, a, b});  // flipped corners
    }
    for (int64_t i = 0; i < nb * nc * nbox; ++i) sv.push_back(std::round(score(rng) * 20) / 20);  // ties
    Tensor boxes = make<float>({nb, nbox, 4}, bv), scores = make<float>({nb, nc, nbox}, sv);
    for (int64_t max_out : {0, 1, 3, 100})
      for (float iou : {0.f, 0.3f, 0.7f})
        for (bool has_st : {false, true}) {
          std::vector<Tensor> in = {boxes, scores, make<int64_t>({1}, {max_out}), make<float>({1}, {iou})};
          if (has_st) in.push_back(make<float>({1}, {0.4f}));
          auto r = eval_op("NonMaxSuppression", in, Attrs{{"center_point_box", Attribute(int64_t{center})}});
          ASSERT_TRUE(r.is_ok()) << r.status().to_string();
          std::vector<int64_t> want = naive_nms(boxes, scores, max_out, iou, has_st, 0.4f, center);
          const Tensor& y = (*r)[0];
          ASSERT_EQ(y.dims(), (Dims{static_cast<int64_t>(want.size() / 3), 3}));
          EXPECT_EQ(std::vector<int64_t>(y.data<int64_t>(), y.data<int64_t>() + y.num_elements()), want)
              << "trial " << trial << " max " << max_out << " iou " << iou << " st " << has_st;
          ++checked;
        }
  }
  EXPECT_EQ(checked, 12 * 24);
}

TEST(NonMaxSuppressionKernel, DefaultsDynamicShapeAndBadInput) {
  Tensor boxes = make<float>({1, 3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 5, 1, 6});
  Tensor scores = make<float>({1, 1, 3}, {0.9f, 0.8f, 0.7f});
  // No max_output_boxes_per_class: nothing is selected.
  KESTREL_EVAL1(none, "NonMaxSuppression", {boxes, scores});
  EXPECT_EQ(none.dims(), (Dims{0, 3}));
  // iou_threshold defaults to 0: any overlap suppresses.
  KESTREL_EVAL1(some, "NonMaxSuppression", {boxes, scores, make<int64_t>({1}, {5})});
  EXPECT_TRUE(tensors_equal(some, make<int64_t>({2, 3}, {0, 0, 0, 0, 0, 2})));
  // IoU exactly at the threshold does not suppress (strictly greater does).
  Tensor half = make<float>({1, 2, 4}, {0, 0, 1, 1, 0, 0, 1, 2});  // IoU 1/2
  for (float thr : {0.5f, 0.49f}) {
    KESTREL_EVAL1(t, "NonMaxSuppression",
                  {half, make<float>({1, 1, 2}, {0.9f, 0.8f}), make<int64_t>({1}, {2}), make<float>({1}, {thr})});
    EXPECT_EQ(t.dim(0), thr == 0.5f ? 2 : 1) << thr;
  }
  // Through a session with every input fed at run time (the output is allocated by the kernel).
  for (int64_t k : {1, 3}) {
    auto r = run_op("NonMaxSuppression", {boxes, scores, make<int64_t>({1}, {k}), make<float>({1}, {0.5f})},
                    {true, true, true, true});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ((*r)[0].dims(), (Dims{std::min<int64_t>(k, 2), 3}));
  }
  EXPECT_TRUE(fails_with(
      eval_op("NonMaxSuppression", {boxes, scores, make<int64_t>({1}, {1}), make<float>({1}, {1.5f})}).status(),
      "iou_threshold"));
  EXPECT_TRUE(fails_with(eval_op("NonMaxSuppression", {boxes, make<float>({1, 1, 2}, {1, 2})}).status(), "scores"));
  EXPECT_TRUE(fails_with(
      eval_op("NonMaxSuppression", {make<float>({1, 3, 3}, std::vector<float>(9, 0)), scores}).status(), "boxes"));
  EXPECT_TRUE(
      fails_with(eval_op("NonMaxSuppression", {boxes, scores, make<int64_t>({2}, {1, 2})}).status(), "one value"));
}

}  // namespace
}  // namespace kestrel
