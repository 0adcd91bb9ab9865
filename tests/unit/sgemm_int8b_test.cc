// Weight-only int8 SGEMM (sgemm_b_int8) against a naive double loop over the dequantized weights:
// every ISA on this CPU, random shapes around the register block and across cache blocks,
// transposed / strided A, ld > N, alpha / beta, epilogues, a 2-thread pool, bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/cpu/gemm/sgemm.h"

namespace kestrel::kernels::cpu {
namespace {

using core::Isa;

struct Case {
  int64_t m = 1, n = 1, k = 1;
  bool ta = false;
  int64_t pad_b = 0, pad_c = 0;
  float alpha = 1.f, beta = 0.f;
  bool bias = false, residual = false, relu = false, sigmoid = false;
  std::string describe() const {
    return "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
           " ta=" + std::to_string(ta) + " pad_b=" + std::to_string(pad_b) + " pad_c=" + std::to_string(pad_c) +
           " alpha=" + std::to_string(alpha) + " beta=" + std::to_string(beta) + " bias=" + std::to_string(bias) +
           " residual=" + std::to_string(residual) + " relu=" + std::to_string(relu) +
           " sigmoid=" + std::to_string(sigmoid);
  }
};

void check_case(const Case& cs, Isa isa, core::ThreadPool* pool, uint32_t seed) {
  SCOPED_TRACE(cs.describe() + " isa=" + core::isa_name(isa));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uf(-1.f, 1.f);
  std::uniform_int_distribution<int> ui(-127, 127);
  const int64_t m = cs.m, n = cs.n, k = cs.k;
  const int64_t lda = cs.ta ? m : k, ldb = n + cs.pad_b, ldc = n + cs.pad_c;
  std::vector<float> a(static_cast<size_t>(std::max<int64_t>(m * k, 1)));
  for (auto& x : a) x = uf(rng);
  std::vector<int8_t> b(static_cast<size_t>(std::max<int64_t>(k * ldb, 1)));
  for (auto& x : b) x = static_cast<int8_t>(ui(rng));
  std::vector<float> scale(static_cast<size_t>(std::max<int64_t>(n, 1)));
  for (auto& x : scale) x = 0.001f + 0.02f * std::fabs(uf(rng));
  std::vector<float> bias(static_cast<size_t>(std::max<int64_t>(n, 1)));
  for (auto& x : bias) x = uf(rng);
  std::vector<float> res(static_cast<size_t>(std::max<int64_t>(m * ldc, 1)));
  for (auto& x : res) x = uf(rng);
  std::vector<float> c(static_cast<size_t>(std::max<int64_t>(m * ldc, 1)));
  for (auto& x : c) x = uf(rng);
  const std::vector<float> c0 = c;

  GemmEpilogue ep;
  if (cs.bias) {
    ep.bias_kind = GemmBias::kPerColumn;
    ep.bias = bias.data();
  }
  if (cs.residual) {
    ep.residual = res.data();
    ep.ldr = ldc;
  }
  if (cs.relu) ep.activation = GemmActivation::kRelu;
  if (cs.sigmoid) ep.activation = GemmActivation::kSigmoid;
  SgemmContext ctx{pool, isa};
  core::Status st = sgemm_b_int8(m, n, k, cs.alpha, SgemmA(a.data(), lda, cs.ta),
                                 SgemmBInt8{b.data(), ldb, scale.data()}, cs.beta, c.data(), ldc, ep, ctx);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double av = cs.ta ? a[static_cast<size_t>(p * lda + i)] : a[static_cast<size_t>(i * lda + p)];
        const double bv = static_cast<double>(b[static_cast<size_t>(p * ldb + j)]) * scale[static_cast<size_t>(j)];
        acc += av * bv;
        mag += std::fabs(av * bv);
      }
      double want = cs.alpha * acc;
      if (cs.beta != 0.f) want += cs.beta * c0[static_cast<size_t>(i * ldc + j)];
      if (cs.bias) want += bias[static_cast<size_t>(j)];
      if (cs.residual) want += res[static_cast<size_t>(i * ldc + j)];
      if (cs.relu) want = std::max(want, 0.0);
      if (cs.sigmoid) want = 1 / (1 + std::exp(-want));
      const double tol = 1e-5 * (std::fabs(cs.alpha) * mag + 3) + 1e-5;
      const float got = c[static_cast<size_t>(i * ldc + j)];
      if (!(std::fabs(got - want) <= tol)) {
        ADD_FAILURE() << "C(" << i << "," << j << ") = " << got << ", want " << want;
        return;
      }
    }
  // Padding columns of C are not touched.
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = n; j < ldc; ++j)
      ASSERT_EQ(c[static_cast<size_t>(i * ldc + j)], c0[static_cast<size_t>(i * ldc + j)]);
}

class SgemmInt8BTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (GetParam() > core::detected_isa()) GTEST_SKIP() << core::isa_name(GetParam()) << " not available on this CPU";
  }
};

