// Tests of the reductions: reference kernels against naive computations written here (every axis
// subset over shapes with 1s and primes), hand-computed edge cases (empty axes, NaN, overflow, ties),
// and the ONNX path through Session (opset canonicalization, keepdims, noop, run-time axes / K).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "common/onnx_builder.h"
#include "common/op_test_util.h"
#include "common/value_test_util.h"
#include "core/tensor.h"
#include "kernels/reference/reduce.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

using core::Dims;
using core::DType;
using core::Tensor;
using kernels::ref::ReduceOp;
using testing::OnnxBuilder;
using testing::unravel;

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor random_f32(const Dims& dims, uint32_t seed, float lo = -3.f, float hi = 3.f) {
  Tensor t = Tensor::allocate(DType::kF32, dims).value();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

// Naive reduction: for each output element, scan the whole input for elements whose kept
// coordinates match. Independent of the kernel's stride walk.
std::vector<double> naive_reduce(ReduceOp op, const Tensor& x, const std::vector<bool>& mask) {
  Dims out_dims;
  for (size_t d = 0; d < mask.size(); ++d)
    if (!mask[d]) out_dims.push_back(x.dims()[d]);
  int64_t m = core::num_elements(out_dims);
  std::vector<double> out;
  for (int64_t j = 0; j < m; ++j) {
    Dims oj = unravel(j, out_dims);
    std::vector<double> vals;
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      Dims xi = unravel(i, x.dims());
      Dims kept;
      for (size_t d = 0; d < mask.size(); ++d)
        if (!mask[d]) kept.push_back(xi[d]);
      if (kept == oj) vals.push_back(x.element_as_double(i));
    }
    double r = 0;
    switch (op) {
      case ReduceOp::kSum: for (double v : vals) r += v; break;
      case ReduceOp::kMean: for (double v : vals) r += v; r /= static_cast<double>(vals.size()); break;
      case ReduceOp::kMax: r = *std::max_element(vals.begin(), vals.end()); break;
      case ReduceOp::kMin: r = *std::min_element(vals.begin(), vals.end()); break;
      case ReduceOp::kProd: r = 1; for (double v : vals) r *= v; break;
      case ReduceOp::kL1: for (double v : vals) r += std::fabs(v); break;
      case ReduceOp::kL2: for (double v : vals) r += v * v; r = std::sqrt(r); break;
      case ReduceOp::kLogSum: for (double v : vals) r += v; r = std::log(r); break;
      case ReduceOp::kLogSumExp: for (double v : vals) r += std::exp(v); r = std::log(r); break;
      case ReduceOp::kSumSquare: for (double v : vals) r += v * v; break;
    }
    out.push_back(r);
  }
  return out;
}

Tensor run_reduce(ReduceOp op, const Tensor& x, const std::vector<bool>& mask) {
  Dims out_dims;
  for (size_t d = 0; d < mask.size(); ++d)
    if (!mask[d]) out_dims.push_back(x.dims()[d]);
  Tensor y = Tensor::allocate(x.dtype(), out_dims).value();
  core::Status st = kernels::ref::reduce(op, x, mask, y);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return y;
}

TEST(ReduceKernel, EveryOpEveryAxisSubsetMatchesNaive) {
  const std::vector<Dims> shapes = {{1}, {7}, {2, 3}, {3, 1, 5}, {2, 3, 1, 5}, {5, 7}};
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax,    ReduceOp::kMin,
                          ReduceOp::kProd, ReduceOp::kL1,  ReduceOp::kL2,     ReduceOp::kLogSum,
                          ReduceOp::kLogSumExp, ReduceOp::kSumSquare};
  uint32_t seed = 1;
  for (const Dims& dims : shapes) {
    for (ReduceOp op : ops) {
      // LogSum needs positive sums; Prod stays moderate with values near 1.
      Tensor x = op == ReduceOp::kLogSum ? random_f32(dims, seed++, 0.1f, 2.f)
                 : op == ReduceOp::kProd ? random_f32(dims, seed++, 0.5f, 1.5f)
                                         : random_f32(dims, seed++);
      const size_t rank = dims.size();
      for (uint32_t bits = 0; bits < (1u << rank); ++bits) {
        std::vector<bool> mask(rank);
        for (size_t d = 0; d < rank; ++d) mask[d] = (bits >> d) & 1;
        Tensor y = run_reduce(op, x, mask);
        std::vector<double> want = naive_reduce(op, x, mask);
        ASSERT_EQ(y.num_elements(), static_cast<int64_t>(want.size()));
        for (size_t j = 0; j < want.size(); ++j)
          ASSERT_NEAR(y.data<float>()[j], want[j], 1e-5 * (1 + std::fabs(want[j])))
              << "op " << static_cast<int>(op) << " dims " << core::dims_to_string(dims) << " mask " << bits;
      }
    }
  }
}

