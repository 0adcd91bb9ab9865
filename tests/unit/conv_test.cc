// Tests of Conv and ConvTranspose: window geometry, hand-checked cases, a sweep of the reference
// kernels against naive loops written here (explicit zero padding / full scatter then crop), the
// attribute handling of the bindings through Session, and load-time shape errors.
#include "kernels/reference/conv.h"

#include <gtest/gtest.h>

#include <functional>

#include "common/nn_test_util.h"
#include "ir/ops/window_geometry.h"

namespace kestrel {
namespace {

using core::Dims;
using core::DType;
using core::Tensor;
using testing::OnnxBuilder;

void for_each_index(const Dims& dims, const std::function<void(const std::vector<int64_t>&)>& f) {
  std::vector<int64_t> idx(dims.size(), 0);
  int64_t total = core::num_elements(dims);
  for (int64_t t = 0; t < total; ++t) {
    f(idx);
    for (size_t i = dims.size(); i-- > 0;) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
}

struct Window {
  Dims strides, dilations, pads_begin, pads_end;
  int64_t group = 1;
};

// Naive convolution: copy x into an explicitly zero-padded buffer, then slide the window.
std::vector<double> naive_conv(const Tensor& x, const Tensor& w, const Tensor* b, const Window& p, Dims* out_dims) {
  const size_t s = static_cast<size_t>(x.rank() - 2);
  const int64_t n = x.dim(0), c = x.dim(1), m = w.dim(0), cg = w.dim(1);
  Dims in(x.dims().begin() + 2, x.dims().end()), k(w.dims().begin() + 2, w.dims().end()), padded(s), out(s);
  for (size_t i = 0; i < s; ++i) {
    padded[i] = in[i] + p.pads_begin[i] + p.pads_end[i];
    out[i] = (padded[i] - ((k[i] - 1) * p.dilations[i] + 1)) / p.strides[i] + 1;
  }
  std::vector<double> xv = testing::values(x), wv = testing::values(w),
                      bv = b ? testing::values(*b) : std::vector<double>();
  const int64_t psize = core::num_elements(padded), isize = core::num_elements(in), osize = core::num_elements(out),
                ksize = core::num_elements(k);
  std::vector<double> xp(static_cast<size_t>(n * c * psize), 0.0);
  for (int64_t plane = 0; plane < n * c; ++plane)
    for_each_index(in, [&](const std::vector<int64_t>& idx) {
      std::vector<int64_t> q(s);
      for (size_t i = 0; i < s; ++i) q[i] = idx[i] + p.pads_begin[i];
      xp[static_cast<size_t>(plane * psize + testing::flat_index(q, padded))] =
          xv[static_cast<size_t>(plane * isize + testing::flat_index(idx, in))];
    });
  std::vector<double> y(static_cast<size_t>(n * m * osize));
  const int64_t mg = m / p.group;
  for (int64_t ni = 0; ni < n; ++ni)
    for (int64_t mi = 0; mi < m; ++mi) {
      const int64_t g = mi / mg;
      for_each_index(out, [&](const std::vector<int64_t>& o) {
        double acc = b ? bv[static_cast<size_t>(mi)] : 0.0;
        for (int64_t ci = 0; ci < cg; ++ci)
          for_each_index(k, [&](const std::vector<int64_t>& kk) {
            std::vector<int64_t> q(s);
            for (size_t i = 0; i < s; ++i) q[i] = o[i] * p.strides[i] + kk[i] * p.dilations[i];
            acc += xp[static_cast<size_t>((ni * c + g * cg + ci) * psize + testing::flat_index(q, padded))] *
                   wv[static_cast<size_t>((mi * cg + ci) * ksize + testing::flat_index(kk, k))];
          });
        y[static_cast<size_t>((ni * m + mi) * osize + testing::flat_index(o, out))] = acc;
      });
    }
  *out_dims = {n, m};
  out_dims->insert(out_dims->end(), out.begin(), out.end());
  return y;
}

// Naive transposed convolution: scatter into the full (uncropped) output, then crop the pads.
std::vector<double> naive_conv_transpose(const Tensor& x, const Tensor& w, const Tensor* b, const Window& p,
                                         const Dims& out_spatial) {
  const size_t s = static_cast<size_t>(x.rank() - 2);
  const int64_t n = x.dim(0), c = x.dim(1), mg = w.dim(1), m = mg * p.group, cg = c / p.group;
  Dims in(x.dims().begin() + 2, x.dims().end()), k(w.dims().begin() + 2, w.dims().end()), full(s);
  for (size_t i = 0; i < s; ++i)
    full[i] = std::max<int64_t>((in[i] - 1) * p.strides[i] + (k[i] - 1) * p.dilations[i] + 1,
                                out_spatial[i] + p.pads_begin[i]);
  std::vector<double> xv = testing::values(x), wv = testing::values(w);
  const int64_t fsize = core::num_elements(full), isize = core::num_elements(in), ksize = core::num_elements(k),
                osize = core::num_elements(out_spatial);
  std::vector<double> yf(static_cast<size_t>(n * m * fsize), 0.0);
  for (int64_t ni = 0; ni < n; ++ni)
    for (int64_t ci = 0; ci < c; ++ci) {
      const int64_t g = ci / cg;
      for_each_index(in, [&](const std::vector<int64_t>& ii) {
        double xval = xv[static_cast<size_t>((ni * c + ci) * isize + testing::flat_index(ii, in))];
        for (int64_t mi = 0; mi < mg; ++mi)
          for_each_index(k, [&](const std::vector<int64_t>& kk) {
            std::vector<int64_t> q(s);
            for (size_t i = 0; i < s; ++i) q[i] = ii[i] * p.strides[i] + kk[i] * p.dilations[i];
            yf[static_cast<size_t>((ni * m + g * mg + mi) * fsize + testing::flat_index(q, full))] +=
                xval * wv[static_cast<size_t>((ci * mg + mi) * ksize + testing::flat_index(kk, k))];
          });
      });
    }
  std::vector<double> y(static_cast<size_t>(n * m * osize));
  std::vector<double> bv = b ? testing::values(*b) : std::vector<double>();
  for (int64_t plane = 0; plane < n * m; ++plane)
    for_each_index(out_spatial, [&](const std::vector<int64_t>& o) {
      std::vector<int64_t> q(s);
      for (size_t i = 0; i < s; ++i) q[i] = o[i] + p.pads_begin[i];
      y[static_cast<size_t>(plane * osize + testing::flat_index(o, out_spatial))] =
          yf[static_cast<size_t>(plane * fsize + testing::flat_index(q, full))] +
          (b ? bv[static_cast<size_t>(plane % m)] : 0.0);
    });
  return y;
}

ir::WindowAttrs attrs(Dims kernel, Dims strides, Dims dilations, Dims pads, ir::AutoPad ap = ir::AutoPad::kNotSet,
                      bool ceil = false) {
  ir::WindowAttrs a;
  a.kernel = std::move(kernel);
  a.strides = std::move(strides);
  a.dilations = std::move(dilations);
  a.pads = std::move(pads);
  a.auto_pad = ap;
  a.ceil_mode = ceil;
  return a;
}

TEST(WindowGeometry, ExplicitPadsAndFloor) {
  auto a = attrs({3}, {2}, {1}, {1, 0});
  auto w = ir::forward_window(a, 0, 7);
  ASSERT_TRUE(w.is_ok());
  EXPECT_EQ(w->out, 3);  // (7 + 1 - 3) / 2 + 1
  EXPECT_EQ(w->pad_begin, 1);
  EXPECT_EQ(w->pad_end, 0);
  auto d = ir::forward_window(attrs({3}, {1}, {2}, {0, 0}), 0, 7);  // dilated extent 5
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->out, 3);
}

TEST(WindowGeometry, SameUpperAndLowerPutTheOddPadAtOppositeEnds) {
  for (auto ap : {ir::AutoPad::kSameUpper, ir::AutoPad::kSameLower}) {
    auto w = ir::forward_window(attrs({3}, {2}, {1}, {0, 0}, ap), 0, 4);  // out 2, total pad 1
    ASSERT_TRUE(w.is_ok());
    EXPECT_EQ(w->out, 2);
    EXPECT_EQ(w->pad_begin, ap == ir::AutoPad::kSameUpper ? 0 : 1);
    EXPECT_EQ(w->pad_end, ap == ir::AutoPad::kSameUpper ? 1 : 0);
  }
  auto e = ir::forward_window(attrs({3}, {1}, {2}, {0, 0}, ir::AutoPad::kSameUpper), 0, 6);  // total pad 4
  ASSERT_TRUE(e.is_ok());
  EXPECT_EQ(e->out, 6);
  EXPECT_EQ(e->pad_begin, 2);
  EXPECT_EQ(e->pad_end, 2);
  auto big = ir::forward_window(attrs({1}, {3}, {1}, {0, 0}, ir::AutoPad::kSameLower), 0, 7);  // never negative
  ASSERT_TRUE(big.is_ok());
  EXPECT_EQ(big->out, 3);
  EXPECT_EQ(big->pad_begin + big->pad_end, 0);
}

TEST(WindowGeometry, ValidIgnoresPads) {
  auto w = ir::forward_window(attrs({3}, {2}, {1}, {5, 5}, ir::AutoPad::kValid), 0, 8);
  ASSERT_TRUE(w.is_ok());
  EXPECT_EQ(w->out, 3);
  EXPECT_EQ(w->pad_begin, 0);
}

TEST(WindowGeometry, CeilModeLastWindowMustStartInsideInputOrLeftPad) {
  auto f = ir::forward_window(attrs({2}, {2}, {1}, {0, 0}, ir::AutoPad::kNotSet, false), 0, 5);
  auto c = ir::forward_window(attrs({2}, {2}, {1}, {0, 0}, ir::AutoPad::kNotSet, true), 0, 5);
  EXPECT_EQ(f->out, 2);
  EXPECT_EQ(c->out, 3);  // last window starts at 4 < 5
  // Padded extent 4 + 1: ceil gives 3 windows, but the third would start at 4, in the right pad.
  auto drop = ir::forward_window(attrs({2}, {2}, {1}, {0, 1}, ir::AutoPad::kNotSet, true), 0, 4);
  EXPECT_EQ(drop->out, 2);
  // With left padding the same start is inside the input: kept.
  auto keep = ir::forward_window(attrs({2}, {2}, {1}, {1, 1}, ir::AutoPad::kNotSet, true), 0, 4);
  EXPECT_EQ(keep->out, 3);
}

TEST(WindowGeometry, KernelLargerThanPaddedInputFails) {
  auto w = ir::forward_window(attrs({5}, {1}, {1}, {1, 0}), 0, 3);
  ASSERT_FALSE(w.is_ok());
  EXPECT_TRUE(testing::contains(w.status(), "larger than the padded input")) << w.status().to_string();
  EXPECT_FALSE(ir::forward_window(attrs({3}, {1}, {2}, {0, 0}), 0, 4).is_ok());  // dilated extent 5 > 4
}

TEST(WindowGeometry, TransposeSizesAndPads) {
  auto a = attrs({3}, {2}, {1}, {1, 2});
  auto w = ir::transpose_window(a, 0, 3, 1, std::nullopt);
  EXPECT_EQ(w->out, 2 * 2 + 1 + 3 - 3);
  // output_shape: total padding 2*2 + 0 + 3 - 6 = 1; odd one at the end for SAME_UPPER only.
  auto up = ir::transpose_window(attrs({3}, {2}, {1}, {0, 0}, ir::AutoPad::kSameUpper), 0, 3, 0, std::nullopt);
  EXPECT_EQ(up->out, 6);
  EXPECT_EQ(up->pad_begin, 0);
  EXPECT_EQ(up->pad_end, 1);
  auto lo = ir::transpose_window(attrs({3}, {2}, {1}, {0, 0}, ir::AutoPad::kSameLower), 0, 3, 0, std::nullopt);
  EXPECT_EQ(lo->pad_begin, 1);
  auto os = ir::transpose_window(attrs({3}, {2}, {1}, {9, 9}), 0, 3, 0, int64_t{6});
  EXPECT_EQ(os->out, 6);
  EXPECT_EQ(os->pad_begin, 1);  // explicit pads are ignored when output_shape is given
  auto bigger = ir::transpose_window(attrs({3}, {3}, {1}, {0, 0}), 0, 3, 0, int64_t{10});  // full size 9
  EXPECT_EQ(bigger->out, 10);
  EXPECT_EQ(bigger->pad_begin, 0);
  EXPECT_FALSE(ir::transpose_window(attrs({1}, {1}, {1}, {2, 2}), 0, 3, 0, std::nullopt).is_ok());
  // Sizes whose product would overflow are rejected, not wrapped.
  EXPECT_FALSE(
      ir::transpose_window(attrs({1}, {int64_t{1} << 31}, {1}, {0, 0}), 0, int64_t{1} << 40, 0, std::nullopt).is_ok());
}

TEST(ConvReference, HandCheckedPaddedAndUnpadded) {
  std::vector<float> xs(25);
  for (int i = 0; i < 25; ++i) xs[static_cast<size_t>(i)] = static_cast<float>(i);
  Tensor x = Tensor::from_vector<float>(xs, {1, 1, 5, 5});
  Tensor w = Tensor::from_vector<float>(std::vector<float>(9, 1.f), {1, 1, 3, 3});
  Tensor y = *Tensor::allocate(DType::kF32, {1, 1, 5, 5});
  ASSERT_TRUE(kernels::ref::conv({{1, 1}, {1, 1}, {1, 1}, 1}, x, w, nullptr, y).is_ok());
  testing::expect_close(
      y, {12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99, 108, 117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84});
  Tensor y2 = *Tensor::allocate(DType::kF32, {1, 1, 3, 3});
  ASSERT_TRUE(kernels::ref::conv({{1, 1}, {1, 1}, {0, 0}, 1}, x, w, nullptr, y2).is_ok());
  testing::expect_close(y2, {54, 63, 72, 99, 108, 117, 144, 153, 162});
}

TEST(ConvReference, HandCheckedStridesAsymmetricPads) {
  std::vector<float> xs(35);
  for (int i = 0; i < 35; ++i) xs[static_cast<size_t>(i)] = static_cast<float>(i);
  OnnxBuilder b;
  b.input("x", 1, {1, 1, 7, 5}).initializer_f32("w", {1, 1, 3, 3}, std::vector<float>(9, 1.f));
  auto& n = b.node("Conv", {"x", "w"}, {"y"}, "conv");
  OnnxBuilder::attr(n, "kernel_shape", std::vector<int64_t>{3, 3});
  OnnxBuilder::attr(n, "pads", std::vector<int64_t>{1, 0, 1, 0});
  OnnxBuilder::attr(n, "strides", std::vector<int64_t>{2, 2});
  b.output("y");
  auto out = testing::run_model(b, {Tensor::from_vector<float>(xs, {1, 1, 7, 5})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), (Dims{1, 1, 4, 2}));
  testing::expect_close(out[0], {21, 33, 99, 117, 189, 207, 171, 183});
}

struct ConvCase {
  Dims x, w;
  Window p;
  bool bias;
};

TEST(ConvReference, MatchesNaiveOverSweep) {
  const std::vector<ConvCase> cases = {
      {{1, 1, 7}, {1, 1, 3}, {{1}, {1}, {0}, {0}, 1}, false},
      {{2, 3, 11}, {4, 3, 2}, {{2}, {3}, {2}, {1}, 1}, true},                    // 1-D, stride, dilation, asym pads
      {{1, 3, 5, 7}, {2, 3, 3, 3}, {{1, 2}, {1, 1}, {1, 0}, {0, 2}, 1}, true},   // 2-D asym
      {{2, 4, 6, 5}, {6, 2, 3, 2}, {{2, 1}, {1, 2}, {1, 1}, {1, 1}, 2}, true},   // groups
      {{1, 6, 7, 7}, {6, 1, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, {1, 1}, 6}, true},   // depthwise
      {{1, 4, 9, 8}, {8, 1, 3, 3}, {{1, 1}, {2, 3}, {2, 3}, {2, 3}, 4}, false},  // depthwise multiplier 2, dilated
      {{1, 2, 5, 6, 4}, {3, 2, 2, 3, 2}, {{1, 2, 1}, {1, 1, 2}, {0, 1, 1}, {1, 0, 0}, 1}, true},  // 3-D
      {{3, 5, 13}, {7, 5, 1}, {{3}, {1}, {0}, {0}, 1}, true},                                     // 1x1 strided, primes
      {{1, 1, 1, 1}, {1, 1, 1, 1}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}, 1}, true},
      {{1, 2, 3, 3}, {2, 2, 3, 3}, {{1, 1}, {1, 1}, {2, 2}, {2, 2}, 1}, false},  // pads wider than input
  };
  uint32_t seed = 1;
  for (const auto& c : cases) {
    Tensor x = testing::random_tensor(c.x, seed++), w = testing::random_tensor(c.w, seed++);
    Tensor b = testing::random_tensor({c.w[0]}, seed++);
    Dims out;
    std::vector<double> want = naive_conv(x, w, c.bias ? &b : nullptr, c.p, &out);
    for (DType dt : {DType::kF32, DType::kF64, DType::kF16}) {
      Tensor xt = testing::to_dtype(x, dt), wt = testing::to_dtype(w, dt), bt = testing::to_dtype(b, dt);
      std::vector<double> ref = dt == DType::kF16 ? naive_conv(xt, wt, c.bias ? &bt : nullptr, c.p, &out) : want;
      Tensor y = *Tensor::allocate(dt, out);
      kernels::ref::ConvParams p{c.p.strides, c.p.dilations, c.p.pads_begin, c.p.group};
      ASSERT_TRUE(kernels::ref::conv(p, xt, wt, c.bias ? &bt : nullptr, y).is_ok());
      double tol = dt == DType::kF16 ? 2e-2 : 1e-5;
      testing::expect_close(y, ref, tol, tol,
                            core::str_cat("case x", core::dims_to_string(c.x), " ", core::dtype_name(dt)));
    }
  }
}

