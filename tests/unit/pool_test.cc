// Tests of MaxPool, AveragePool, LpPool and the global pools: hand-checked windows (ceil_mode,
// count_include_pad, indices in both storage orders), a sweep against naive loops over an
// explicitly padded input, attribute handling through Session, and load-time errors.
#include "kernels/reference/pool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "common/nn_test_util.h"

namespace kestrel {
namespace {

using core::Dims;
using core::DType;
using core::Tensor;
using testing::OnnxBuilder;

void for_each_index(const Dims& dims, const std::function<void(const std::vector<int64_t>&)>& f) {
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t t = 0; t < core::num_elements(dims); ++t) {
    f(idx);
    for (size_t i = dims.size(); i-- > 0;) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
}

enum class Kind { kMax, kAvgExclude, kAvgInclude, kLp2, kLp3 };

struct Pool {
  Dims kernel, strides, dilations, pads_begin, pads_end;
  bool ceil = false;
};

// Output size per the spec (floor/ceil, last window must start inside the input or left pad).
Dims out_dims(const Dims& in, const Pool& p) {
  Dims out(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    double span =
        static_cast<double>(in[i] + p.pads_begin[i] + p.pads_end[i] - ((p.kernel[i] - 1) * p.dilations[i] + 1));
    double q = span / static_cast<double>(p.strides[i]);
    out[i] = static_cast<int64_t>(p.ceil ? std::ceil(q) : std::floor(q)) + 1;
    if (p.ceil && (out[i] - 1) * p.strides[i] >= in[i] + p.pads_begin[i]) --out[i];
  }
  return out;
}

// Naive pooling: an explicitly padded copy whose cells know whether they are input, padding or
// the ceil-mode overhang beyond the padding.
std::vector<double> naive_pool(const Tensor& x, const Pool& p, Kind kind, Dims* y_dims,
                               std::vector<int64_t>* argmax = nullptr) {
  const size_t s = static_cast<size_t>(x.rank() - 2);
  Dims in(x.dims().begin() + 2, x.dims().end());
  Dims out = out_dims(in, p);
  auto xv = testing::values(x);
  const int64_t planes = x.dim(0) * x.dim(1), isize = core::num_elements(in), osize = core::num_elements(out);
  std::vector<double> y(static_cast<size_t>(planes * osize));
  if (argmax) argmax->assign(y.size(), -1);
  for (int64_t pl = 0; pl < planes; ++pl)
    for_each_index(out, [&](const std::vector<int64_t>& o) {
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      int64_t best_at = -1, count = 0, count_padded = 0;
      for_each_index(p.kernel, [&](const std::vector<int64_t>& k) {
        std::vector<int64_t> q(s);
        bool inside = true, in_padded = true;
        for (size_t i = 0; i < s; ++i) {
          // Coordinates in the padded frame, then back to the input frame.
          int64_t padded = o[i] * p.strides[i] + k[i] * p.dilations[i];
          q[i] = padded - p.pads_begin[i];
          inside = inside && q[i] >= 0 && q[i] < in[i];
          in_padded = in_padded && padded < in[i] + p.pads_begin[i] + p.pads_end[i];
        }
        if (in_padded) ++count_padded;
        if (!inside) return;
        int64_t flat = testing::flat_index(q, in);
        double v = xv[static_cast<size_t>(pl * isize + flat)];
        ++count;
        if (v > best) {
          best = v;
          best_at = pl * isize + flat;
        }
        if (kind == Kind::kLp2)
          sum += v * v;
        else if (kind == Kind::kLp3)
          sum += std::pow(std::fabs(v), 3.0);
        else
          sum += v;
      });
      double r = 0;
      switch (kind) {
        case Kind::kMax:
          r = best;
          break;
        case Kind::kAvgExclude:
          r = sum / static_cast<double>(count);
          break;
        case Kind::kAvgInclude:
          r = sum / static_cast<double>(count_padded);
          break;
        case Kind::kLp2:
          r = std::sqrt(sum);
          break;
        case Kind::kLp3:
          r = std::cbrt(sum);
          break;
      }
      size_t at = static_cast<size_t>(pl * osize + testing::flat_index(o, out));
      y[at] = r;
      if (argmax) (*argmax)[at] = best_at;
    });
  *y_dims = {x.dim(0), x.dim(1)};
  y_dims->insert(y_dims->end(), out.begin(), out.end());
  return y;
}

kernels::ref::PoolParams params(const Pool& p) {
  return {p.kernel, p.strides, p.dilations, p.pads_begin, p.pads_end};
}

TEST(PoolReference, HandCheckedMaxAndAverage) {
  // 1x1x4x4 with values 1..16, 2x2 windows, stride 2.
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i + 1);
  Tensor x = Tensor::from_vector<float>(v, {1, 1, 4, 4});
  Pool p{{2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}};
  Tensor y = *Tensor::allocate(DType::kF32, {1, 1, 2, 2});
  Tensor ind = *Tensor::allocate(DType::kI64, {1, 1, 2, 2});
  ASSERT_TRUE(kernels::ref::max_pool(params(p), x, y, &ind, false).is_ok());
  testing::expect_close(y, {6, 8, 14, 16});
  testing::expect_close(ind, {5, 7, 13, 15});
  ASSERT_TRUE(kernels::ref::max_pool(params(p), x, y, &ind, true).is_ok());  // column-major: h + w * H
  testing::expect_close(ind, {1 + 1 * 4, 1 + 3 * 4, 3 + 1 * 4, 3 + 3 * 4});
  ASSERT_TRUE(kernels::ref::average_pool(params(p), false, x, y).is_ok());
  testing::expect_close(y, {3.5, 5.5, 11.5, 13.5});
}

TEST(PoolReference, HandCheckedPaddingCountsAndCeilOverhang) {
  // 1-D [1, 2, 3, 4, 5], kernel 3, stride 2, pads 1/1 -> windows [-1..1], [1..3], [3..5].
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5}, {1, 1, 5});
  Pool p{{3}, {2}, {1}, {1}, {1}};
  Tensor y = *Tensor::allocate(DType::kF32, {1, 1, 3});
  ASSERT_TRUE(kernels::ref::average_pool(params(p), false, x, y).is_ok());
  testing::expect_close(y, {1.5, 3, 4.5});
  ASSERT_TRUE(kernels::ref::average_pool(params(p), true, x, y).is_ok());
  testing::expect_close(y, {1, 3, 3});
  // Ceil mode, no pads: kernel 2 stride 2 over 5 -> [0,1], [2,3], [4] (overhang not counted).
  Pool c{{2}, {2}, {1}, {0}, {0}, true};
  ASSERT_TRUE(kernels::ref::average_pool(params(c), true, x, y).is_ok());
  testing::expect_close(y, {1.5, 3.5, 5});
  ASSERT_TRUE(kernels::ref::max_pool(params(c), x, y, nullptr, false).is_ok());
  testing::expect_close(y, {2, 4, 5});
  Tensor lp = *Tensor::allocate(DType::kF32, {1, 1, 3});
  ASSERT_TRUE(kernels::ref::lp_pool(params(c), 2, x, lp).is_ok());
  testing::expect_close(lp, {std::sqrt(5.0), 5, 5});
}