TEST(ReduceKernel, MaskFromAxes) {
  auto m = kernels::ref::reduce_mask({-1, 0}, 3);
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ(*m, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(*kernels::ref::reduce_mask({}, 2), (std::vector<bool>{true, true}));  // empty: all
  EXPECT_FALSE(kernels::ref::reduce_mask({3}, 3).is_ok());
  EXPECT_FALSE(kernels::ref::reduce_mask({-4}, 3).is_ok());
  EXPECT_FALSE(kernels::ref::reduce_mask({1, -2}, 3).is_ok());  // the same axis twice
}

TEST(ReduceKernel, EmptyReductionGivesIdentity) {
  Tensor x = Tensor::allocate(DType::kF32, {2, 0, 3}).value();
  std::vector<bool> mask = {false, true, false};
  auto first = [&](ReduceOp op) { return static_cast<double>(run_reduce(op, x, mask).data<float>()[0]); };
  EXPECT_EQ(first(ReduceOp::kSum), 0);
  EXPECT_EQ(first(ReduceOp::kProd), 1);
  EXPECT_EQ(first(ReduceOp::kL2), 0);
  EXPECT_TRUE(std::isnan(first(ReduceOp::kMean)));
  EXPECT_EQ(first(ReduceOp::kMax), -kInf);
  EXPECT_EQ(first(ReduceOp::kMin), kInf);
  EXPECT_EQ(first(ReduceOp::kLogSum), -kInf);
  EXPECT_EQ(first(ReduceOp::kLogSumExp), -kInf);
  Tensor xi = Tensor::allocate(DType::kI32, {0, 2}).value();
  Tensor mean = run_reduce(ReduceOp::kMean, xi, {true, false});
  EXPECT_EQ(mean.data<int32_t>()[0], 0);  // no division by zero
  EXPECT_EQ(run_reduce(ReduceOp::kMax, xi, {true, false}).data<int32_t>()[1], std::numeric_limits<int32_t>::lowest());
}

TEST(ReduceKernel, MaxMinPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_vector<float>({1, nan, 3, 4, 5, 6}, {2, 3});
  Tensor mx = run_reduce(ReduceOp::kMax, x, {false, true});
  EXPECT_TRUE(std::isnan(mx.data<float>()[0]));
  EXPECT_EQ(mx.data<float>()[1], 6);
  Tensor mn = run_reduce(ReduceOp::kMin, x, {true, false});
  EXPECT_EQ(mn.data<float>()[0], 1);
  EXPECT_TRUE(std::isnan(mn.data<float>()[1]));
}

TEST(ReduceKernel, LogSumExpDoesNotOverflow) {
  Tensor x = Tensor::from_vector<float>({1000, 1000, -1000, -1000}, {2, 2});
  Tensor y = run_reduce(ReduceOp::kLogSumExp, x, {false, true});
  EXPECT_NEAR(y.data<float>()[0], 1000 + std::log(2.0), 1e-3);
  EXPECT_NEAR(y.data<float>()[1], -1000 + std::log(2.0), 1e-3);
}

TEST(ReduceKernel, IntegersAreExactAndWrap) {
  Tensor x = Tensor::from_vector<int32_t>({-7, 0, 3, 4}, {2, 2});
  EXPECT_EQ(run_reduce(ReduceOp::kMean, x, {false, true}).data<int32_t>()[0], -3);  // -7/2 truncates
  EXPECT_EQ(run_reduce(ReduceOp::kL1, x, {true, true}).data<int32_t>()[0], 14);
  EXPECT_EQ(run_reduce(ReduceOp::kSumSquare, x, {true, true}).data<int32_t>()[0], 74);
  EXPECT_EQ(run_reduce(ReduceOp::kL2, x, {true, true}).data<int32_t>()[0], 8);  // sqrt(74) truncated
  Tensor big = Tensor::from_vector<int32_t>({std::numeric_limits<int32_t>::max(), 1});
  EXPECT_EQ(run_reduce(ReduceOp::kSum, big, {true}).data<int32_t>()[0], std::numeric_limits<int32_t>::min());
  // 2^62 + 1 vs 2^62: a double comparison could not tell them apart.
  Tensor i64 = Tensor::from_vector<int64_t>({(int64_t{1} << 62), (int64_t{1} << 62) + 1, -5});
  EXPECT_EQ(run_reduce(ReduceOp::kMax, i64, {true}).data<int64_t>()[0], (int64_t{1} << 62) + 1);
  EXPECT_EQ(run_reduce(ReduceOp::kProd, i64, {true}).data<int64_t>()[0],
            static_cast<int64_t>(static_cast<uint64_t>(int64_t{1} << 62) * ((uint64_t{1} << 62) + 1) *
                                 static_cast<uint64_t>(int64_t{-5})));
  Tensor u8 = Tensor::from_vector<uint8_t>({200, 100});
  EXPECT_EQ(run_reduce(ReduceOp::kSum, u8, {true}).data<uint8_t>()[0], 44);  // 300 mod 256
  EXPECT_EQ(run_reduce(ReduceOp::kMin, u8, {true}).data<uint8_t>()[0], 100);
}

TEST(ReduceKernel, BoolMaxMinOnly) {
  Tensor x = Tensor::from_vector<bool>({true, false, false, false}, {2, 2});
  Tensor any = run_reduce(ReduceOp::kMax, x, {false, true});
  EXPECT_TRUE(any.data<bool>()[0]);
  EXPECT_FALSE(any.data<bool>()[1]);
  EXPECT_FALSE(run_reduce(ReduceOp::kMin, x, {false, true}).data<bool>()[0]);
  Tensor y = Tensor::allocate(DType::kBool, {2}).value();
  EXPECT_FALSE(kernels::ref::reduce(ReduceOp::kSum, x, {false, true}, y).is_ok());
}

TEST(ReduceKernel, Float16AndDouble) {
  Tensor h = Tensor::allocate(DType::kF16, {3}).value();
  for (int i = 0; i < 3; ++i) h.data<core::Float16>()[i] = core::Float16(0.5f * static_cast<float>(i + 1));
  Tensor hy = run_reduce(ReduceOp::kSum, h, {true});
  EXPECT_EQ(static_cast<float>(hy.data<core::Float16>()[0]), 3.f);
  // f32 accumulates in double: 1e8 + 1 is 1e8 in float, so a float sum would give 0 here.
  Tensor f = Tensor::from_vector<float>({1e8f, 1.f, -1e8f});
  EXPECT_EQ(run_reduce(ReduceOp::kSum, f, {true}).data<float>()[0], 1.f);
  Tensor d = Tensor::from_vector<double>({0.1, 0.2});
  EXPECT_EQ(run_reduce(ReduceOp::kSum, d, {true}).data<double>()[0], 0.1 + 0.2);
}

TEST(ReduceKernel, RejectsMismatchedOutput) {
  Tensor x = random_f32({2, 3}, 5);
  Tensor wrong = Tensor::allocate(DType::kF32, {3}).value();
  EXPECT_FALSE(kernels::ref::reduce(ReduceOp::kSum, x, {false, true}, wrong).is_ok());
  Tensor wrong_type = Tensor::allocate(DType::kF64, {2}).value();
  EXPECT_FALSE(kernels::ref::reduce(ReduceOp::kSum, x, {false, true}, wrong_type).is_ok());
  EXPECT_FALSE(kernels::ref::reduce(ReduceOp::kSum, x, {true}, wrong).is_ok());
}

// --- ArgMax / ArgMin

int64_t naive_arg(bool is_max, const std::vector<double>& v, bool last) {
  int64_t best = 0;
  for (int64_t j = 1; j < static_cast<int64_t>(v.size()); ++j) {
    double a = v[static_cast<size_t>(j)], b = v[static_cast<size_t>(best)];
    if ((is_max ? a > b : a < b) || (last && a == b)) best = j;
  }
  return best;
}

TEST(ArgReduceKernel, MatchesNaiveWithTies) {
  const std::vector<Dims> shapes = {{1}, {7}, {3, 5}, {2, 1, 7}, {2, 3, 5}};
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> small(-2, 2);  // many ties
  for (const Dims& dims : shapes) {
    Tensor x = Tensor::allocate(DType::kF32, dims).value();
    for (float& v : x.span<float>()) v = static_cast<float>(small(rng));
    for (int64_t axis = 0; axis < static_cast<int64_t>(dims.size()); ++axis) {
      for (bool is_max : {true, false}) {
        for (bool last : {false, true}) {
          Dims out_dims = dims;
          out_dims[static_cast<size_t>(axis)] = 1;
          Tensor y = Tensor::allocate(DType::kI64, out_dims).value();
          ASSERT_TRUE(kernels::ref::arg_reduce(is_max, x, axis, last, y).is_ok());
          for (int64_t j = 0; j < y.num_elements(); ++j) {
            Dims oj = unravel(j, out_dims);
            std::vector<double> line;
            for (int64_t k = 0; k < dims[static_cast<size_t>(axis)]; ++k) {
              Dims xi = oj;
              xi[static_cast<size_t>(axis)] = k;
              int64_t flat = 0;
              for (size_t d = 0; d < dims.size(); ++d) flat = flat * dims[d] + xi[d];
              line.push_back(x.element_as_double(flat));
            }
            ASSERT_EQ(y.data<int64_t>()[j], naive_arg(is_max, line, last))
                << core::dims_to_string(dims) << " axis " << axis << " max " << is_max << " last " << last;
          }
        }
      }
    }
  }
}

TEST(ArgReduceKernel, NaNAndIntegersAndErrors) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_vector<float>({1, nan, 5, nan});
  Tensor y = Tensor::allocate(DType::kI64, {1}).value();
  ASSERT_TRUE(kernels::ref::arg_reduce(true, x, 0, false, y).is_ok());
  EXPECT_EQ(y.data<int64_t>()[0], 1);  // first NaN, as numpy
  ASSERT_TRUE(kernels::ref::arg_reduce(false, x, 0, true, y).is_ok());
  EXPECT_EQ(y.data<int64_t>()[0], 3);
  Tensor big = Tensor::from_vector<int64_t>({(int64_t{1} << 62) + 1, int64_t{1} << 62});
  ASSERT_TRUE(kernels::ref::arg_reduce(false, big, 0, false, y).is_ok());
  EXPECT_EQ(y.data<int64_t>()[0], 1);
  Tensor empty = Tensor::allocate(DType::kF32, {2, 0}).value();
  Tensor y2 = Tensor::allocate(DType::kI64, {2}).value();
  EXPECT_FALSE(kernels::ref::arg_reduce(true, empty, 1, false, y2).is_ok());
  EXPECT_FALSE(kernels::ref::arg_reduce(true, x, 1, false, y).is_ok());  // axis out of range
}