TEST(ConvReference, RejectsInconsistentTensors) {
  Tensor x = testing::random_tensor({1, 4, 5, 5}, 1), w = testing::random_tensor({2, 3, 3, 3}, 2);
  Tensor y = *Tensor::allocate(DType::kF32, {1, 2, 3, 3});
  EXPECT_FALSE(kernels::ref::conv({{1, 1}, {1, 1}, {0, 0}, 1}, x, w, nullptr, y).is_ok());  // 4 != 3 channels
  EXPECT_FALSE(kernels::ref::conv({{1, 1}, {1, 1}, {0, 0}, 3}, x, w, nullptr, y).is_ok());  // 4 % 3
  Tensor w2 = testing::random_tensor({2, 4, 3, 3}, 3), b = testing::random_tensor({3}, 4);
  EXPECT_FALSE(kernels::ref::conv({{1, 1}, {1, 1}, {0, 0}, 1}, x, w2, &b, y).is_ok());  // bias size
  EXPECT_FALSE(kernels::ref::conv({{1}, {1}, {0}, 1}, x, w2, nullptr, y).is_ok());      // param lengths
}

// One Conv node through Session; attributes given as (name, ints) pairs plus auto_pad / group.
OnnxBuilder conv_model(const std::string& op, const Dims& xd, const Tensor& w, const Tensor* b,
                       const std::vector<std::pair<std::string, std::vector<int64_t>>>& ints,
                       const std::string& auto_pad = "", int64_t group = 1) {
  OnnxBuilder m;
  m.input("x", 1, xd);
  auto wv = testing::values(w);
  m.initializer_f32("w", w.dims(), std::vector<float>(wv.begin(), wv.end()));
  std::vector<std::string> ins = {"x", "w"};
  if (b) {
    auto bv = testing::values(*b);
    m.initializer_f32("b", b->dims(), std::vector<float>(bv.begin(), bv.end()));
    ins.push_back("b");
  }
  auto& n = m.node(op, ins, {"y"}, "the_conv");
  for (const auto& [k, v] : ints) OnnxBuilder::attr(n, k, v);
  if (!auto_pad.empty()) OnnxBuilder::attr(n, "auto_pad", auto_pad);
  if (group != 1) OnnxBuilder::attr(n, "group", group);
  m.output("y");
  return m;
}

