// bf16 GEMM (bf16_gemm) against a double loop over the bf16-rounded operands: random shapes around the 6 x 64 tile
// and the 256-column blocks (1, primes, odd K), leading dimensions past N, every epilogue, a 2-thread pool, the
// residual read from C itself, bad arguments. Skipped (visibly) on CPUs without AVX512_BF16.
#include "kernels/cpu/gemm/bf16_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"

namespace kestrel::kernels::cpu {
namespace {

TEST(Bf16Round, NearestEvenAndSpecials) {
  EXPECT_EQ(bf16_round(1.f), 1.f);
  EXPECT_EQ(bf16_round(1.f + 0x1p-8f), 1.f);                       // tie: to even (down)
  EXPECT_EQ(bf16_round(1.f + 0x1p-7f + 0x1p-8f), 1.f + 0x1p-6f);   // tie: to even (up)
  EXPECT_EQ(bf16_round(1.f + 0x1p-8f + 0x1p-20f), 1.f + 0x1p-7f);  // above the tie
  EXPECT_EQ(bf16_round(-3.f), -3.f);
  EXPECT_EQ(bf16_round(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(bf16_round(std::numeric_limits<float>::max()), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bf16_round(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(bf16_round(std::numeric_limits<float>::signaling_NaN())));
}

float activate(float x, GemmActivation act, float alpha, float beta) {
  switch (act) {
    case GemmActivation::kNone:
      return x;
    case GemmActivation::kRelu:
      return x > 0 ? x : 0;
    case GemmActivation::kClip:
      return std::min(std::max(x, alpha), beta);
    case GemmActivation::kHardSwish:
      return x * std::min(1.f, std::max(0.f, x / 6 + 0.5f));
    case GemmActivation::kSilu:
      return x / (1 + std::exp(-x));
    default:
      ADD_FAILURE() << "activation not covered by this test";
      return x;
  }
}

struct Case {
  int64_t m, n, k, pad_b = 0, pad_c = 0;
  bool bias = false, residual = false, residual_in_c = false;
  GemmActivation act = GemmActivation::kNone;
  std::string describe() const {
    return "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
           " pad_b=" + std::to_string(pad_b) + " pad_c=" + std::to_string(pad_c) + " bias=" + std::to_string(bias) +
           " residual=" + std::to_string(residual) + " in_c=" + std::to_string(residual_in_c) +
           " act=" + std::to_string(static_cast<int>(act));
  }
};

void check_case(const Case& cs, core::ThreadPool* pool, uint32_t seed) {
  SCOPED_TRACE(cs.describe());
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uf(-1.f, 1.f);
  const int64_t m = cs.m, n = cs.n, k = cs.k, ldb = n + cs.pad_b, ldc = n + cs.pad_c;
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * ldb)), bias(static_cast<size_t>(m)),
      c(static_cast<size_t>(m * ldc));
  for (auto* v : {&a, &b, &bias, &c})
    for (auto& x : *v) x = uf(rng);
  std::vector<float> res = c;  // the residual: a copy of C, or C itself
  const std::vector<float> c0 = c;
  GemmEpilogue ep;
  if (cs.bias) {
    ep.bias_kind = GemmBias::kPerRow;
    ep.bias = bias.data();
  }
  if (cs.residual) {
    ep.residual = cs.residual_in_c ? c.data() : res.data();
    ep.ldr = ldc;
  }
  ep.activation = cs.act;
  ep.act_alpha = 0.f;
  ep.act_beta = 0.75f;
  auto packed = PackedBf16A::pack(m, k, a.data(), k);
  ASSERT_TRUE(packed.is_ok()) << packed.status().message();
  ASSERT_TRUE(bf16_gemm(*packed, n, b.data(), ldb, c.data(), ldc, ep, pool).is_ok());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = c[static_cast<size_t>(i * ldc + j)];
      if (j >= n) {  // padding columns untouched
        ASSERT_EQ(got, c0[static_cast<size_t>(i * ldc + j)]) << "i=" << i << " j=" << j;
        continue;
      }
      double sum = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double t = static_cast<double>(bf16_round(a[static_cast<size_t>(i * k + p)])) *
                         bf16_round(b[static_cast<size_t>(p * ldb + j)]);
        sum += t;
        mag += std::fabs(t);
      }
      if (cs.bias) sum += bias[static_cast<size_t>(i)];
      if (cs.residual) sum += c0[static_cast<size_t>(i * ldc + j)];
      const float want = activate(static_cast<float>(sum), cs.act, ep.act_alpha, ep.act_beta);
      // f32 sums of exact bf16 products: a few ulps of the magnitude summed.
      ASSERT_NEAR(got, want, 4e-6 * (mag + 2) + 1e-6 * std::fabs(want)) << "i=" << i << " j=" << j;
    }
  }
}