// --- TopK

TEST(TopKKernel, MatchesStableSort) {
  const std::vector<Dims> shapes = {{1}, {7}, {3, 5}, {2, 7, 3}};
  std::mt19937 rng(4);
  std::uniform_int_distribution<int> small(-3, 3);
  for (const Dims& dims : shapes) {
    Tensor x = Tensor::allocate(DType::kF32, dims).value();
    for (float& v : x.span<float>()) v = static_cast<float>(small(rng));
    for (int64_t axis = 0; axis < static_cast<int64_t>(dims.size()); ++axis) {
      const int64_t n = dims[static_cast<size_t>(axis)];
      for (int64_t k : {int64_t{0}, int64_t{1}, n / 2, n}) {
        for (bool largest : {true, false}) {
          Dims od = dims;
          od[static_cast<size_t>(axis)] = k;
          Tensor vals = Tensor::allocate(DType::kF32, od).value();
          Tensor idx = Tensor::allocate(DType::kI64, od).value();
          kernels::ref::TopKParams p{axis, k, largest, true};
          ASSERT_TRUE(kernels::ref::top_k(p, x, vals, idx).is_ok());
          for (int64_t j = 0; j < vals.num_elements(); ++j) {
            Dims oj = unravel(j, od);
            std::vector<std::pair<double, int64_t>> line;
            for (int64_t t = 0; t < n; ++t) {
              Dims xi = oj;
              xi[static_cast<size_t>(axis)] = t;
              int64_t flat = 0;
              for (size_t d = 0; d < dims.size(); ++d) flat = flat * dims[d] + xi[d];
              line.emplace_back(x.element_as_double(flat), t);
            }
            std::stable_sort(line.begin(), line.end(), [&](const auto& a, const auto& b) {
              return largest ? a.first > b.first : a.first < b.first;
            });
            size_t r = static_cast<size_t>(oj[static_cast<size_t>(axis)]);
            ASSERT_EQ(vals.data<float>()[j], line[r].first);
            ASSERT_EQ(idx.data<int64_t>()[j], line[r].second)
                << core::dims_to_string(dims) << " axis " << axis << " k " << k << " largest " << largest;
          }
        }
      }
    }
  }
}

