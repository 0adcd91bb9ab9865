// Fast elementwise kernels (kernels/cpu/eltwise) against the reference kernels on every ISA path:
// activations, broadcasting Add/Sub/Mul/Div, Pow by small integers, Clip, BatchNormalization.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/fast_kernel_test_util.h"

namespace kestrel::testing {
namespace {

// The last shape is big enough to be split over 2 threads.
const std::vector<core::Dims> kUnaryShapes = {{1}, {7}, {16}, {17}, {3, 31}, {2, 3, 5, 7}, {1000}, {41, 1000}, {600001}};

TEST(FastEltwise, UnaryActivations) {
  std::mt19937 rng(1);
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Erf", "Exp", "HardSigmoid", "HardSwish", "LeakyRelu", "Neg",
                         "Abs", "Sqrt", "Identity"}) {
    for (const auto& d : kUnaryShapes) {
      float lo = std::string(op) == "Sqrt" ? 0.f : -10.f;
      expect_fast_matches_reference(op, {random_f32(d, rng, lo, 10.f)}, {}, 2e-6, 1e-6);
    }
  }
  // Small magnitudes: Tanh and Erf keep their relative accuracy near 0.
  for (const char* op : {"Tanh", "Erf", "Sigmoid", "Exp"})
    expect_fast_matches_reference(op, {random_f32({333}, rng, -0.7f, 0.7f)}, {}, 2e-6, 1e-9);
}

// Exp within 1 ulp of exp in double on every ISA path over [-87, 87], where the elementwise tests above allow 2e-6
// (17 ulp). AVX2 and AVX-512 run the shared vexp (range reduction, a degree-6 minimax polynomial, the 2^n scale:
// 0.87 ulp at most here), the scalar path std::exp. Past 87 the op takes e * exp(x - 1) (vexp_full), one rounding
// more.
TEST(FastEltwise, ExpWithinAnUlp) {
  std::vector<float> xs;
  for (float x = -87.f; x < 87.f; x += 0.00137f) xs.push_back(x);
  const core::Tensor x = make<float>({static_cast<int64_t>(xs.size())}, xs);
  for (core::Isa isa : isas_to_test()) {
    runtime::KernelOptions o;
    o.isa = isa;
    auto got = run_kernel("Exp", {x}, {}, o, 1, nullptr);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    const float* y = got->outputs[0].data<float>();
    double worst = 0;
    float worst_x = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const double want = std::exp(static_cast<double>(xs[i]));
      if (want < std::numeric_limits<float>::min()) continue;  // denormal results: ulps of a different size
      const double ulp = std::ldexp(1.0, std::ilogb(static_cast<float>(want)) - 23);
      const double err = std::fabs(y[i] - want) / ulp;
      if (err > worst) worst = err, worst_x = xs[i];
    }
    EXPECT_LE(worst, 1.0) << core::isa_name(isa) << ": " << worst << " ulp at x = " << worst_x;
  }
}

TEST(FastEltwise, UnaryAttributes) {
  std::mt19937 rng(2);
  for (const auto& d : kUnaryShapes) {
    core::Tensor x = random_f32(d, rng, -8.f, 8.f);
    expect_fast_matches_reference("LeakyRelu", {x}, {{"alpha", ir::Attribute(0.3f)}});
    expect_fast_matches_reference("HardSigmoid", {x}, {{"alpha", ir::Attribute(0.1f)}, {"beta", ir::Attribute(0.4f)}});
  }
}

TEST(FastEltwise, ExpRangeAndSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  expect_fast_matches_reference("Exp", {make<float>({9}, {-100.f, -87.f, -20.f, 0.f, 20.f, 87.5f, 88.5f, 88.7f, 100.f})},
                                {}, 2e-6, 1e-30);
  // NaN in, NaN out for every activation (the reference's rule, as numpy's maximum / clip).
  const core::Tensor special = make<float>({6}, {nan, -inf, inf, -0.f, 1.f, -2.f});
  for (const char* op : {"Relu", "HardSwish", "Sigmoid", "Tanh"}) expect_fast_matches_reference(op, {special});
  expect_fast_matches_reference("LeakyRelu", {special}, {{"alpha", ir::Attribute(0.3f)}});
  expect_fast_matches_reference("HardSigmoid", {special},
                                {{"alpha", ir::Attribute(0.1f)}, {"beta", ir::Attribute(0.4f)}});
  // ... and the reference itself gives NaN (agreement alone would pass if both turned it into a number).
  runtime::KernelOptions reference;
  reference.reference_only = true;
  for (const char* op : {"Relu", "LeakyRelu", "HardSigmoid", "HardSwish", "Sigmoid", "Tanh", "Clip"}) {
    auto r = run_kernel(op, {special}, {}, reference, 1, nullptr);
    ASSERT_TRUE(r.is_ok()) << op << ": " << r.status().to_string();
    EXPECT_TRUE(std::isnan(r->outputs[0].data<float>()[0])) << op;
  }
  expect_fast_matches_reference("Abs", {make<float>({4}, {nan, -inf, inf, -0.f})});
  expect_fast_matches_reference("Tanh", {make<float>({4}, {-inf, inf, 50.f, -50.f})});
}