class Bf16Gemm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!bf16_gemm_available()) GTEST_SKIP() << "this CPU has no AVX512_BF16";
  }
};

TEST_F(Bf16Gemm, MatchesTheBf16RoundedProductOnRandomShapes) {
  const std::vector<Case> fixed = {{1, 1, 1},      {6, 64, 2},         {7, 65, 3},        {5, 17, 1},
                                   {13, 257, 31},  {24, 3136, 16},     {144, 200, 24},    {32, 129, 144},
                                   {96, 300, 960}, {1, 1000, 7, 3, 5}, {12, 64, 64, 1, 1}};
  uint32_t seed = 1;
  for (Case cs : fixed) check_case(cs, nullptr, seed++);
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> um(1, 40), un(1, 600), uk(1, 80), upad(0, 3), uact(0, 4), ub(0, 1);
  const GemmActivation acts[] = {GemmActivation::kNone, GemmActivation::kRelu, GemmActivation::kClip,
                                 GemmActivation::kHardSwish, GemmActivation::kSilu};
  for (int t = 0; t < 40; ++t) {
    Case cs{um(rng), un(rng), uk(rng), upad(rng), upad(rng)};
    cs.bias = ub(rng);
    cs.residual = ub(rng);
    cs.residual_in_c = cs.residual && ub(rng);
    cs.act = acts[uact(rng)];
    check_case(cs, nullptr, seed++);
  }
}

TEST_F(Bf16Gemm, TwoThreadsGiveTheSameColumns) {
  core::ThreadPool pool(2);
  for (Case cs : {Case{16, 1000, 24}, Case{40, 3136, 32}, Case{7, 300, 9}}) {
    cs.bias = true;
    cs.residual = true;
    cs.act = GemmActivation::kClip;
    check_case(cs, &pool, 7);
  }
}

TEST_F(Bf16Gemm, RefusesBadArguments) {
  std::vector<float> a(12, 1.f), b(64, 1.f), c(64, 0.f);
  EXPECT_FALSE(PackedBf16A::pack(0, 4, a.data(), 4).is_ok());
  EXPECT_FALSE(PackedBf16A::pack(3, 4, a.data(), 3).is_ok());
  EXPECT_FALSE(PackedBf16A::pack(3, 4, nullptr, 4).is_ok());
  auto packed = PackedBf16A::pack(3, 4, a.data(), 4);
  ASSERT_TRUE(packed.is_ok());
  EXPECT_FALSE(bf16_gemm(PackedBf16A(), 4, b.data(), 4, c.data(), 4, {}).is_ok());
  EXPECT_FALSE(bf16_gemm(*packed, 8, b.data(), 4, c.data(), 8, {}).is_ok());  // ldb < n
  GemmEpilogue col;
  col.bias_kind = GemmBias::kPerColumn;
  col.bias = c.data();
  EXPECT_FALSE(bf16_gemm(*packed, 4, b.data(), 4, c.data(), 4, col).is_ok());
  EXPECT_TRUE(bf16_gemm(*packed, 0, b.data(), 4, c.data(), 4, {}).is_ok());
}

}  // namespace
}  // namespace kestrel::kernels::cpu
