// FastConvChain ([expand 1x1] -> depthwise -> [project 1x1] over strips of rows) against the reference conv run
// two or three times with the activations in between, on every ISA of this CPU: random channel counts (1, primes,
// around the vector width), depthwise or grouped middle convs, with or without the expansion, planes from 1 to 61 rows
// (odd, strip heights that do not divide them), 3x3 / 5x5, stride 1 / 2, every begin pad below the kernel with the end
// pad chosen freely, batches, biases or none, residual with NaNs, every fused activation at each stage, 1 to 3 threads;
// the strided 1x1 shortcut folded into the projection; then the bad-input refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/conv_ref_util.h"
#include "common/fast_kernel_util.h"
#include "core/str_util.h"
#include "core/thread_pool.h"
#include "kernels/cpu/conv/conv_chain.h"
#include "kernels/reference/conv.h"

namespace kestrel::kernels::cpu {
namespace {

using core::Dims;
using core::Isa;
using core::Tensor;
using testing::close_f32;
using testing::random_f32;
constexpr const auto& kActs = testing::kEveryFusedActivation;

class FastConvChainTest : public ::testing::TestWithParam<Isa> {};

TEST_P(FastConvChainTest, MatchesReference) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  const Isa isa = GetParam();
  std::mt19937 rng(71);
  core::ThreadPool pool2(2), pool3(3);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int i = 0; i < 60; ++i) {
    const int64_t k = i % 3 == 2 ? 5 : 3, s = i % 2 == 0 ? 1 : 2;
    // Every fourth case a grouped middle conv (RegNet's: groups of 16 or 32 channels, the direct grouped path).
    const int64_t groups = i % 4 == 1 ? pick(2, 4) : 0, gw = i % 8 == 1 ? 32 : 16;
    const int64_t n = pick(1, 2), c = pick(1, 24), pr = pick(1, 30);
    const int64_t m = groups ? groups * gw : i % 4 == 0 ? pick(40, 150) : pick(1, 40);
    // Mostly large planes (several strips per thread), some tiny ones.
    const int64_t h = i % 5 == 4 ? pick(1, 6) : pick(k, 61), w = i % 5 == 4 ? pick(1, 6) : pick(k, 130);
    const int64_t pt = pick(0, k - 1), pl = pick(0, k - 1), pb = pick(0, k - 1), pr_ = pick(0, k - 1);
    const int64_t oh = (h + pt + pb - k) / s + 1, ow = (w + pl + pr_ - k) / s + 1;
    if (oh < 1 || ow < 1) continue;
    // Every fifth case without the expansion (the depthwise reads X), which needs the projection.
    const bool expand = i % 5 != 2, project = !expand || i % 6 != 5;
    const bool residual = project && i % 3 == 0, bias = i % 7 != 3;
    const FusedActivation a1 = kActs[i % 10], a2 = kActs[(i * 3 + 1) % 10], a3 = kActs[(i * 7 + 2) % 10];
    SCOPED_TRACE(core::str_cat("case ", i, ": n ", n, " c ", c, " m ", m, " groups ", groups, " p ", pr, " h ", h,
                               " w ", w, " k ", k, " s ", s, " pads ", pt, ",", pl, ",", pb, ",", pr_,
                               expand ? "" : " no expansion", project ? "" : " no projection",
                               residual ? " residual" : ""));
    Tensor x = random_f32({n, expand ? c : m, h, w}, rng), w1 = random_f32({m, c, 1, 1}, rng),
           b1 = random_f32({m}, rng);
    const int64_t group2 = groups ? groups : m;
    Tensor w2 = random_f32({m, m / group2, k, k}, rng), b2 = random_f32({m}, rng);
    Tensor w3 = random_f32({pr, m, 1, 1}, rng), b3 = random_f32({pr}, rng);
    const Dims yd{n, project ? pr : m, oh, ow};
    Tensor z = random_f32(yd, rng);
    for (int64_t j = 5; j < z.num_elements(); j += 11) z.data<float>()[j] = NAN;
    Tensor e = expand ? testing::ref_conv_stage(x, w1, bias ? &b1 : nullptr, 1, 1, 0, 0, {n, m, h, w}, a1, nullptr) : x;
    Tensor want = testing::ref_conv_stage(e, w2, bias ? &b2 : nullptr, group2, s, pt, pl, {n, m, oh, ow}, a2, nullptr);
    if (project)
      want = testing::ref_conv_stage(want, w3, bias ? &b3 : nullptr, 1, 1, 0, 0, yd, a3, residual ? &z : nullptr);

    auto f1 = FastConv::create(w1, 1, a1, isa, false), f2 = FastConv::create(w2, group2, a2, isa, false),
         f3 = FastConv::create(w3, 1, a3, isa, false);
    ASSERT_TRUE(f1.is_ok() && f2.is_ok() && f3.is_ok());
    auto chain = FastConvChain::create(expand ? std::optional<FastConv>(std::move(*f1)) : std::nullopt, std::move(*f2),
                                       project ? std::optional<FastConv>(std::move(*f3)) : std::nullopt);
    ASSERT_TRUE(chain.is_ok()) << chain.status().to_string();
    Tensor got = testing::filled_f32(yd, NAN);
    core::ThreadPool* pool = i % 3 == 0 ? nullptr : i % 3 == 1 ? &pool2 : &pool3;
    Status st = chain->run({s, pt, pl}, x, bias && expand ? &b1 : nullptr, bias ? &b2 : nullptr,
                           bias && project ? &b3 : nullptr, residual ? &z : nullptr, got, pool);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_TRUE(close_f32(got, want, 2e-4));
  }
}