TEST(PoolReference, MatchesNaiveOverSweep) {
  struct Case {
    Dims x;
    Pool p;
  };
  const std::vector<Case> cases = {
      {{1, 1, 9}, {{3}, {1}, {1}, {0}, {0}}},
      {{2, 3, 10}, {{2}, {3}, {2}, {1}, {2}, true}},
      {{1, 2, 7, 6}, {{3, 2}, {2, 2}, {1, 1}, {1, 0}, {0, 1}}},
      {{1, 2, 7, 6}, {{3, 2}, {2, 2}, {1, 1}, {1, 0}, {0, 1}, true}},
      {{2, 1, 8, 9}, {{2, 3}, {3, 2}, {2, 2}, {1, 1}, {1, 1}, true}},
      {{1, 3, 5, 4, 6}, {{2, 2, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {1, 0, 1}}},
      {{1, 1, 6, 6}, {{3, 3}, {3, 3}, {1, 1}, {2, 2}, {2, 2}, true}},
      {{1, 1, 1, 1}, {{1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}}},
  };
  uint32_t seed = 7;
  for (const auto& c : cases) {
    Tensor x = testing::random_tensor(c.x, seed++, -3.f, 3.f);
    const std::string what = "x" + core::dims_to_string(c.x) + (c.p.ceil ? " ceil" : "");
    for (Kind kind : {Kind::kMax, Kind::kAvgExclude, Kind::kAvgInclude, Kind::kLp2, Kind::kLp3}) {
      Dims yd;
      std::vector<int64_t> argmax;
      auto want = naive_pool(x, c.p, kind, &yd, &argmax);
      for (DType dt : {DType::kF32, DType::kF64}) {
        Tensor xt = testing::to_dtype(x, dt);
        Tensor y = *Tensor::allocate(dt, yd), ind = *Tensor::allocate(DType::kI64, yd);
        core::Status st;
        switch (kind) {
          case Kind::kMax:
            st = kernels::ref::max_pool(params(c.p), xt, y, &ind, false);
            break;
          case Kind::kAvgExclude:
            st = kernels::ref::average_pool(params(c.p), false, xt, y);
            break;
          case Kind::kAvgInclude:
            st = kernels::ref::average_pool(params(c.p), true, xt, y);
            break;
          case Kind::kLp2:
            st = kernels::ref::lp_pool(params(c.p), 2, xt, y);
            break;
          case Kind::kLp3:
            st = kernels::ref::lp_pool(params(c.p), 3, xt, y);
            break;
        }
        ASSERT_TRUE(st.is_ok()) << st.to_string();
        testing::expect_close(y, want, 1e-5, 1e-5, core::str_cat(what, " kind ", static_cast<int>(kind)));
        if (kind == Kind::kMax)
          testing::expect_close(testing::values(ind), std::vector<double>(argmax.begin(), argmax.end()), 0, 0, what);
      }
    }
  }
}

TEST(PoolReference, Int8MaxPoolAndHalfPrecision) {
  Tensor x = Tensor::from_vector<int8_t>({-128, 5, -3, 127, 0, -1}, {1, 1, 6});
  Tensor y = *Tensor::allocate(DType::kI8, {1, 1, 3});
  ASSERT_TRUE(kernels::ref::max_pool({{2}, {2}, {1}, {0}, {0}}, x, y, nullptr, false).is_ok());
  EXPECT_EQ(y.data<int8_t>()[0], 5);
  EXPECT_EQ(y.data<int8_t>()[1], 127);
  EXPECT_EQ(y.data<int8_t>()[2], 0);
  Tensor u = Tensor::from_vector<uint8_t>({200, 255, 0}, {1, 1, 3}), yu = *Tensor::allocate(DType::kU8, {1, 1, 1});
  ASSERT_TRUE(kernels::ref::max_pool({{3}, {1}, {1}, {0}, {0}}, u, yu, nullptr, false).is_ok());
  EXPECT_EQ(yu.data<uint8_t>()[0], 255);
  Tensor h = testing::to_dtype(Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 4}), DType::kF16);
  Tensor yh = *Tensor::allocate(DType::kF16, {1, 1, 2});
  ASSERT_TRUE(kernels::ref::average_pool({{2}, {2}, {1}, {0}, {0}}, false, h, yh).is_ok());
  testing::expect_close(yh, {1.5, 3.5});
}