TEST_P(SgemmInt8BTest, RandomShapes) {
  std::mt19937 rng(77 + static_cast<int>(GetParam()));
  const int64_t sizes[] = {1, 2, 3, 7, 8, 13, 15, 16, 17, 31, 32, 33, 47, 64, 97};
  auto pick = [&] { return sizes[rng() % std::size(sizes)]; };
  for (int iter = 0; iter < 60; ++iter) {
    Case cs;
    cs.m = pick();
    cs.n = pick();
    cs.k = pick();
    cs.ta = rng() & 1;
    cs.pad_b = (rng() & 1) ? static_cast<int64_t>(rng() % 9) : 0;
    cs.pad_c = (rng() & 1) ? static_cast<int64_t>(rng() % 9) : 0;
    const float alphas[] = {1.f, 0.5f, -2.f};
    const float betas[] = {0.f, 1.f, -0.5f};
    cs.alpha = alphas[rng() % 3];
    cs.beta = betas[rng() % 3];
    cs.bias = rng() & 1;
    cs.residual = rng() & 1;
    cs.relu = rng() & 1;
    check_case(cs, GetParam(), nullptr, 1000 + static_cast<uint32_t>(iter));
  }
}

TEST_P(SgemmInt8BTest, EdgesAndCacheBlocks) {
  auto shape = sgemm_tile_shape(GetParam());
  ASSERT_TRUE(shape.is_ok());
  const int64_t mr = shape->mr, nr = shape->nr;
  uint32_t seed = 2000;
  for (int64_t m : {mr - 1, mr, mr + 1})
    for (int64_t n : {nr - 1, nr, nr + 1, 2 * nr + 5}) {
      if (m <= 0 || n <= 0) continue;
      check_case({.m = m, .n = n, .k = 11, .pad_c = 2, .bias = true, .sigmoid = true}, GetParam(), nullptr, seed++);
    }
  // Deep K crosses KC, tall M crosses MC, wide N crosses NC.
  check_case({.m = 130, .n = 300, .k = 1100, .beta = 0.5f, .bias = true}, GetParam(), nullptr, seed++);
  check_case({.m = 2100, .n = 40, .k = 70, .relu = true}, GetParam(), nullptr, seed++);
  check_case({.m = 5, .n = 1030, .k = 600, .pad_b = 3}, GetParam(), nullptr, seed++);
}

TEST_P(SgemmInt8BTest, SmallMWidensInRegisters) {
  // M <= 4 takes the register-widening path (gemv_b_i8), M = 5 the panel path.
  core::ThreadPool pool(2);
  uint32_t seed = 2500;
  for (int64_t m : {1, 2, 3, 4, 5})
    for (int64_t n : {1, 63, 64, 65, 200})
      for (int64_t k : {1, 50, 700}) {
        Case cs{.m = m, .n = n, .k = k, .ta = (seed & 1) != 0, .pad_b = 2, .pad_c = 1};
        cs.alpha = (seed & 2) ? 0.5f : 1.f;
        cs.beta = (seed & 4) ? 0.5f : 0.f;
        cs.bias = seed & 8;
        cs.residual = seed & 16;
        cs.relu = (seed % 3) == 0;
        cs.sigmoid = (seed % 3) == 1;
        check_case(cs, GetParam(), (seed & 32) ? &pool : nullptr, seed);
        ++seed;
      }
}

TEST_P(SgemmInt8BTest, TwoThreadPoolAndDegenerate) {
  core::ThreadPool pool(2);
  check_case({.m = 256, .n = 300, .k = 200, .bias = true, .residual = true}, GetParam(), &pool, 3000);
  check_case({.m = 1, .n = 777, .k = 130}, GetParam(), &pool, 3001);
  check_case({.m = 17, .n = 33, .k = 0, .beta = 0.5f, .bias = true}, GetParam(), nullptr, 3002);
  check_case({.m = 5, .n = 6, .k = 7, .alpha = 0.f, .beta = 2.f}, GetParam(), nullptr, 3003);
  for (int64_t m : {0, 1})
    for (int64_t n : {0, 1}) check_case({.m = m, .n = n, .k = 3, .beta = 1.f}, GetParam(), nullptr, 3004);
}

INSTANTIATE_TEST_SUITE_P(AllIsas, SgemmInt8BTest, ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                           return std::string(core::isa_name(info.param));
                         });

TEST(SgemmInt8BArgs, RejectsBadArguments) {
  std::vector<float> a(64, 1.f), c(64, 0.f), s(8, 1.f);
  std::vector<int8_t> b(64, 1);
  EXPECT_FALSE(sgemm_b_int8(4, 4, 4, 1.f, SgemmA(a.data(), 4), SgemmBInt8{b.data(), 3, s.data()}, 0.f, c.data(), 4)
                   .is_ok());  // ld < N
  EXPECT_FALSE(sgemm_b_int8(4, 4, 4, 1.f, SgemmA(a.data(), 4), SgemmBInt8{b.data(), 4, nullptr}, 0.f, c.data(), 4)
                   .is_ok());  // no scale
  EXPECT_FALSE(sgemm_b_int8(4, 4, 4, 1.f, SgemmA(a.data(), 4), SgemmBInt8{nullptr, 4, s.data()}, 0.f, c.data(), 4)
                   .is_ok());  // no data
  EXPECT_FALSE(
      sgemm_b_int8(-1, 4, 4, 1.f, SgemmA(a.data(), 4), SgemmBInt8{b.data(), 4, s.data()}, 0.f, c.data(), 4).is_ok());
  EXPECT_TRUE(
      sgemm_b_int8(4, 4, 4, 1.f, SgemmA(a.data(), 4), SgemmBInt8{b.data(), 4, s.data()}, 0.f, c.data(), 4).is_ok());
  EXPECT_FLOAT_EQ(c[0], 4.f);
}

}  // namespace
}  // namespace kestrel::kernels::cpu