TEST(TopKKernel, TiesNaNAndBadK) {
  Tensor x = Tensor::from_vector<float>({1, 3, 3, 2, 3});
  Tensor v = Tensor::allocate(DType::kF32, {2}).value();
  Tensor i = Tensor::allocate(DType::kI64, {2}).value();
  ASSERT_TRUE(kernels::ref::top_k({0, 2, true, true}, x, v, i).is_ok());
  EXPECT_EQ(i.data<int64_t>()[0], 1);
  EXPECT_EQ(i.data<int64_t>()[1], 2);
  ASSERT_TRUE(kernels::ref::top_k({0, 2, false, true}, x, v, i).is_ok());
  EXPECT_EQ(i.data<int64_t>()[0], 0);
  EXPECT_EQ(i.data<int64_t>()[1], 3);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor xn = Tensor::from_vector<float>({1, nan, 2});
  ASSERT_TRUE(kernels::ref::top_k({0, 2, true, true}, xn, v, i).is_ok());
  EXPECT_EQ(i.data<int64_t>()[0], 1);  // NaN is the largest
  EXPECT_EQ(i.data<int64_t>()[1], 2);
  ASSERT_TRUE(kernels::ref::top_k({0, 2, false, true}, xn, v, i).is_ok());
  EXPECT_EQ(i.data<int64_t>()[0], 0);
  EXPECT_EQ(i.data<int64_t>()[1], 2);
  Tensor v6 = Tensor::allocate(DType::kF32, {6}).value();
  Tensor i6 = Tensor::allocate(DType::kI64, {6}).value();
  EXPECT_FALSE(kernels::ref::top_k({0, 6, true, true}, x, v6, i6).is_ok());
  EXPECT_FALSE(kernels::ref::top_k({0, -1, true, true}, x, v, i).is_ok());
  EXPECT_FALSE(kernels::ref::top_k({0, 3, true, true}, x, v, i).is_ok());  // outputs too small for k
}