TEST(PoolReference, WindowEntirelyInPaddingIsDefined) {
  Tensor x = Tensor::from_vector<float>({1, 2}, {1, 1, 2});
  Pool p{{1}, {1}, {1}, {2}, {0}};  // the first two windows see only padding
  Tensor y = *Tensor::allocate(DType::kF32, {1, 1, 4}), ind = *Tensor::allocate(DType::kI64, {1, 1, 4});
  ASSERT_TRUE(kernels::ref::max_pool(params(p), x, y, &ind, false).is_ok());
  EXPECT_TRUE(std::isinf(y.data<float>()[0]) && y.data<float>()[0] < 0);
  EXPECT_EQ(ind.data<int64_t>()[0], -1);
  EXPECT_EQ(y.data<float>()[3], 2.f);
  ASSERT_TRUE(kernels::ref::average_pool(params(p), false, x, y).is_ok());
  EXPECT_TRUE(std::isnan(y.data<float>()[0]));
  ASSERT_TRUE(kernels::ref::average_pool(params(p), true, x, y).is_ok());
  EXPECT_EQ(y.data<float>()[0], 0.f);
}

TEST(PoolReference, GlobalPools) {
  Tensor x = Tensor::from_vector<float>({1, -2, 3, 4, -5, 6, 0, 2}, {1, 2, 2, 2});
  Tensor y = *Tensor::allocate(DType::kF32, {1, 2, 1, 1});
  ASSERT_TRUE(kernels::ref::global_pool(kernels::ref::GlobalPoolKind::kAverage, 2, x, y).is_ok());
  testing::expect_close(y, {1.5, 0.75});
  ASSERT_TRUE(kernels::ref::global_pool(kernels::ref::GlobalPoolKind::kMax, 2, x, y).is_ok());
  testing::expect_close(y, {4, 6});
  ASSERT_TRUE(kernels::ref::global_pool(kernels::ref::GlobalPoolKind::kLp, 2, x, y).is_ok());
  testing::expect_close(y, {std::sqrt(30.0), std::sqrt(65.0)});
  ASSERT_TRUE(kernels::ref::global_pool(kernels::ref::GlobalPoolKind::kLp, 1, x, y).is_ok());
  testing::expect_close(y, {10, 13});
}