// The shortcut (RegNet's downsampling blocks): Y = act3(W3 x D + B3 + W4 x X[::s, ::s] + B4), with W3 and W4 side by
// side in one projection of M + C channels and B3 + B4 as its bias; against the reference's strided 1x1 conv of X as
// the projection's residual. Depthwise or grouped middle convs, with or without the expansion, 3x3 / 5x5 with their
// symmetric pads (the shortcut needs the same output size), both strides, odd planes, batches, 1 to 3 threads.
TEST_P(FastConvChainTest, ShortcutMatchesReference) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  const Isa isa = GetParam();
  std::mt19937 rng(29);
  core::ThreadPool pool2(2), pool3(3);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int i = 0; i < 24; ++i) {
    const int64_t k = i % 4 == 3 ? 5 : 3, s = i / 2 % 2 == 0 ? 1 : 2, pad = k / 2;
    const int64_t groups = i % 2 == 0 ? pick(2, 3) : 0, n = pick(1, 2), pr = pick(1, 40);
    const int64_t m = groups ? groups * 16 : pick(1, 40);
    const bool expand = i % 5 != 4, bias = i % 6 != 1;
    const int64_t c = expand ? pick(1, 24) : m;
    const int64_t h = i % 7 == 6 ? pick(1, 4) : pick(k, 61), w = i % 7 == 6 ? pick(1, 4) : pick(k, 130);
    const int64_t oh = (h - 1) / s + 1, ow = (w - 1) / s + 1;
    const FusedActivation a1 = kActs[i % 10], a2 = kActs[(i * 3 + 1) % 10], a3 = kActs[(i * 7 + 2) % 10];
    SCOPED_TRACE(core::str_cat("case ", i, ": n ", n, " c ", c, " m ", m, " groups ", groups, " p ", pr, " h ", h,
                               " w ", w, " k ", k, " s ", s, expand ? "" : " no expansion", bias ? "" : " no bias"));
    Tensor x = random_f32({n, c, h, w}, rng), w1 = random_f32({m, c, 1, 1}, rng), b1 = random_f32({m}, rng);
    const int64_t group2 = groups ? groups : m;
    Tensor w2 = random_f32({m, m / group2, k, k}, rng), b2 = random_f32({m}, rng);
    Tensor w3 = random_f32({pr, m, 1, 1}, rng), b3 = random_f32({pr}, rng);
    Tensor w4 = random_f32({pr, c, 1, 1}, rng), b4 = random_f32({pr}, rng);
    const Dims yd{n, pr, oh, ow};
    Tensor e = expand ? testing::ref_conv_stage(x, w1, bias ? &b1 : nullptr, 1, 1, 0, 0, {n, m, h, w}, a1, nullptr) : x;
    Tensor d = testing::ref_conv_stage(e, w2, bias ? &b2 : nullptr, group2, s, pad, pad, {n, m, oh, ow}, a2, nullptr);
    Tensor shortcut = testing::ref_conv_stage(x, w4, bias ? &b4 : nullptr, 1, s, 0, 0, yd, {}, nullptr);
    Tensor want = testing::ref_conv_stage(d, w3, bias ? &b3 : nullptr, 1, 1, 0, 0, yd, a3, &shortcut);

    Tensor w34 = testing::filled_f32({pr, m + c, 1, 1}, 0.f), b34 = testing::filled_f32({pr}, 0.f);
    for (int64_t o = 0; o < pr; ++o) {
      for (int64_t j = 0; j < m; ++j) w34.data<float>()[o * (m + c) + j] = w3.data<float>()[o * m + j];
      for (int64_t j = 0; j < c; ++j) w34.data<float>()[o * (m + c) + m + j] = w4.data<float>()[o * c + j];
      b34.data<float>()[o] = b3.data<float>()[o] + b4.data<float>()[o];
    }
    auto f1 = FastConv::create(w1, 1, a1, isa, false), f2 = FastConv::create(w2, group2, a2, isa, false),
         f3 = FastConv::create(w34, 1, a3, isa, false);
    ASSERT_TRUE(f1.is_ok() && f2.is_ok() && f3.is_ok());
    auto chain = FastConvChain::create(expand ? std::optional<FastConv>(std::move(*f1)) : std::nullopt, std::move(*f2),
                                       std::move(*f3), c);
    ASSERT_TRUE(chain.is_ok()) << chain.status().to_string();
    Tensor got = testing::filled_f32(yd, NAN);
    core::ThreadPool* pool = i % 3 == 0 ? nullptr : i % 3 == 1 ? &pool2 : &pool3;
    Status st = chain->run({s, pad, pad}, x, bias && expand ? &b1 : nullptr, bias ? &b2 : nullptr,
                           bias ? &b34 : nullptr, nullptr, got, pool);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_TRUE(close_f32(got, want, 2e-4));
    // A residual besides the shortcut is refused.
    EXPECT_FALSE(chain->run({s, pad, pad}, x, nullptr, nullptr, nullptr, &got, got, pool).is_ok());
  }
}