TEST(ConvSession, AutoPadVariantsMatchExplicitPads) {
  Tensor x = testing::random_tensor({1, 2, 7, 6}, 11), w = testing::random_tensor({3, 2, 3, 3}, 12);
  Tensor b = testing::random_tensor({3}, 13);
  struct Case {
    std::string auto_pad;
    Dims pb, pe;
  };
  // H: out 4, total pad 2 -> 1/1. W: out 3, total pad 1 -> UPPER 0/1, LOWER 1/0. VALID: none.
  for (const Case& c : {Case{"SAME_UPPER", {1, 0}, {1, 1}}, Case{"SAME_LOWER", {1, 1}, {1, 0}},
                        Case{"VALID", {0, 0}, {0, 0}}, Case{"NOTSET", {0, 0}, {0, 0}}}) {
    auto m = conv_model("Conv", x.dims(), w, &b, {{"strides", {2, 2}}}, c.auto_pad);
    auto out = testing::run_model(m, {x});
    ASSERT_EQ(out.size(), 1u);
    Dims want_dims;
    auto want = naive_conv(x, w, &b, {{2, 2}, {1, 1}, c.pb, c.pe, 1}, &want_dims);
    EXPECT_EQ(out[0].dims(), want_dims) << c.auto_pad;
    testing::expect_close(out[0], want, 1e-5, 1e-5, c.auto_pad);
  }
}