// --- CumSum

TEST(CumSumKernel, SpecExamples) {
  Tensor x = Tensor::from_vector<double>({1, 2, 3, 4, 5});
  auto run = [&](bool exclusive, bool reverse) {
    Tensor y = Tensor::allocate(DType::kF64, {5}).value();
    EXPECT_TRUE(kernels::ref::cum_sum({0, exclusive, reverse}, x, y).is_ok());
    return std::vector<double>(y.data<double>(), y.data<double>() + 5);
  };
  EXPECT_EQ(run(false, false), (std::vector<double>{1, 3, 6, 10, 15}));
  EXPECT_EQ(run(true, false), (std::vector<double>{0, 1, 3, 6, 10}));
  EXPECT_EQ(run(false, true), (std::vector<double>{15, 14, 12, 9, 5}));
  EXPECT_EQ(run(true, true), (std::vector<double>{14, 12, 9, 5, 0}));
}

TEST(CumSumKernel, EveryAxisMatchesNaive) {
  const Dims dims = {2, 3, 5};
  Tensor x = Tensor::allocate(DType::kI32, dims).value();
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<int32_t>()[i] = static_cast<int32_t>(i * 7 % 11) - 5;
  for (int64_t axis = 0; axis < 3; ++axis) {
    for (bool exclusive : {false, true}) {
      for (bool reverse : {false, true}) {
        Tensor y = Tensor::allocate(DType::kI32, dims).value();
        ASSERT_TRUE(kernels::ref::cum_sum({axis, exclusive, reverse}, x, y).is_ok());
        for (int64_t j = 0; j < y.num_elements(); ++j) {
          Dims pos = unravel(j, dims);
          int64_t want = 0;
          for (int64_t t = 0; t < dims[static_cast<size_t>(axis)]; ++t) {
            int64_t me = pos[static_cast<size_t>(axis)];
            bool in = reverse ? (exclusive ? t > me : t >= me) : (exclusive ? t < me : t <= me);
            if (!in) continue;
            Dims xi = pos;
            xi[static_cast<size_t>(axis)] = t;
            want += x.data<int32_t>()[(xi[0] * 3 + xi[1]) * 5 + xi[2]];
          }
          ASSERT_EQ(y.data<int32_t>()[j], want) << "axis " << axis << " excl " << exclusive << " rev " << reverse;
        }
      }
    }
  }
  Tensor b = Tensor::allocate(DType::kBool, {2}).value();
  EXPECT_FALSE(kernels::ref::cum_sum({0, false, false}, b, b).is_ok());
}