// The small-plane path (both pointwise convs transposed: pixel-major scratch, the NHWC depthwise kernel): planes of
// 1 to 16 pixels a side (7x7 and 14x14 -> 7x7 among them), channel counts around the vector width and GEMM sliver,
// every pad, both strides and kernel sizes, every activation, residual with NaNs, batches, 1 to 3 threads.
TEST_P(FastConvChainTest, SmallPlanesMatchReference) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  const Isa isa = GetParam();
  std::mt19937 rng(29);
  core::ThreadPool pool2(2), pool3(3);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int i = 0; i < 40; ++i) {
    const int64_t k = i % 3 == 2 ? 5 : 3, s = i % 2 == 0 ? 1 : 2;
    const int64_t n = pick(1, 2), c = pick(1, 40), pr = pick(1, 70);
    const int64_t m = i % 4 == 0 ? pick(60, 200) : pick(1, 40);
    const int64_t h = i % 5 == 4 ? 7 * s : pick(1, 16), w = i % 5 == 4 ? 7 * s : pick(1, 16);
    const int64_t pt = pick(0, k - 1), pl = pick(0, k - 1), pb = pick(0, k - 1), pr_ = pick(0, k - 1);
    const int64_t oh = (h + pt + pb - k) / s + 1, ow = (w + pl + pr_ - k) / s + 1;
    if (oh < 1 || ow < 1) continue;
    const bool residual = i % 3 == 0, bias = i % 7 != 3;
    const FusedActivation a1 = kActs[i % 10], a2 = kActs[(i * 3 + 1) % 10], a3 = kActs[(i * 7 + 2) % 10];
    SCOPED_TRACE(core::str_cat("case ", i, ": n ", n, " c ", c, " m ", m, " p ", pr, " h ", h, " w ", w, " k ", k,
                               " s ", s, " pads ", pt, ",", pl, ",", pb, ",", pr_, residual ? " residual" : ""));
    Tensor x = random_f32({n, c, h, w}, rng), w1 = random_f32({m, c, 1, 1}, rng), b1 = random_f32({m}, rng);
    Tensor w2 = random_f32({m, 1, k, k}, rng), b2 = random_f32({m}, rng);
    Tensor w3 = random_f32({pr, m, 1, 1}, rng), b3 = random_f32({pr}, rng);
    const Dims yd{n, pr, oh, ow};
    Tensor z = random_f32(yd, rng);
    for (int64_t j = 5; j < z.num_elements(); j += 11) z.data<float>()[j] = NAN;
    Tensor e = testing::ref_conv_stage(x, w1, bias ? &b1 : nullptr, 1, 1, 0, 0, {n, m, h, w}, a1, nullptr);
    Tensor d = testing::ref_conv_stage(e, w2, bias ? &b2 : nullptr, m, s, pt, pl, {n, m, oh, ow}, a2, nullptr);
    Tensor want = testing::ref_conv_stage(d, w3, bias ? &b3 : nullptr, 1, 1, 0, 0, yd, a3, residual ? &z : nullptr);

    auto f1 = FastConv::create_transposed_pointwise(w1, a1, isa), f2 = FastConv::create(w2, m, a2, isa, false),
         f3 = FastConv::create_transposed_pointwise(w3, a3, isa);
    ASSERT_TRUE(f1.is_ok() && f2.is_ok() && f3.is_ok());
    ASSERT_TRUE(f1->is_transposed_pointwise() && f3->is_transposed_pointwise());
    auto chain = FastConvChain::create(std::move(*f1), std::move(*f2), std::move(*f3));
    ASSERT_TRUE(chain.is_ok()) << chain.status().to_string();
    Tensor got = testing::filled_f32(yd, NAN);
    core::ThreadPool* pool = i % 3 == 0 ? nullptr : i % 3 == 1 ? &pool2 : &pool3;
    Status st = chain->run({s, pt, pl}, x, bias ? &b1 : nullptr, bias ? &b2 : nullptr, bias ? &b3 : nullptr,
                           residual ? &z : nullptr, got, pool);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_TRUE(close_f32(got, want, 2e-4));
  }
  // Transposed pointwise convs need both of them and a depthwise middle conv.
  Tensor w1 = random_f32({32, 8, 1, 1}, rng), w2 = random_f32({32, 1, 3, 3}, rng), w3 = random_f32({8, 32, 1, 1}, rng);
  Tensor wg = random_f32({32, 16, 3, 3}, rng);
  auto t1 = [&] { return FastConv::create_transposed_pointwise(w1, {}, isa).value(); };
  auto t3 = [&] { return FastConv::create_transposed_pointwise(w3, {}, isa).value(); };
  EXPECT_EQ(FastConvChain::create(t1(), FastConv::create(w2, 32, {}, isa, false).value(),
                                  FastConv::create(w3, 1, {}, isa, false).value())
                .status()
                .code(),
            core::StatusCode::kInvalidArgument);
  EXPECT_EQ(FastConvChain::create(t1(), FastConv::create(w2, 32, {}, isa, false).value(), std::nullopt).status().code(),
            core::StatusCode::kInvalidArgument);
  EXPECT_EQ(FastConvChain::create(t1(), FastConv::create(wg, 2, {}, isa, false).value(), t3()).status().code(),
            core::StatusCode::kUnsupported);
}