TEST(ConvSession, KernelShapeFromWeightsDilationsAndDepthwise) {
  Tensor x = testing::random_tensor({2, 4, 9, 8}, 21), w = testing::random_tensor({4, 1, 3, 2}, 22);
  auto m = conv_model("Conv", x.dims(), w, nullptr, {{"dilations", {2, 3}}, {"pads", {1, 0, 2, 1}}}, "", 4);
  auto out = testing::run_model(m, {x});
  ASSERT_EQ(out.size(), 1u);
  Dims want_dims;
  auto want = naive_conv(x, w, nullptr, {{1, 1}, {2, 3}, {1, 0}, {2, 1}, 4}, &want_dims);
  EXPECT_EQ(out[0].dims(), want_dims);
  testing::expect_close(out[0], want);
}

TEST(ConvSession, OneAndThreeDimensional) {
  Tensor x1 = testing::random_tensor({1, 3, 10}, 31), w1 = testing::random_tensor({2, 3, 4}, 32);
  auto m1 = conv_model("Conv", x1.dims(), w1, nullptr, {{"kernel_shape", {4}}, {"strides", {3}}}, "SAME_UPPER");
  auto o1 = testing::run_model(m1, {x1});
  Dims d1;
  // out ceil(10/3) = 4, total pad (4-1)*3 + 4 - 10 = 3 -> 1 / 2.
  auto want1 = naive_conv(x1, w1, nullptr, {{3}, {1}, {1}, {2}, 1}, &d1);
  ASSERT_EQ(o1.size(), 1u);
  EXPECT_EQ(o1[0].dims(), d1);
  testing::expect_close(o1[0], want1);

  Tensor x3 = testing::random_tensor({1, 2, 4, 5, 3}, 33), w3 = testing::random_tensor({2, 1, 2, 2, 2}, 34);
  Tensor b3 = testing::random_tensor({2}, 35);
  auto m3 = conv_model("Conv", x3.dims(), w3, &b3, {{"pads", {0, 1, 1, 1, 0, 0}}}, "", 2);
  auto o3 = testing::run_model(m3, {x3});
  Dims d3;
  auto want3 = naive_conv(x3, w3, &b3, {{1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {1, 0, 0}, 2}, &d3);
  ASSERT_EQ(o3.size(), 1u);
  EXPECT_EQ(o3[0].dims(), d3);
  testing::expect_close(o3[0], want3);
}

TEST(ConvSession, SymbolicBatchIsInferredAndReplanned) {
  Tensor w = testing::random_tensor({2, 1, 3, 3}, 41);
  OnnxBuilder m;
  m.input("x", 1, {-1, 1, 6, 6}, {"N", "", "", ""});
  auto wv = testing::values(w);
  m.initializer_f32("w", w.dims(), std::vector<float>(wv.begin(), wv.end()));
  m.node("Conv", {"x", "w"}, {"y"});
  m.output("y");
  auto s = testing::open_model(m);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ((*s)->outputs()[0].type.shape.to_string(), "[N,2,4,4]");
  for (int64_t n : {1, 3}) {
    Tensor x = testing::random_tensor({n, 1, 6, 6}, static_cast<uint32_t>(42 + n));
    std::vector<Tensor> out;
    ASSERT_TRUE((*s)->run({{"x", x}}, out).is_ok());
    Dims d;
    testing::expect_close(out[0], naive_conv(x, w, nullptr, {{1, 1}, {1, 1}, {0, 0}, {0, 0}, 1}, &d));
  }
}

TEST(ConvSession, ShapeErrorsNameTheNode) {
  Tensor w = testing::random_tensor({4, 3, 3, 3}, 51);
  auto channels = conv_model("Conv", {1, 4, 8, 8}, w, nullptr, {});
  EXPECT_TRUE(testing::contains(testing::open_error(channels, "the_conv"), "channels"));
  auto group = conv_model("Conv", {1, 6, 8, 8}, testing::random_tensor({4, 2, 3, 3}, 52), nullptr, {}, "", 4);
  EXPECT_TRUE(testing::contains(testing::open_error(group, "the_conv"), "divisible by group"));
  auto big = conv_model("Conv", {1, 3, 2, 8}, w, nullptr, {{"pads", {0, 0, 0, 0}}});
  EXPECT_TRUE(testing::contains(testing::open_error(big, "the_conv"), "larger than the padded input"));
  Tensor b = testing::random_tensor({5}, 53);
  auto bias = conv_model("Conv", {1, 3, 8, 8}, w, &b, {});
  EXPECT_TRUE(testing::contains(testing::open_error(bias, "the_conv"), "bias"));
  auto ks = conv_model("Conv", {1, 3, 8, 8}, w, nullptr, {{"kernel_shape", {2, 2}}});
  EXPECT_TRUE(testing::contains(testing::open_error(ks, "the_conv"), "kernel_shape"));
  auto strides = conv_model("Conv", {1, 3, 8, 8}, w, nullptr, {{"strides", {1, 1, 1}}});
  EXPECT_TRUE(testing::contains(testing::open_error(strides, "the_conv"), "strides"));
  auto zero_stride = conv_model("Conv", {1, 3, 8, 8}, w, nullptr, {{"strides", {1, 0}}});
  EXPECT_FALSE(testing::open_error(zero_stride, "the_conv").is_ok());
  auto huge = conv_model("Conv", {1, 3, 8, 8}, w, nullptr, {{"strides", {int64_t{1} << 40, 1}}});
  EXPECT_FALSE(testing::open_error(huge, "the_conv").is_ok());
  auto neg_pad = conv_model("Conv", {1, 3, 8, 8}, w, nullptr, {{"pads", {0, -1, 0, 0}}});
  EXPECT_FALSE(testing::open_error(neg_pad, "the_conv").is_ok());
  auto ap = conv_model("Conv", {1, 3, 8, 8}, w, nullptr, {}, "SAME");
  EXPECT_TRUE(testing::contains(testing::open_error(ap, "the_conv"), "auto_pad"));
  auto rank = conv_model("Conv", {3, 8}, w, nullptr, {});
  EXPECT_FALSE(testing::open_error(rank, "the_conv").is_ok());
}

TEST(ConvTransposeReference, HandChecked) {
  std::vector<float> xs(9);
  for (int i = 0; i < 9; ++i) xs[static_cast<size_t>(i)] = static_cast<float>(i);
  Tensor x = Tensor::from_vector<float>(xs, {1, 1, 3, 3});
  Tensor w = Tensor::from_vector<float>(std::vector<float>(18, 1.f), {1, 2, 3, 3});
  Tensor y = *Tensor::allocate(DType::kF32, {1, 2, 5, 5});
  ASSERT_TRUE(kernels::ref::conv_transpose({{1, 1}, {1, 1}, {0, 0}, 1}, x, w, nullptr, y).is_ok());
  std::vector<double> plane = {0, 1, 3, 3, 2, 3, 8, 15, 12, 7, 9, 21, 36, 27, 15, 9, 20, 33, 24, 13, 6, 13, 21, 15, 8};
  std::vector<double> want = plane;
  want.insert(want.end(), plane.begin(), plane.end());
  testing::expect_close(y, want);
}

struct TransposeCase {
  Dims x, w;
  Window p;
  Dims out;
  bool bias;
};

TEST(ConvTransposeReference, MatchesNaiveOverSweep) {
  const std::vector<TransposeCase> cases = {
      {{1, 2, 5}, {2, 3, 3}, {{2}, {1}, {1}, {0}, 1}, {10}, true},
      {{2, 3, 4, 3}, {3, 2, 3, 2}, {{2, 3}, {1, 2}, {0, 1}, {1, 0}, 1}, {8, 8}, true},
      {{1, 4, 3, 5}, {4, 1, 2, 3}, {{1, 2}, {2, 1}, {1, 1}, {0, 0}, 2}, {3, 11}, false},  // groups
      {{1, 3, 4, 4},
       {3, 2, 3, 3},
       {{2, 2}, {1, 1}, {0, 0}, {0, 0}, 3},
       {10, 9},
       true},  // depthwise, output_padding-like
      {{1, 1, 2, 3, 2}, {1, 2, 2, 2, 3}, {{1, 2, 1}, {1, 1, 2}, {0, 1, 0}, {0, 0, 0}, 1}, {3, 6, 6}, true},  // 3-D
      {{1, 2, 3}, {2, 1, 2}, {{3}, {1}, {0}, {0}, 1}, {11}, false},  // output larger than the full result
  };
  uint32_t seed = 100;
  for (const auto& c : cases) {
    Tensor x = testing::random_tensor(c.x, seed++), w = testing::random_tensor(c.w, seed++);
    Tensor b = testing::random_tensor({c.w[1] * c.p.group}, seed++);
    std::vector<double> want = naive_conv_transpose(x, w, c.bias ? &b : nullptr, c.p, c.out);
    for (DType dt : {DType::kF32, DType::kF64}) {
      Dims yd = {c.x[0], c.w[1] * c.p.group};
      yd.insert(yd.end(), c.out.begin(), c.out.end());
      Tensor y = *Tensor::allocate(dt, yd);
      Tensor bt = testing::to_dtype(b, dt);
      kernels::ref::ConvParams p{c.p.strides, c.p.dilations, c.p.pads_begin, c.p.group};
      ASSERT_TRUE(
          kernels::ref::conv_transpose(p, testing::to_dtype(x, dt), testing::to_dtype(w, dt), c.bias ? &bt : nullptr, y)
              .is_ok());
      testing::expect_close(y, want, 1e-5, 1e-5, core::str_cat("case x", core::dims_to_string(c.x)));
    }
  }
}

TEST(ConvTransposeSession, AttributesResolveLikeTheSpec) {
  Tensor x = testing::random_tensor({1, 2, 3, 4}, 61), w = testing::random_tensor({2, 3, 3, 3}, 62);
  Tensor b = testing::random_tensor({3}, 63);
  struct Case {
    std::vector<std::pair<std::string, std::vector<int64_t>>> ints;
    std::string auto_pad;
    Window p;  // pads_begin used for the naive crop
    Dims out;
  };
  const std::vector<Case> cases = {
      // pads: out = 2*(in-1) + 3 - pads.
      {{{"strides", {2, 2}}, {"pads", {1, 0, 0, 2}}}, "", {{2, 2}, {1, 1}, {1, 0}, {}, 1}, {6, 7}},
      // output_padding adds at the end.
      {{{"strides", {2, 2}}, {"output_padding", {1, 1}}}, "", {{2, 2}, {1, 1}, {0, 0}, {}, 1}, {8, 10}},
      // SAME_UPPER: out = in*stride; total pad 2*2+3-6 = 1 (H), 2*3+3-8 = 1 (W): odd one at the end.
      {{{"strides", {2, 2}}}, "SAME_UPPER", {{2, 2}, {1, 1}, {0, 0}, {}, 1}, {6, 8}},
      {{{"strides", {2, 2}}}, "SAME_LOWER", {{2, 2}, {1, 1}, {1, 1}, {}, 1}, {6, 8}},
      // output_shape: total pad 7 - 6 = 1 -> begin 1 (not SAME_UPPER); W: 9 - 9 = 0.
      {{{"strides", {2, 2}}, {"output_shape", {6, 9}}, {"pads", {5, 5, 5, 5}}},
       "",
       {{2, 2}, {1, 1}, {1, 0}, {}, 1},
       {6, 9}},
      // output_shape given as the full N, C, spatial list, with dilations.
      {{{"dilations", {2, 1}}, {"output_shape", {1, 3, 5, 6}}}, "", {{1, 1}, {2, 1}, {1, 0}, {}, 1}, {5, 6}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    auto m = conv_model("ConvTranspose", x.dims(), w, &b, c.ints, c.auto_pad);
    auto out = testing::run_model(m, {x});
    ASSERT_EQ(out.size(), 1u) << i;
    Dims want_dims = {1, 3};
    want_dims.insert(want_dims.end(), c.out.begin(), c.out.end());
    EXPECT_EQ(out[0].dims(), want_dims) << i;
    testing::expect_close(out[0], naive_conv_transpose(x, w, &b, c.p, c.out), 1e-5, 1e-5, core::str_cat("case ", i));
  }
}

TEST(ConvTransposeSession, GroupsAndErrors) {
  Tensor x = testing::random_tensor({2, 4, 3, 3}, 71), w = testing::random_tensor({4, 3, 2, 2}, 72);
  auto m = conv_model("ConvTranspose", x.dims(), w, nullptr, {{"strides", {2, 1}}}, "", 2);
  auto out = testing::run_model(m, {x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), (Dims{2, 6, 6, 4}));
  testing::expect_close(out[0], naive_conv_transpose(x, w, nullptr, {{2, 1}, {1, 1}, {0, 0}, {}, 2}, {6, 4}));

  auto channels = conv_model("ConvTranspose", {1, 3, 3, 3}, w, nullptr, {});
  EXPECT_TRUE(testing::contains(testing::open_error(channels, "the_conv"), "channels"));
  auto op = conv_model("ConvTranspose", {1, 4, 3, 3}, w, nullptr, {{"output_padding", {1}}});
  EXPECT_TRUE(testing::contains(testing::open_error(op, "the_conv"), "output_padding"));
  auto pads = conv_model("ConvTranspose", {1, 4, 1, 1}, w, nullptr, {{"pads", {2, 2, 2, 2}}});
  EXPECT_FALSE(testing::open_error(pads, "the_conv").is_ok());
}

}  // namespace
}  // namespace kestrel
