// FastConv::enable_bf16: 1x1 convs (plain pointwise path and inside FastConvChain) against the reference conv of the
// bf16-rounded weights and inputs: random channel counts around the 6-row tile and the channel minimum, planes around
// the 64-column tile and 256-column block, batches, bias, residual with NaNs, every activation, 1 and 2 threads; the
// convs that keep f32 (too few output channels, not 1x1, AVX2); SiLU to bf16's precision on every conv. Skipped
// (visibly) without AVX512_BF16.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/conv_ref_util.h"
#include "common/fast_kernel_util.h"
#include "core/str_util.h"
#include "core/thread_pool.h"
#include "kernels/cpu/conv/conv_chain.h"
#include "kernels/cpu/gemm/bf16_gemm.h"
#include "kernels/reference/conv.h"

namespace kestrel::kernels::cpu {
namespace {

using core::Dims;
using core::Isa;
using core::Tensor;
using testing::close_f32;
using testing::random_f32;
constexpr const auto& kActs = testing::kEveryFusedActivation;

// enable_bf16 turns SiLU into kSiluBf16 (relative error under 1e-4, SgemmIsaTest.SiluBf16WithinItsBound).
double tolerance(const FusedActivation& act) {
  return act.kind == GemmActivation::kSilu ? 1e-4 : 2e-5;
}

Tensor rounded(const Tensor& t) {
  Tensor r = *t.clone();
  for (int64_t i = 0; i < r.num_elements(); ++i) r.data<float>()[i] = bf16_round(r.data<float>()[i]);
  return r;
}

// Whether a and b differ somewhere by more than tol (relative to b's largest magnitude): bf16 math must show.
bool differ(const Tensor& a, const Tensor& b, double tol) {
  return !close_f32(a, b, tol);
}

class FastConvBf16 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!bf16_gemm_available()) GTEST_SKIP() << "this CPU has no AVX512_BF16";
  }
};

TEST_F(FastConvBf16, PointwiseMatchesTheRoundedReference) {
  std::mt19937 rng(5);
  core::ThreadPool pool2(2);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int i = 0; i < 30; ++i) {
    const int64_t n = pick(1, 2), c = i % 5 == 0 ? pick(1, 5) : pick(6, 200), m = pick(24, 150);
    const int64_t h = i % 4 == 0 ? pick(9, 40) : pick(1, 9), w = pick(1, 70);
    const bool bias = i % 3 != 0, residual = i % 2 == 0;
    const FusedActivation act = kActs[i % 10];
    SCOPED_TRACE(core::str_cat("case ", i, ": n ", n, " c ", c, " m ", m, " h ", h, " w ", w, bias ? " bias" : "",
                               residual ? " residual" : "", " act ", static_cast<int>(act.kind)));
    Tensor x = random_f32({n, c, h, w}, rng), wt = random_f32({m, c, 1, 1}, rng), b = random_f32({m}, rng);
    Tensor z = random_f32({n, m, h, w}, rng);
    for (int64_t j = 3; j < z.num_elements(); j += 13) z.data<float>()[j] = NAN;
    auto conv = FastConv::create(wt, 1, act, Isa::kAvx512, false);
    ASSERT_TRUE(conv.is_ok());
    ASSERT_TRUE(conv->enable_bf16().is_ok());
    ASSERT_TRUE(conv->uses_bf16());
    const ref::ConvParams p{{1, 1}, {1, 1}, {0, 0}, 1};
    Tensor got = testing::filled_f32({n, m, h, w}, NAN);
    ASSERT_TRUE(conv->run(p, x, bias ? &b : nullptr, residual ? &z : nullptr, got, i % 2 ? &pool2 : nullptr).is_ok());
    const Tensor want = testing::ref_conv_stage(rounded(x), rounded(wt), bias ? &b : nullptr, 1, 1, 0, 0, {n, m, h, w},
                                                act, residual ? &z : nullptr);
    EXPECT_TRUE(close_f32(got, want, tolerance(act)));
    // Against the f32 conv: farther than the summation order's error, within bf16's (relative to the largest
    // output: only for activations that keep the sums' scale).
    if (c >= 8 && (act.kind == GemmActivation::kNone || act.kind == GemmActivation::kRelu)) {
      const Tensor f32 =
          testing::ref_conv_stage(x, wt, bias ? &b : nullptr, 1, 1, 0, 0, {n, m, h, w}, act, residual ? &z : nullptr);
      EXPECT_TRUE(differ(got, f32, 2e-5));
      EXPECT_TRUE(close_f32(got, f32, 1e-2));
    }
  }
}