TEST_P(FastConvChainTest, RejectsBadInput) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  const Isa isa = GetParam();
  std::mt19937 rng(5);
  Tensor w1 = random_f32({8, 3, 1, 1}, rng), w2 = random_f32({8, 1, 3, 3}, rng), w3 = random_f32({4, 8, 1, 1}, rng);
  Tensor w2_dense = random_f32({8, 8, 3, 3}, rng), w3_bad = random_f32({4, 6, 1, 1}, rng);
  auto make = [&](const Tensor& a, int64_t ga, const Tensor& b, int64_t gb, const Tensor* c) {
    std::optional<FastConv> p;
    if (c) p = FastConv::create(*c, 1, {}, isa, false).value();
    return FastConvChain::create(FastConv::create(a, ga, {}, isa, false).value(),
                                 FastConv::create(b, gb, {}, isa, false).value(), std::move(p));
  };
  EXPECT_FALSE(make(w2, 8, w2, 8, nullptr).is_ok());        // the expansion is not 1x1
  EXPECT_FALSE(make(w1, 1, w2_dense, 1, nullptr).is_ok());  // the middle conv is dense
  EXPECT_FALSE(make(w1, 1, w2_dense, 8, nullptr).is_ok());  // grouped over 64 input channels, not 8
  EXPECT_FALSE(make(w1, 1, w2, 8, &w3_bad).is_ok());        // projection over 6 channels, not 8
  auto chain = make(w1, 1, w2, 8, &w3);
  ASSERT_TRUE(chain.is_ok());
  Tensor x = random_f32({1, 3, 9, 9}, rng), y = random_f32({1, 4, 9, 9}, rng);
  EXPECT_TRUE(chain->run({1, 1, 1}, x, nullptr, nullptr, nullptr, nullptr, y, nullptr).is_ok());
  Tensor x5 = random_f32({1, 5, 9, 9}, rng), y8 = random_f32({1, 8, 9, 9}, rng), ybig = random_f32({1, 4, 12, 9}, rng);
  Tensor b_bad = random_f32({7}, rng), z_bad = random_f32({1, 4, 9, 8}, rng);
  EXPECT_FALSE(chain->run({1, 1, 1}, x5, nullptr, nullptr, nullptr, nullptr, y, nullptr).is_ok());    // channels
  EXPECT_FALSE(chain->run({1, 1, 1}, x, nullptr, nullptr, nullptr, nullptr, y8, nullptr).is_ok());    // Y channels
  EXPECT_FALSE(chain->run({1, 1, 1}, x, nullptr, nullptr, nullptr, nullptr, ybig, nullptr).is_ok());  // Y too tall
  EXPECT_FALSE(chain->run({3, 1, 1}, x, nullptr, nullptr, nullptr, nullptr, y, nullptr).is_ok());     // stride 3
  EXPECT_FALSE(chain->run({1, 3, 1}, x, nullptr, nullptr, nullptr, nullptr, y, nullptr).is_ok());     // pad >= k
  EXPECT_FALSE(chain->run({1, 1, 1}, x, &b_bad, nullptr, nullptr, nullptr, y, nullptr).is_ok());      // bias size
  EXPECT_FALSE(chain->run({1, 1, 1}, x, nullptr, nullptr, nullptr, &z_bad, y, nullptr).is_ok());      // residual

  // Without the expansion: X has the middle conv's 8 channels, B1 has no conv to go to, and a chain needs a
  // projection then (a lone depthwise is FastConv's).
  auto no_expand = [&](const Tensor* c) {
    std::optional<FastConv> p;
    if (c) p = FastConv::create(*c, 1, {}, isa, false).value();
    return FastConvChain::create(std::nullopt, FastConv::create(w2, 8, {}, isa, false).value(), std::move(p));
  };
  EXPECT_EQ(no_expand(nullptr).status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_FALSE(no_expand(&w3_bad).is_ok());
  auto dw_project = no_expand(&w3);
  ASSERT_TRUE(dw_project.is_ok());
  Tensor b8 = random_f32({8}, rng);
  EXPECT_TRUE(dw_project->run({1, 1, 1}, y8, nullptr, &b8, nullptr, nullptr, y, nullptr).is_ok());
  EXPECT_FALSE(dw_project->run({1, 1, 1}, x, nullptr, nullptr, nullptr, nullptr, y, nullptr).is_ok());  // 3 channels
  EXPECT_FALSE(dw_project->run({1, 1, 1}, y8, &b8, nullptr, nullptr, nullptr, y, nullptr).is_ok());     // B1

  // The shortcut: the projection must read M + C channels, X's C, and a projection must be there.
  Tensor w3_short = random_f32({4, 11, 1, 1}, rng);
  auto shortcut = [&](const Tensor* c, int64_t channels) {
    std::optional<FastConv> p;
    if (c) p = FastConv::create(*c, 1, {}, isa, false).value();
    return FastConvChain::create(FastConv::create(w1, 1, {}, isa, false).value(),
                                 FastConv::create(w2, 8, {}, isa, false).value(), std::move(p), channels);
  };
  EXPECT_TRUE(shortcut(&w3_short, 3).is_ok());
  EXPECT_EQ(shortcut(&w3, 3).status().code(), core::StatusCode::kInvalidArgument);        // W3 without W4's columns
  EXPECT_EQ(shortcut(&w3_short, 2).status().code(), core::StatusCode::kInvalidArgument);  // X has 3 channels
  EXPECT_EQ(shortcut(nullptr, 3).status().code(), core::StatusCode::kInvalidArgument);    // no projection
  EXPECT_EQ(shortcut(&w3_short, -3).status().code(), core::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(AllIsas, FastConvChainTest, ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512),
                         testing::isa_param_name);

}  // namespace
}  // namespace kestrel::kernels::cpu