// --- Through Session: importer canonicalization, inference, bindings

std::unique_ptr<runtime::Session> open(const std::string& bytes) {
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? std::move(s).value() : nullptr;
}

using testing::values;

TEST(ReduceSession, ReduceMeanAxesAttributeBeforeOpset18) {
  OnnxBuilder b(13);
  b.input("x", 1, {2, 3});
  auto& n = b.node("ReduceMean", {"x"}, {"y"});
  OnnxBuilder::attr(n, "axes", std::vector<int64_t>{-1});
  OnnxBuilder::attr(n, "keepdims", int64_t{0});
  b.output("y");
  auto s = open(b.bytes());
  ASSERT_TRUE(s);
  std::vector<Tensor> out;
  ASSERT_TRUE(s->run({{"x", Tensor::from_vector<float>({1, 2, 3, 4, 5, 9}, {2, 3})}}, out).is_ok());
  EXPECT_EQ(out[0].dims(), (Dims{2}));
  EXPECT_EQ(values(out[0]), (std::vector<float>{2, 6}));
}

TEST(ReduceSession, AxesInputKeepdimsAndNoop) {
  for (int64_t noop : {0, 1}) {
    OnnxBuilder b(18);
    b.input("x", 1, {2, 3}).initializer_i64("axes", {0}, {});
    auto& n = b.node("ReduceSumSquare", {"x", "axes"}, {"y"});
    OnnxBuilder::attr(n, "noop_with_empty_axes", noop);
    b.output("y");
    auto s = open(b.bytes());
    ASSERT_TRUE(s);
    std::vector<Tensor> out;
    ASSERT_TRUE(s->run({{"x", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})}}, out).is_ok());
    if (noop) {
      EXPECT_EQ(out[0].dims(), (Dims{2, 3}));  // the input, unchanged
      EXPECT_EQ(values(out[0]), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    } else {
      EXPECT_EQ(out[0].dims(), (Dims{1, 1}));
      EXPECT_EQ(values(out[0]), (std::vector<float>{91}));
    }
  }
}

TEST(ReduceSession, ReduceSumAttributeAtOpset11AndRuntimeAxesAt13) {
  {
    OnnxBuilder b(11);
    b.input("x", 1, {2, 3});
    auto& n = b.node("ReduceSum", {"x"}, {"y"});
    OnnxBuilder::attr(n, "axes", std::vector<int64_t>{0});
    b.output("y");
    auto s = open(b.bytes());
    ASSERT_TRUE(s);
    std::vector<Tensor> out;
    ASSERT_TRUE(s->run({{"x", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})}}, out).is_ok());
    EXPECT_EQ(out[0].dims(), (Dims{1, 3}));
    EXPECT_EQ(values(out[0]), (std::vector<float>{5, 7, 9}));
  }
  // Axes fed at run time: the output shape is only known then.
  OnnxBuilder b(13);
  b.input("x", 1, {2, 3}).input("axes", 7, {1});
  auto& n = b.node("ReduceSum", {"x", "axes"}, {"y"});
  OnnxBuilder::attr(n, "keepdims", int64_t{0});
  b.output("y");
  auto s = open(b.bytes());
  ASSERT_TRUE(s);
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  for (int64_t axis : {0, 1, -1}) {
    std::vector<Tensor> out;
    ASSERT_TRUE(s->run({{"x", x}, {"axes", Tensor::from_vector<int64_t>({axis}, {1})}}, out).is_ok());
    std::vector<float> want = axis == 0 ? std::vector<float>{5, 7, 9} : std::vector<float>{6, 15};
    EXPECT_EQ(values(out[0]), want) << axis;
  }
  std::vector<Tensor> out;
  auto bad = s->run({{"x", x}, {"axes", Tensor::from_vector<int64_t>({2}, {1})}}, out);
  EXPECT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("out of range"), std::string::npos) << bad.message();
}