TEST_F(FastConvBf16, ChainRoundsTheInputsOfBothPointwiseConvs) {
  std::mt19937 rng(17);
  core::ThreadPool pool2(2);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int i = 0; i < 12; ++i) {
    const int64_t k = i % 3 == 2 ? 5 : 3, s = i % 2 == 0 ? 1 : 2;
    const int64_t n = pick(1, 2), c = pick(4, 40), m = pick(24, 120), pr = pick(24, 60);
    const int64_t h = pick(20, 61), w = pick(20, 90), pad = k / 2;
    const int64_t oh = (h + 2 * pad - k) / s + 1, ow = (w + 2 * pad - k) / s + 1;
    const bool residual = i % 3 == 0;
    SCOPED_TRACE(core::str_cat("case ", i, ": n ", n, " c ", c, " m ", m, " p ", pr, " h ", h, " w ", w, " k ", k,
                               " s ", s, residual ? " residual" : ""));
    // The reference rounds what the chain rounds: X and W1 for the expansion, the depthwise output and W3 for the
    // projection. The expansion and depthwise take quarters in [-2, 2] and activations without rounding of their
    // own, so every sum before the projection is exact in f32 whatever its order, and the depthwise output (often
    // more than bf16's 8 significant bits) rounds the same way on both sides.
    auto quarters = [&](const Dims& d) {
      Tensor t = random_f32(d, rng);
      for (int64_t j = 0; j < t.num_elements(); ++j) t.data<float>()[j] = std::round(t.data<float>()[j] * 8) / 4;
      return t;
    };
    const FusedActivation exact[] = {kActs[0], kActs[1], kActs[2]};  // none, Relu, Clip(0, 0.5)
    const FusedActivation a1 = exact[i % 3], a2 = exact[(i / 3 + i) % 3], a3 = kActs[(i * 7 + 2) % 10];
    Tensor x = quarters({n, c, h, w}), w1 = quarters({m, c, 1, 1}), b1 = quarters({m});
    Tensor w2 = quarters({m, 1, k, k}), b2 = quarters({m});
    Tensor w3 = random_f32({pr, m, 1, 1}, rng), b3 = random_f32({pr}, rng);
    const Dims yd{n, pr, oh, ow};
    Tensor z = random_f32(yd, rng);
    Tensor e = testing::ref_conv_stage(rounded(x), rounded(w1), &b1, 1, 1, 0, 0, {n, m, h, w}, a1, nullptr);
    Tensor d = testing::ref_conv_stage(e, w2, &b2, m, s, pad, pad, {n, m, oh, ow}, a2, nullptr);
    Tensor want = testing::ref_conv_stage(rounded(d), rounded(w3), &b3, 1, 1, 0, 0, yd, a3, residual ? &z : nullptr);
    auto f1 = FastConv::create(w1, 1, a1, Isa::kAvx512, false), f2 = FastConv::create(w2, m, a2, Isa::kAvx512, false),
         f3 = FastConv::create(w3, 1, a3, Isa::kAvx512, false);
    ASSERT_TRUE(f1.is_ok() && f2.is_ok() && f3.is_ok());
    ASSERT_TRUE(f1->enable_bf16().is_ok() && f3->enable_bf16().is_ok());
    ASSERT_TRUE(f1->uses_bf16() && f3->uses_bf16());
    auto chain = FastConvChain::create(std::move(*f1), std::move(*f2), std::move(*f3));
    ASSERT_TRUE(chain.is_ok()) << chain.status().to_string();
    Tensor got = testing::filled_f32(yd, NAN);
    ASSERT_TRUE(
        chain->run({s, pad, pad}, x, &b1, &b2, &b3, residual ? &z : nullptr, got, i % 2 ? &pool2 : nullptr).is_ok());
    EXPECT_TRUE(close_f32(got, want, tolerance(a3)));
  }
}

