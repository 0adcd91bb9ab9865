// Tests of Softmax, LogSoftmax and Hardmax (opset 13): every axis including negative ones, huge
// inputs (max subtraction), ties in Hardmax, half/double precision, and axis errors.
#include "kernels/reference/softmax.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/nn_test_util.h"

namespace kestrel {
namespace {

using core::Dims;
using core::DType;
using core::Tensor;
using testing::OnnxBuilder;

// Naive softmax along `axis` in long double, written as the definition (no tricks but the max).
std::vector<double> naive(const std::string& op, const Tensor& x, int64_t axis) {
  auto xv = testing::values(x);
  const Dims& d = x.dims();
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < d.size(); ++i) inner *= d[i];
  const int64_t len = d[static_cast<size_t>(axis)], outer = static_cast<int64_t>(xv.size()) / (len * inner);
  std::vector<double> y(xv.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      auto idx = [&](int64_t k) { return static_cast<size_t>((o * len + k) * inner + in); };
      long double mx = xv[idx(0)], sum = 0;
      int64_t arg = 0;
      for (int64_t k = 1; k < len; ++k)
        if (xv[idx(k)] > mx) mx = xv[idx(k)], arg = k;
      for (int64_t k = 0; k < len; ++k) sum += std::exp(static_cast<long double>(xv[idx(k)]) - mx);
      for (int64_t k = 0; k < len; ++k) {
        long double e = std::exp(static_cast<long double>(xv[idx(k)]) - mx);
        if (op == "Softmax")
          y[idx(k)] = static_cast<double>(e / sum);
        else if (op == "LogSoftmax")
          y[idx(k)] = static_cast<double>(xv[idx(k)] - mx - std::log(sum));
        else
          y[idx(k)] = k == arg ? 1.0 : 0.0;
      }
    }
  return y;
}

TEST(SoftmaxReference, HandChecked) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 1000, 1001, 1002}, {2, 3});
  Tensor y = *Tensor::allocate(DType::kF32, {2, 3});
  ASSERT_TRUE(kernels::ref::softmax(kernels::ref::SoftmaxKind::kSoftmax, 1, x, y).is_ok());
  const double e = std::exp(1.0), s = 1 + e + e * e;
  testing::expect_close(y, {1 / s, e / s, e * e / s, 1 / s, e / s, e * e / s}, 1e-6, 1e-6);
  ASSERT_TRUE(kernels::ref::softmax(kernels::ref::SoftmaxKind::kLogSoftmax, 1, x, y).is_ok());
  testing::expect_close(
      y,
      {-2 - std::log1p(std::exp(-1.0) + std::exp(-2.0)) + 0, -1 - std::log(1 + std::exp(-1.0) + std::exp(-2.0)),
       -std::log(1 + std::exp(-1.0) + std::exp(-2.0)), -2 - std::log(1 + std::exp(-1.0) + std::exp(-2.0)),
       -1 - std::log(1 + std::exp(-1.0) + std::exp(-2.0)), -std::log(1 + std::exp(-1.0) + std::exp(-2.0))},
      1e-5, 1e-5);
  Tensor t = Tensor::from_vector<float>({3, 7, 7, 1}, {4});
  Tensor ty = *Tensor::allocate(DType::kF32, {4});
  ASSERT_TRUE(kernels::ref::softmax(kernels::ref::SoftmaxKind::kHardmax, 0, t, ty).is_ok());
  testing::expect_close(ty, {0, 1, 0, 0});  // first maximum wins
}

TEST(SoftmaxSession, EveryAxisAndOp) {
  Tensor x = testing::random_tensor({2, 3, 4, 5}, 7, -30.f, 30.f);
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"})
    for (int64_t axis = -4; axis < 4; ++axis) {
      OnnxBuilder m;
      m.input("x", 1, x.dims());
      auto& n = m.node(op, {"x"}, {"y"});
      OnnxBuilder::attr(n, "axis", axis);
      m.output("y");
      auto out = testing::run_model(m, {x});
      ASSERT_EQ(out.size(), 1u);
      testing::expect_close(out[0], naive(op, x, axis < 0 ? axis + 4 : axis), 1e-6, 1e-5,
                            core::str_cat(op, " axis ", axis));
    }
}

TEST(SoftmaxSession, DefaultAxisIsLastAndRank1) {
  Tensor x = testing::random_tensor({3, 4}, 9);
  OnnxBuilder m;
  m.input("x", 1, x.dims());
  m.node("Softmax", {"x"}, {"y"});
  m.output("y");
  auto out = testing::run_model(m, {x});
  ASSERT_EQ(out.size(), 1u);
  testing::expect_close(out[0], naive("Softmax", x, 1));
  Tensor v = testing::random_tensor({6}, 10);
  Tensor y = *Tensor::allocate(DType::kF32, {6});
  ASSERT_TRUE(kernels::ref::softmax(kernels::ref::SoftmaxKind::kLogSoftmax, 0, v, y).is_ok());
  testing::expect_close(y, naive("LogSoftmax", v, 0));
}

TEST(SoftmaxReference, HalfAndDouble) {
  Tensor x = testing::random_tensor({4, 7}, 11, -5.f, 5.f);
  for (DType dt : {DType::kF16, DType::kBF16, DType::kF64}) {
    Tensor xt = testing::to_dtype(x, dt), y = *Tensor::allocate(dt, x.dims());
    ASSERT_TRUE(kernels::ref::softmax(kernels::ref::SoftmaxKind::kSoftmax, 1, xt, y).is_ok());
    double tol = dt == DType::kF64 ? 1e-12 : (dt == DType::kF16 ? 2e-3 : 1e-2);
    testing::expect_close(y, naive("Softmax", xt, 1), tol, tol, core::dtype_name(dt));
  }
}

TEST(SoftmaxSession, AxisOutOfRangeNamesTheNode) {
  OnnxBuilder m;
  m.input("x", 1, {2, 3});
  auto& n = m.node("Softmax", {"x"}, {"y"}, "sm");
  OnnxBuilder::attr(n, "axis", int64_t{2});
  m.output("y");
  EXPECT_TRUE(testing::contains(testing::open_error(m, "sm"), "out of range"));
  OnnxBuilder i;
  i.input("x", 7, {2, 3});
  i.node("Softmax", {"x"}, {"y"}, "sm");
  i.output("y", 7);
  EXPECT_FALSE(testing::open_error(i, "sm").is_ok());  // integers are not accepted
}

}  // namespace
}  // namespace kestrel