TEST(FastEltwise, BinaryBroadcastPatterns) {
  std::mt19937 rng(3);
  const std::vector<std::pair<core::Dims, core::Dims>> shapes = {
      {{1}, {1}},             {{17}, {17}},          {{2, 3, 5, 7}, {2, 3, 5, 7}}, {{2, 3, 5, 7}, {}},
      {{2, 3, 5, 7}, {1}},    {{1, 3, 5, 7}, {1, 3, 1, 1}}, {{2, 3, 5, 7}, {3, 1, 1}}, {{2, 3, 5, 7}, {7}},
      {{4, 33}, {33}},        {{2, 3, 5, 7}, {2, 1, 5, 1}}, {{2, 3, 5, 7}, {1, 3, 1, 7}}, {{5, 1}, {1, 6}},
      {{3, 1, 4}, {2, 1}},    {{64, 1000}, {1000}},  {{1, 96, 56, 56}, {1, 96, 1, 1}}, {{50000}, {}},
      {{3, 0, 2}, {2}},       {{8, 70001}, {70001}}, {{600001}, {}},  {{1, 16, 200, 200}, {1, 16, 1, 1}},
  };
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    for (const auto& [da, db] : shapes) {
      core::Tensor a = random_f32(da, rng), b = random_f32(db, rng, 0.5f, 3.f);
      expect_fast_matches_reference(op, {a, b});
      expect_fast_matches_reference(op, {b, a});
    }
  }
  // Rank above the fast path's fixed-size state: reference kernel, same result.
  core::Dims high(17, 1);
  high.back() = 5;
  expect_fast_matches_reference("Add", {random_f32(high, rng), random_f32({5}, rng)});
  // Division by zero and NaN follow IEEE like the reference.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  expect_fast_matches_reference("Div", {make<float>({4}, {1.f, -1.f, 0.f, nan}), make<float>({4}, {0.f, 0.f, 0.f, 1.f})});
}

TEST(FastEltwise, NonFloatFallsBackToReference) {
  expect_fast_matches_reference("Add", {iota<int32_t>({3, 4}), iota<int32_t>({4})}, {}, 0, 0, 1, false);
  expect_fast_matches_reference("Relu", {iota<int64_t>({5})}, {}, 0, 0, 1, false);
}

TEST(FastEltwise, PowBySmallIntegers) {
  std::mt19937 rng(4);
  for (const auto& d : kUnaryShapes) {
    core::Tensor x = random_f32(d, rng);
    for (float e : {1.f, 2.f, 3.f, 0.5f, -1.f})
      expect_fast_matches_reference("Pow", {x, make<float>({}, {e})}, {}, 1e-6, 1e-6, 1, true);
    expect_fast_matches_reference("Pow", {x, make<int64_t>({1}, {2})}, {}, 1e-6, 1e-6, 1, true);
  }
  // Exponent broadcast to a higher rank, and an exponent tensor: reference path.
  core::Tensor x = random_f32({3, 4}, rng, 0.1f, 2.f);
  expect_fast_matches_reference("Pow", {x, make<float>({1, 1, 1}, {2.f})});
  expect_fast_matches_reference("Pow", {x, random_f32({4}, rng)});
}

TEST(FastEltwise, ClipBounds) {
  std::mt19937 rng(5);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  core::Tensor none;
  for (const auto& d : kUnaryShapes) {
    core::Tensor x = random_f32(d, rng, -10.f, 10.f);
    expect_fast_matches_reference("Clip", {x, make<float>({}, {0.f}), make<float>({}, {6.f})});
    expect_fast_matches_reference("Clip", {x, make<float>({}, {-1.f})});
    expect_fast_matches_reference("Clip", {x, none, make<float>({}, {2.5f})});
    expect_fast_matches_reference("Clip", {x});
    expect_fast_matches_reference("Clip", {x, make<float>({}, {3.f}), make<float>({}, {1.f})});  // min > max
  }
  expect_fast_matches_reference("Clip", {make<float>({3}, {nan, -7.f, 7.f}), make<float>({}, {0.f}),
                                         make<float>({}, {6.f})});
}

TEST(FastEltwise, BatchNormalization) {
  std::mt19937 rng(6);
  for (const core::Dims& d : std::vector<core::Dims>{{2, 3, 5, 7}, {1, 1, 1}, {3, 17}, {1, 32, 112, 112}, {2, 5, 9}, {1, 8, 300, 251}}) {
    const core::Dims c = {d[1]};
    core::Tensor x = random_f32(d, rng), s = random_f32(c, rng), b = random_f32(c, rng), m = random_f32(c, rng),
                 v = random_f32(c, rng, 0.1f, 2.f);
    expect_fast_matches_reference("BatchNormalization", {x, s, b, m, v}, {{"epsilon", ir::Attribute(1e-3f)}}, 1e-5,
                                  1e-5);
  }
}

}  // namespace
}  // namespace kestrel::testing