// Convs that keep f32 sums still take the bf16-precision SiLU (depthwise 3x3 and 5x5 stride 2, a dense 3x3, a
// 16-channel 1x1): within 1e-4 of the reference, not equal to the f32 conv; other activations and AVX2 convs unchanged.
TEST_F(FastConvBf16, SiluToBf16PrecisionOnEveryConv) {
  std::mt19937 rng(23);
  const FusedActivation silu{GemmActivation::kSilu, 0, 0}, relu{GemmActivation::kRelu, 0, 0};
  struct Shape {
    Dims wd;
    int64_t group, stride;
  };
  const Shape shapes[] = {{{40, 1, 3, 3}, 40, 1}, {{40, 1, 5, 5}, 40, 2}, {{24, 8, 3, 3}, 1, 1}, {{16, 8, 1, 1}, 1, 1}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(core::str_cat("W ", core::dims_to_string(s.wd), " group ", s.group, " stride ", s.stride));
    const int64_t c = s.wd[1] * s.group, m = s.wd[0], k = s.wd[2], pad = k / 2, h = 29, w = 37;
    const int64_t oh = (h + 2 * pad - k) / s.stride + 1, ow = (w + 2 * pad - k) / s.stride + 1;
    Tensor x = random_f32({1, c, h, w}, rng), wt = random_f32(s.wd, rng), b = random_f32({m}, rng);
    for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] *= 4;  // SiLU's curve, not just its middle
    const ref::ConvParams p{{s.stride, s.stride}, {1, 1}, {pad, pad}, s.group};
    auto run = [&](const FusedActivation& act, Isa isa, bool bf16) {
      auto conv = FastConv::create(wt, s.group, act, isa, false);
      EXPECT_TRUE(conv.is_ok());
      if (bf16) {
        EXPECT_TRUE(conv->enable_bf16().is_ok());
      }
      EXPECT_EQ(conv->activation().kind, bf16 && isa == Isa::kAvx512 && act.kind == GemmActivation::kSilu
                                             ? GemmActivation::kSiluBf16
                                             : act.kind);
      Tensor y = testing::filled_f32({1, m, oh, ow}, NAN);
      EXPECT_TRUE(conv->run(p, x, &b, nullptr, y, nullptr).is_ok());
      return y;
    };
    const Tensor want = testing::ref_conv_stage(x, wt, &b, s.group, s.stride, pad, pad, {1, m, oh, ow}, silu, nullptr);
    const Tensor got = run(silu, Isa::kAvx512, true), f32 = run(silu, Isa::kAvx512, false);
    EXPECT_TRUE(close_f32(f32, want, 2e-5));
    EXPECT_TRUE(close_f32(got, want, 1e-4));
    EXPECT_TRUE(differ(got, f32, 1e-7));
    const Tensor r = run(relu, Isa::kAvx512, true);
    EXPECT_TRUE(close_f32(
        r, testing::ref_conv_stage(x, wt, &b, s.group, s.stride, pad, pad, {1, m, oh, ow}, relu, nullptr), 2e-5));
    EXPECT_TRUE(close_f32(run(silu, Isa::kAvx2, true), want, 2e-5));
  }
}

TEST_F(FastConvBf16, OtherConvsKeepF32) {
  std::mt19937 rng(3);
  const FusedActivation none{GemmActivation::kNone, 0, 0};
  auto make = [&](const Dims& wd, int64_t group, Isa isa) {
    auto c = FastConv::create(random_f32(wd, rng), group, none, isa, false);
    EXPECT_TRUE(c.is_ok());
    EXPECT_TRUE(c->enable_bf16().is_ok());
    return c->uses_bf16();
  };
  EXPECT_TRUE(make({FastConv::kBf16MinOutputChannels, 8, 1, 1}, 1, Isa::kAvx512));
  EXPECT_FALSE(make({FastConv::kBf16MinOutputChannels - 1, 8, 1, 1}, 1, Isa::kAvx512));
  EXPECT_FALSE(make({32, 8, 3, 3}, 1, Isa::kAvx512));
  EXPECT_FALSE(make({32, 1, 3, 3}, 32, Isa::kAvx512));
  EXPECT_FALSE(make({32, 8, 1, 1}, 1, Isa::kAvx2));
}

}  // namespace
}  // namespace kestrel::kernels::cpu