TEST(ReduceSession, BadAxesFailAtLoadNamingTheNode) {
  OnnxBuilder b(13);
  b.input("x", 1, {2, 3});
  auto& n = b.node("ReduceMax", {"x"}, {"y"}, "rmax");
  OnnxBuilder::attr(n, "axes", std::vector<int64_t>{1, -1});
  b.output("y");
  std::string bytes = b.bytes();
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("rmax"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("repeated"), std::string::npos) << s.status().message();
}

TEST(ReduceSession, ArgMaxTopKCumSum) {
  OnnxBuilder b(13);
  b.input("x", 1, {2, 3}).input("k", 7, {1}).initializer_i64("axis", {}, {1});
  auto& am = b.node("ArgMax", {"x"}, {"am"});
  OnnxBuilder::attr(am, "axis", int64_t{1});
  OnnxBuilder::attr(am, "keepdims", int64_t{0});
  auto& tk = b.node("TopK", {"x", "k"}, {"tv", "ti"});
  OnnxBuilder::attr(tk, "largest", int64_t{0});
  auto& cs = b.node("CumSum", {"x", "axis"}, {"cs"});
  OnnxBuilder::attr(cs, "reverse", int64_t{1});
  b.output("am", 7).output("tv").output("ti", 7).output("cs");
  auto s = open(b.bytes());
  ASSERT_TRUE(s);
  std::vector<Tensor> out;
  Tensor x = Tensor::from_vector<float>({3, 1, 2, 0, 5, 5}, {2, 3});
  ASSERT_TRUE(s->run({{"x", x}, {"k", Tensor::from_vector<int64_t>({2}, {1})}}, out).is_ok());
  EXPECT_EQ(out[0].dims(), (Dims{2}));
  EXPECT_EQ(out[0].data<int64_t>()[0], 0);
  EXPECT_EQ(out[0].data<int64_t>()[1], 1);
  EXPECT_EQ(out[1].dims(), (Dims{2, 2}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{1, 2, 0, 5}));
  EXPECT_EQ(std::vector<int64_t>(out[2].data<int64_t>(), out[2].data<int64_t>() + 4), (std::vector<int64_t>{1, 2, 0, 1}));
  EXPECT_EQ(values(out[3]), (std::vector<float>{6, 3, 2, 10, 10, 5}));
  auto too_big = s->run({{"x", x}, {"k", Tensor::from_vector<int64_t>({4}, {1})}}, out);
  EXPECT_FALSE(too_big.is_ok());
}

TEST(ReduceSession, TopKAttributeBeforeOpset10) {
  OnnxBuilder b(9);
  b.input("x", 1, {4});
  auto& tk = b.node("TopK", {"x"}, {"v", "i"});
  OnnxBuilder::attr(tk, "k", int64_t{2});
  b.output("v").output("i", 7);
  auto s = open(b.bytes());
  ASSERT_TRUE(s);
  std::vector<Tensor> out;
  ASSERT_TRUE(s->run({{"x", Tensor::from_vector<float>({1, 4, 2, 3})}}, out).is_ok());
  EXPECT_EQ(values(out[0]), (std::vector<float>{4, 3}));
  EXPECT_EQ(out[1].data<int64_t>()[0], 1);
  EXPECT_EQ(out[1].data<int64_t>()[1], 3);
}

}  // namespace
}  // namespace kestrel