OnnxBuilder pool_model(const std::string& op, const Dims& xd,
                       const std::vector<std::pair<std::string, std::vector<int64_t>>>& ints,
                       const std::vector<std::pair<std::string, int64_t>>& scalars = {},
                       const std::string& auto_pad = "", bool indices = false) {
  OnnxBuilder m;
  m.input("x", 1, xd);
  std::vector<std::string> outs = {"y"};
  if (indices) outs.push_back("i");
  auto& n = m.node(op, {"x"}, outs, "pool");
  for (const auto& [k, v] : ints) OnnxBuilder::attr(n, k, v);
  for (const auto& [k, v] : scalars) OnnxBuilder::attr(n, k, v);
  if (!auto_pad.empty()) OnnxBuilder::attr(n, "auto_pad", auto_pad);
  m.output("y");
  if (indices) m.output("i", 7);
  return m;
}

TEST(PoolSession, AutoPadCeilModeAndIndices) {
  Tensor x = testing::random_tensor({2, 3, 7, 6}, 21, -2.f, 2.f);
  struct Case {
    std::string auto_pad;
    std::vector<std::pair<std::string, std::vector<int64_t>>> ints;
    int64_t ceil;
    Pool p;
  };
  // kernel 3x3, stride 2x2: SAME -> out 4x3, H total pad 2 (1/1), W total pad 1 (UPPER 0/1, LOWER 1/0).
  const std::vector<Case> cases = {
      {"SAME_UPPER", {{"strides", {2, 2}}}, 0, {{3, 3}, {2, 2}, {1, 1}, {1, 0}, {1, 1}}},
      {"SAME_LOWER", {{"strides", {2, 2}}}, 0, {{3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 0}}},
      {"VALID", {{"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}}, 0, {{3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}}},
      {"", {{"strides", {2, 2}}, {"pads", {0, 1, 1, 0}}}, 1, {{3, 3}, {2, 2}, {1, 1}, {0, 1}, {1, 0}, true}},
      {"",
       {{"strides", {1, 2}}, {"dilations", {2, 2}}, {"pads", {1, 1, 1, 1}}},
       1,
       {{3, 3}, {1, 2}, {2, 2}, {1, 1}, {1, 1}, true}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    auto ints = c.ints;
    ints.push_back({"kernel_shape", {3, 3}});
    for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) {
      std::vector<std::pair<std::string, int64_t>> scalars = {{"ceil_mode", c.ceil}};
      Kind kind = Kind::kMax;
      if (std::string(op) == "AveragePool") {
        scalars.push_back({"count_include_pad", 1});
        kind = Kind::kAvgInclude;
      } else if (std::string(op) == "LpPool") {
        scalars.push_back({"p", 3});
        kind = Kind::kLp3;
      }
      const bool with_indices = std::string(op) == "MaxPool";
      auto m = pool_model(op, x.dims(), ints, scalars, c.auto_pad, with_indices);
      auto out = testing::run_model(m, {x});
      ASSERT_EQ(out.size(), with_indices ? 2u : 1u) << op << " case " << i;
      Dims yd;
      std::vector<int64_t> argmax;
      auto want = naive_pool(x, c.p, kind, &yd, &argmax);
      EXPECT_EQ(out[0].dims(), yd) << op << " case " << i;
      testing::expect_close(out[0], want, 1e-5, 1e-5, core::str_cat(op, " case ", i));
      if (with_indices)
        testing::expect_close(testing::values(out[1]), std::vector<double>(argmax.begin(), argmax.end()), 0, 0,
                              core::str_cat("indices case ", i));
    }
  }
}

TEST(PoolSession, GlobalPoolShapes) {
  Tensor x = testing::random_tensor({2, 3, 4, 5}, 31);
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
    auto m = pool_model(op, x.dims(), {});
    auto out = testing::run_model(m, {x});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dims(), (Dims{2, 3, 1, 1})) << op;
    // Same as the windowed pool with the kernel covering the whole plane.
    Dims yd;
    Kind kind = std::string(op) == "GlobalMaxPool"
                    ? Kind::kMax
                    : (std::string(op) == "GlobalLpPool" ? Kind::kLp2 : Kind::kAvgExclude);
    testing::expect_close(out[0], naive_pool(x, {{4, 5}, {1, 1}, {1, 1}, {0, 0}, {0, 0}}, kind, &yd), 1e-5, 1e-5, op);
  }
}

TEST(PoolSession, LegacyFloatPIsAccepted) {
  Tensor x = Tensor::from_vector<float>({3, 4, 1, 1}, {1, 1, 4});
  OnnxBuilder m;
  m.input("x", 1, x.dims());
  auto& n = m.node("GlobalLpPool", {"x"}, {"y"}, "pool");
  OnnxBuilder::attr(n, "p", 2.0f);
  m.output("y");
  auto out = testing::run_model(m, {x});
  ASSERT_EQ(out.size(), 1u);
  testing::expect_close(out[0], {std::sqrt(27.0)});
  OnnxBuilder bad;
  bad.input("x", 1, x.dims());
  auto& nb = bad.node("GlobalLpPool", {"x"}, {"y"}, "pool");
  OnnxBuilder::attr(nb, "p", 1.5f);
  bad.output("y");
  EXPECT_EQ(testing::open_error(bad, "pool").code(), core::StatusCode::kUnsupported);
}

TEST(PoolSession, ShapeErrorsNameTheNode) {
  EXPECT_TRUE(testing::contains(
      testing::open_error(pool_model("MaxPool", {1, 1, 3, 3}, {{"kernel_shape", {4, 4}}}), "pool"), "larger"));
  EXPECT_TRUE(testing::contains(
      testing::open_error(pool_model("MaxPool", {1, 1, 8}, {{"kernel_shape", {2, 2}}}), "pool"), "rank"));
  EXPECT_FALSE(testing::open_error(pool_model("AveragePool", {1, 1, 8, 8}, {}), "pool").is_ok());  // no kernel_shape
  EXPECT_FALSE(testing::open_error(
                   pool_model("MaxPool", {1, 1, 8, 8}, {{"kernel_shape", {2, 2}}}, {{"storage_order", 2}}), "pool")
                   .is_ok());
  EXPECT_FALSE(
      testing::open_error(pool_model("LpPool", {1, 1, 8, 8}, {{"kernel_shape", {2, 2}}}, {{"p", 0}}), "pool").is_ok());
  EXPECT_FALSE(
      testing::open_error(pool_model("AveragePool", {1, 1, 8, 8}, {{"kernel_shape", {2, 2}}, {"pads", {1, 1}}}), "pool")
          .is_ok());
  EXPECT_FALSE(testing::open_error(pool_model("GlobalMaxPool", {4}, {}), "pool").is_ok());
}

}  // namespace
}  // namespace kestrel
