// SGEMM against a naive double-precision triple loop: every ISA path on this CPU, random shapes
// (1, primes, non-multiples of the register block, across cache blocks), transposes, strides,
// alpha/beta, every epilogue, pre-packed operands, batches, and a 2-thread pool.
#include "kernels/cpu/gemm/sgemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/fast_kernel_util.h"
#include "core/cpu_features.h"
#include "core/str_util.h"
#include "core/thread_pool.h"

namespace kestrel::kernels::cpu {
namespace {

using core::Isa;

constexpr float kSentinel = -12345.f;

const char* activation_name(GemmActivation a) {
  switch (a) {
    case GemmActivation::kNone:
      return "none";
    case GemmActivation::kRelu:
      return "relu";
    case GemmActivation::kClip:
      return "clip";
    case GemmActivation::kLeakyRelu:
      return "leaky_relu";
    case GemmActivation::kSigmoid:
      return "sigmoid";
    case GemmActivation::kHardSigmoid:
      return "hard_sigmoid";
    case GemmActivation::kHardSwish:
      return "hard_swish";
    case GemmActivation::kSilu:
      return "silu";
    case GemmActivation::kSiluBf16:
      return "silu_bf16";
    case GemmActivation::kGelu:
      return "gelu";
    case GemmActivation::kTanh:
      return "tanh";
  }
  return "?";
}

// One test case: shapes, layout and epilogue. Matrices are generated from the seed.
struct Case {
  int64_t m = 1, n = 1, k = 1;
  bool ta = false, tb = false;
  int64_t pad_a = 0, pad_b = 0, pad_c = 0, pad_r = 0;  // extra elements per row (ld > row length)
  float alpha = 1.f, beta = 0.f;
  GemmBias bias = GemmBias::kNone;
  bool residual = false;
  bool nan_residual = false;  // every 5th residual element NaN: every activation passes it on as NaN
  GemmActivation act = GemmActivation::kNone;
  float act_alpha = 0.f, act_beta = 0.f;
  bool pack_a = false, pack_b = false;
  int64_t batch = 1;
  bool batch_ptrs = false;
  bool broadcast_b = false;  // batch stride 0 for B
  bool split_columns = false;  // SgemmContext::split_columns
  std::string describe() const {
    std::string s = "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
    s += std::string(" ta=") + (ta ? "1" : "0") + " tb=" + (tb ? "1" : "0");
    s += " pads=" + std::to_string(pad_a) + "," + std::to_string(pad_b) + "," + std::to_string(pad_c);
    s += " alpha=" + std::to_string(alpha) + " beta=" + std::to_string(beta);
    s += " bias=" + std::to_string(static_cast<int>(bias)) + " residual=" + (residual ? "1" : "0") +
         (nan_residual ? " (with NaNs)" : "");
    s += std::string(" act=") + activation_name(act) + " packA=" + (pack_a ? "1" : "0") +
         " packB=" + (pack_b ? "1" : "0");
    s += " batch=" + std::to_string(batch) + (batch_ptrs ? " ptrs" : "") + (broadcast_b ? " bcastB" : "");
    s += split_columns ? " split_columns" : "";
    return s;
  }
};

std::vector<float> random_vector(size_t n, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Runs the case on `isa` (with `pool` if given) and compares with the double reference.
void check_case(const Case& cs, Isa isa, core::ThreadPool* pool, uint32_t seed) {
  SCOPED_TRACE(cs.describe() + " isa=" + core::isa_name(isa) +
               " threads=" + std::to_string(pool ? pool->num_threads() : 1));
  std::mt19937 rng(seed);
  const int64_t m = cs.m, n = cs.n, k = cs.k, nb = cs.batch;
  const int64_t a_rows = cs.ta ? k : m, a_cols = cs.ta ? m : k;
  const int64_t b_rows = cs.tb ? n : k, b_cols = cs.tb ? k : n;
  const int64_t lda = a_cols + cs.pad_a, ldb = b_cols + cs.pad_b, ldc = n + cs.pad_c, ldr = n + cs.pad_r;
  const int64_t a_size = std::max<int64_t>(a_rows * lda, 1), b_size = std::max<int64_t>(b_rows * ldb, 1);
  const int64_t c_size = std::max<int64_t>(m * ldc, 1), r_size = std::max<int64_t>(m * ldr, 1);
  const int64_t b_count = cs.broadcast_b ? 1 : nb;
  std::vector<float> a = random_vector(static_cast<size_t>(a_size * nb), rng);
  std::vector<float> b = random_vector(static_cast<size_t>(b_size * b_count), rng);
  std::vector<float> bias = random_vector(static_cast<size_t>(std::max(m, n)), rng);
  std::vector<float> res = random_vector(static_cast<size_t>(r_size * nb), rng);
  if (cs.nan_residual)
    for (size_t i = 2; i < res.size(); i += 5) res[i] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> c0 = random_vector(static_cast<size_t>(c_size * nb), rng);
  // beta == 0 must not read C: poison it. Padding columns must never be written.
  std::vector<float> c = c0;
  for (int64_t bi = 0; bi < nb; ++bi)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < ldc; ++j) {
        float& x = c[static_cast<size_t>(bi * c_size + i * ldc + j)];
        if (j >= n)
          x = kSentinel;
        else if (cs.beta == 0.f)
          x = std::numeric_limits<float>::quiet_NaN();
      }

  GemmEpilogue ep;
  ep.bias_kind = cs.bias;
  ep.bias = cs.bias == GemmBias::kNone ? nullptr : bias.data();
  ep.residual = cs.residual ? res.data() : nullptr;
  ep.ldr = ldr;
  ep.activation = cs.act;
  ep.act_alpha = cs.act_alpha;
  ep.act_beta = cs.act_beta;

  PackedA pa;
  PackedB pb;
  if (cs.pack_a) {
    auto r = pack_a(m, k, a.data(), lda, cs.ta, isa);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    pa = std::move(r).value();
  }
  if (cs.pack_b) {
    auto r = pack_b(k, n, b.data(), ldb, cs.tb, isa);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    pb = std::move(r).value();
  }
  SgemmA a_in = cs.pack_a ? SgemmA(pa) : SgemmA(a.data(), lda, cs.ta);
  SgemmB b_in = cs.pack_b ? SgemmB(pb) : SgemmB(b.data(), ldb, cs.tb);
  SgemmContext ctx;
  ctx.pool = pool;
  ctx.isa = isa;
  ctx.split_columns = cs.split_columns;

  Status st;
  std::vector<const float*> a_ptrs, b_ptrs, r_ptrs;
  std::vector<float*> c_ptrs;
  if (nb == 1 && !cs.batch_ptrs) {
    st = sgemm(m, n, k, cs.alpha, a_in, b_in, cs.beta, c.data(), ldc, ep, ctx);
  } else {
    SgemmBatch batch;
    batch.count = nb;
    if (cs.batch_ptrs) {
      // Reverse order so a pointer array that is ignored cannot pass by accident.
      for (int64_t bi = nb - 1; bi >= 0; --bi) {
        a_ptrs.push_back(a.data() + bi * a_size);
        b_ptrs.push_back(b.data() + (cs.broadcast_b ? 0 : bi) * b_size);
        c_ptrs.push_back(c.data() + bi * c_size);
        r_ptrs.push_back(res.data() + bi * r_size);
      }
      batch.a_ptrs = cs.pack_a ? nullptr : a_ptrs.data();
      batch.b_ptrs = cs.pack_b ? nullptr : b_ptrs.data();
      batch.c_ptrs = c_ptrs.data();
      batch.residual_ptrs = cs.residual ? r_ptrs.data() : nullptr;
    } else {
      batch.stride_a = a_size;
      batch.stride_b = cs.broadcast_b ? 0 : b_size;
      batch.stride_c = c_size;
      batch.stride_residual = r_size;
    }
    st = sgemm_batched(m, n, k, cs.alpha, a_in, b_in, cs.beta, c.data(), ldc, batch, ep, ctx);
  }
  ASSERT_TRUE(st.is_ok()) << st.to_string();

  int reported = 0;
  for (int64_t bi = 0; bi < nb; ++bi) {
    // With pointer arrays, entry i of the call is batch nb-1-i of the data.
    const int64_t src = cs.batch_ptrs ? nb - 1 - bi : bi;
    const float* A = a.data() + src * a_size;
    const float* B = b.data() + (cs.broadcast_b ? 0 : src) * b_size;
    const float* R = res.data() + src * r_size;
    const float* C0 = c0.data() + src * c_size;
    const float* C = c.data() + src * c_size;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < ldc; ++j) {
        const float got = C[i * ldc + j];
        if (j >= n) {
          if (got != kSentinel && reported++ < 5)
            ADD_FAILURE() << "wrote padding at batch " << bi << " (" << i << "," << j << ")";
          continue;
        }
        double sum = 0, mag = 0;
        for (int64_t p = 0; p < k; ++p) {
          double av = cs.ta ? A[p * lda + i] : A[i * lda + p];
          double bv = cs.tb ? B[j * ldb + p] : B[p * ldb + j];
          sum += av * bv;
          mag += std::fabs(av * bv);
        }
        double x = cs.alpha * sum;
        mag *= std::fabs(cs.alpha);
        if (cs.beta != 0.f) {
          x += static_cast<double>(cs.beta) * C0[i * ldc + j];
          mag += std::fabs(cs.beta * C0[i * ldc + j]);
        }
        if (cs.bias == GemmBias::kPerColumn)
          x += bias[static_cast<size_t>(j)], mag += std::fabs(bias[static_cast<size_t>(j)]);
        if (cs.bias == GemmBias::kPerRow)
          x += bias[static_cast<size_t>(i)], mag += std::fabs(bias[static_cast<size_t>(i)]);
        if (cs.residual) x += R[i * ldr + j], mag += std::fabs(R[i * ldr + j]);
        const double want = testing::activation_ref(cs.act, x, cs.act_alpha, cs.act_beta);
        if (std::isnan(want)) {
          if (!std::isnan(got) && reported++ < 5)
            ADD_FAILURE() << "batch " << bi << " C(" << i << "," << j << ") = " << got << ", want NaN";
          continue;
        }
        // Float accumulation error scales with sum |a b|; activations are at most ~1.5-Lipschitz and
        // their polynomial approximations add ~1e-6 absolute.
        const double tol = 2e-6 * std::sqrt(static_cast<double>(k) + 1) * mag * 1.5 + 2e-6 * std::fabs(want) + 2e-6;
        if (!(std::fabs(got - want) <= tol) && reported++ < 5)
          ADD_FAILURE() << "batch " << bi << " C(" << i << "," << j << ") = " << got << ", want " << want << " (tol "
                        << tol << ")";
      }
    }
  }
}

class SgemmIsaTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (GetParam() > core::detected_isa()) GTEST_SKIP() << core::isa_name(GetParam()) << " not available on this CPU";
  }
};

TEST_P(SgemmIsaTest, RandomShapesAndLayouts) {
  std::mt19937 rng(1234 + static_cast<int>(GetParam()));
  const int64_t sizes[] = {1, 2, 3, 5, 7, 8, 13, 15, 16, 17, 29, 31, 32, 33, 47, 48, 61, 64, 97};
  auto pick = [&] { return sizes[rng() % std::size(sizes)]; };
  for (int iter = 0; iter < 60; ++iter) {
    Case cs;
    cs.m = pick();
    cs.n = pick();
    cs.k = pick();
    cs.ta = rng() & 1;
    cs.tb = rng() & 1;
    cs.pad_a = (rng() & 1) ? static_cast<int64_t>(rng() % 9) : 0;
    cs.pad_b = (rng() & 1) ? static_cast<int64_t>(rng() % 9) : 0;
    cs.pad_c = (rng() & 1) ? static_cast<int64_t>(rng() % 9) : 0;
    const float alphas[] = {1.f, 0.5f, -2.f};
    const float betas[] = {0.f, 1.f, -0.5f};
    cs.alpha = alphas[rng() % 3];
    cs.beta = betas[rng() % 3];
    check_case(cs, GetParam(), nullptr, 7 + static_cast<uint32_t>(iter));
  }
}

TEST_P(SgemmIsaTest, EdgeTilesAroundTheRegisterBlock) {
  auto shape = sgemm_tile_shape(GetParam());
  ASSERT_TRUE(shape.is_ok());
  const int64_t mr = shape->mr, nr = shape->nr;
  uint32_t seed = 100;
  for (int64_t m : {mr - 1, mr, mr + 1, 2 * mr + 3})
    for (int64_t n : {nr - 1, nr, nr + 1, 2 * nr + 5}) {
      if (m <= 0 || n <= 0) continue;
      Case cs;
      cs.m = m;
      cs.n = n;
      cs.k = 9;
      cs.beta = 0.5f;
      cs.pad_c = 3;
      check_case(cs, GetParam(), nullptr, seed++);
      cs.bias = GemmBias::kPerColumn;
      cs.residual = true;
      cs.act = GemmActivation::kGelu;
      check_case(cs, GetParam(), nullptr, seed++);
    }
}

TEST_P(SgemmIsaTest, MOnTheEightRowTiles) {
  // AVX-512 runs M = 15..16, M = 32 up to K = 64, and whole 8-row tiles that are not whole 14-row ones up to
  // K = 24 (M = 48, 96) with its 8 x 48 tiles, also with A pre-packed (packed for those tiles).
  uint32_t seed = 170;
  for (int64_t m : {15, 16, 32, 48, 96})
    for (int64_t n : {47, 48, 49, 300})
      for (int64_t k : {1, 16, 24, 25, 32, 64, 65, 600}) {
        if (m > 32 && k > 32) continue;
        Case cs;
        cs.m = m;
        cs.n = n;
        cs.k = k;
        cs.beta = (seed & 1) ? 0.5f : 0.f;
        cs.pad_c = 3;
        cs.bias = (seed & 2) ? GemmBias::kPerRow : GemmBias::kPerColumn;
        cs.residual = seed & 4;
        cs.act = (seed & 8) ? GemmActivation::kRelu : GemmActivation::kSigmoid;
        cs.pack_a = (k == 600 && n == 300) || k == 24 || k == 25 || k == 32 || k == 64;
        check_case(cs, GetParam(), nullptr, seed++);
      }
  if (GetParam() == Isa::kAvx512) {
    std::vector<float> a(32 * 65, 1.f);
    auto k64 = pack_a(32, 64, a.data(), 64, false, GetParam());
    auto k65 = pack_a(32, 65, a.data(), 65, false, GetParam());
    ASSERT_TRUE(k64.is_ok() && k65.is_ok());
    EXPECT_EQ(k64->mr(), 8);
    EXPECT_EQ(k65->mr(), 14);
    // The shallow rule: M = 48 and 96 up to K = 24; not past it, nor M = 56 (whole 14-row tiles) or 44.
    for (auto [m, k, mr] : {std::tuple{48, 24, 8}, {96, 16, 8}, {48, 25, 14}, {56, 16, 14}, {44, 16, 14}}) {
      auto p = pack_a(m, k, a.data(), k, false, GetParam());
      ASSERT_TRUE(p.is_ok());
      EXPECT_EQ(p->mr(), mr) << m << " x " << k;
    }
  }
}

// kSiluBf16 (bf16 math's SiLU on AVX-512: 2^t by vreduceps, a degree-4 polynomial and vscalefps, the reciprocal
// estimate without its Newton step; other ISAs compute SiLU for it) within 1e-4 of SiLU relative to the value:
// C = act(1 x B) over 200001 points of [-100, 100] plus zeros, tiny and large values; NaN stays NaN. (Below about -88
// it gives -0, SiLU a denormal: within the 1e-35 absolute slack.) The bound is what bf16 math may spend (bf16 rounds to
// 2^-9 = 2e-3); exact SiLU (kSilu) stays within 2e-6 in EveryEpilogue.
TEST_P(SgemmIsaTest, SiluBf16WithinItsBound) {
  std::vector<float> x;
  for (int i = -100000; i <= 100000; ++i) x.push_back(static_cast<float>(i) * 1e-3f);
  for (float v : {0.f, -0.f, 1e-30f, -1e-30f, 1e-40f, 3e38f, 1e4f, 88.5f, -88.5f, 87.f, -87.f, NAN}) x.push_back(v);
  const int64_t n = static_cast<int64_t>(x.size());
  const float one = 1.f;
  std::vector<float> c(x.size(), 12345.f);
  GemmEpilogue ep;
  ep.activation = GemmActivation::kSiluBf16;
  SgemmContext ctx{nullptr, GetParam()};
  ASSERT_TRUE(sgemm(1, n, 1, 1.f, SgemmA(&one, 1), SgemmB(x.data(), n), 0.f, c.data(), n, ep, ctx).is_ok());
  double worst = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double v = x[static_cast<size_t>(j)], got = c[static_cast<size_t>(j)];
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(got)) << "silu_bf16(NaN) = " << got;
      continue;
    }
    const double want = v / (1 + std::exp(-v));
    ASSERT_LE(std::fabs(got - want), 1e-4 * std::fabs(want) + 1e-35) << "x = " << v << ": " << got << ", want " << want;
    if (std::fabs(want) > 1e-30) worst = std::max(worst, std::fabs(got - want) / std::fabs(want));
  }
  if (GetParam() == Isa::kAvx512) {
    EXPECT_GT(worst, 1e-5);  // the approximation is what runs
  }
  RecordProperty("worst_relative_error", std::to_string(worst));
}

// Packed for the 8-row tiles (AVX-512, M = 16): slices at 8 rows multiply like those rows of the
// whole; a packed B (packed for the default tiles) with it is refused, not misread.
TEST_P(SgemmIsaTest, PackedAForSmallMTiles) {
  std::mt19937 rng(78);
  const int64_t m = 16, n = 53, k = 37;
  const std::vector<float> a = random_vector(static_cast<size_t>(m * k), rng);
  const std::vector<float> b = random_vector(static_cast<size_t>(k * n), rng);
  auto pa = pack_a(m, k, a.data(), k, false, GetParam());
  ASSERT_TRUE(pa.is_ok());
  if (GetParam() == core::Isa::kAvx512) {
    EXPECT_EQ(pa->mr(), 8);
  }
  SgemmContext ctx{nullptr, GetParam()};
  std::vector<float> full(static_cast<size_t>(m * n));
  ASSERT_TRUE(sgemm(m, n, k, 1.f, SgemmA(*pa), SgemmB(b.data(), n), 0.f, full.data(), n, {}, ctx).is_ok());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t p = 0; p < k; ++p)
        want += static_cast<double>(a[static_cast<size_t>(i * k + p)]) * b[static_cast<size_t>(p * n + j)];
      ASSERT_NEAR(full[static_cast<size_t>(i * n + j)], want, 1e-4 * (1 + std::fabs(want))) << i << "," << j;
    }
  const int64_t mr = pa->mr();
  if (mr < m) {
    auto s = pa->slice_rows(mr, m);
    ASSERT_TRUE(s.is_ok()) << s.status().message();
    std::vector<float> part(static_cast<size_t>((m - mr) * n));
    ASSERT_TRUE(sgemm(m - mr, n, k, 1.f, SgemmA(*s), SgemmB(b.data(), n), 0.f, part.data(), n, {}, ctx).is_ok());
    for (int64_t i = 0; i < (m - mr) * n; ++i)
      ASSERT_NEAR(part[static_cast<size_t>(i)], full[static_cast<size_t>(mr * n + i)], 1e-5f) << i;
  }
  auto pb = pack_b(k, n, b.data(), n, false, GetParam());
  ASSERT_TRUE(pb.is_ok());
  const Status both = sgemm(m, n, k, 1.f, SgemmA(*pa), SgemmB(*pb), 0.f, full.data(), n, {}, ctx);
  if (GetParam() == core::Isa::kAvx512) {
    EXPECT_FALSE(both.is_ok());
  }
}

TEST_P(SgemmIsaTest, LargeShapesCrossCacheBlocks) {
  // Deep K crosses KC (with beta and the epilogue only on the right block), tall M crosses MC,
  // wide N crosses NC.
  const Case cases[] = {
      {.m = 300, .n = 257, .k = 1100, .beta = 0.75f},
      {.m = 100,
       .n = 70,
       .k = 1500,
       .bias = GemmBias::kPerColumn,
       .residual = true,
       .act = GemmActivation::kClip,
       .act_alpha = -0.5f,
       .act_beta = 2.f},
      {.m = 1100,
       .n = 45,
       .k = 70,
       .tb = true,
       .bias = GemmBias::kPerRow,
       .residual = true,
       .act = GemmActivation::kRelu},
      {.m = 3, .n = 9000, .k = 20, .ta = true, .bias = GemmBias::kPerColumn},
      {.m = 130, .n = 140, .k = 600, .ta = true, .tb = true, .alpha = -1.5f, .beta = 1.f, .act = GemmActivation::kSilu},
  };
  uint32_t seed = 50;
  for (const Case& cs : cases) check_case(cs, GetParam(), nullptr, seed++);
}

TEST_P(SgemmIsaTest, BPackedWhenItsStrideAliases) {
  // ldb = 128 or 1024 floats: B is packed on the fly instead of read in place when more than 8 rows
  // of a K block share a cache-set slot (ldb 1024; ldb 128 with K = 100), else read in place.
  uint32_t seed = 150;
  for (int64_t ldb : {128, 1024})
    for (int64_t k : {45, 100})
    for (bool ta : {false, true}) {
      Case cs;
      cs.m = 37;
      cs.n = 100;
      cs.k = k;
      cs.ta = ta;
      cs.pad_b = ldb - cs.n;
      cs.beta = 0.5f;
      cs.bias = GemmBias::kPerRow;
      check_case(cs, GetParam(), nullptr, seed++);
    }
}

TEST_P(SgemmIsaTest, EveryEpilogue) {
  struct Act {
    GemmActivation act;
    float a, b;
  };
  const Act acts[] = {{GemmActivation::kNone, 0, 0},
                      {GemmActivation::kRelu, 0, 0},
                      {GemmActivation::kClip, 0, 6},
                      {GemmActivation::kClip, -0.5f, 0.25f},
                      {GemmActivation::kLeakyRelu, 0.1f, 0},
                      {GemmActivation::kSigmoid, 0, 0},
                      {GemmActivation::kHardSigmoid, 0.2f, 0.5f},
                      {GemmActivation::kHardSwish, 0, 0},
                      {GemmActivation::kSilu, 0, 0},
                      {GemmActivation::kGelu, 0, 0},
                      {GemmActivation::kTanh, 0, 0}};
  uint32_t seed = 200;
  // alpha == 1 with beta == 0 takes the kernels' straight-line store paths; anything else the
  // general one. alpha = 3 also pushes values into the saturating ranges of sigmoid/tanh.
  // K = 19 runs each tile's k loop inline, K = 200 out of line (kOutOfLineK), with every epilogue.
  for (const Act& act : acts)
    for (GemmBias bias : {GemmBias::kNone, GemmBias::kPerColumn, GemmBias::kPerRow})
      for (int residual = 0; residual < 3; ++residual)  // 2: with NaNs
        for (int ab = 0; ab < 6; ++ab) {
          Case cs;
          cs.m = 23;
          cs.n = 37;
          cs.k = ab < 3 ? 19 : 200;
          cs.alpha = ab % 3 == 0 ? 1.f : 3.f;
          cs.beta = ab % 3 == 2 ? 0.5f : 0.f;
          cs.bias = bias;
          cs.residual = residual > 0;
          cs.nan_residual = residual == 2;
          cs.pad_r = 4;
          cs.act = act.act;
          cs.act_alpha = act.a;
          cs.act_beta = act.b;
          check_case(cs, GetParam(), nullptr, seed++);
        }
}

TEST_P(SgemmIsaTest, PrePackedOperands) {
  uint32_t seed = 300;
  for (bool pa : {false, true})
    for (bool pb : {false, true})
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          if (!pa && !pb) continue;
          Case cs;
          cs.m = 37;
          cs.n = 53;
          cs.k = 41;
          cs.ta = ta;
          cs.tb = tb;
          cs.pad_a = 2;
          cs.pad_b = 5;
          cs.pack_a = pa;
          cs.pack_b = pb;
          cs.bias = GemmBias::kPerRow;
          cs.act = GemmActivation::kClip;
          cs.act_beta = 6.f;
          check_case(cs, GetParam(), nullptr, seed++);
          // Deep enough to split K into several blocks inside the pre-packed slivers.
          cs.k = 700;
          cs.beta = 1.f;
          check_case(cs, GetParam(), nullptr, seed++);
        }
}

// A row slice of a packed A (what the Winograd conv hands each thread) multiplies like those rows
// of the whole matrix (up to the summation order of a differently tiled call); misaligned or
// out-of-range slices are errors.
TEST_P(SgemmIsaTest, PackedARowSlices) {
  std::mt19937 rng(77);
  const int64_t m = 61, n = 29, k = 45;
  auto tile = sgemm_tile_shape(GetParam());
  ASSERT_TRUE(tile.is_ok());
  const int64_t mr = tile->mr;
  const std::vector<float> a = random_vector(static_cast<size_t>(m * k), rng);
  const std::vector<float> b = random_vector(static_cast<size_t>(k * n), rng);
  auto pa = pack_a(m, k, a.data(), k, false, GetParam());
  ASSERT_TRUE(pa.is_ok());
  std::vector<float> full(static_cast<size_t>(m * n));
  SgemmContext ctx{nullptr, GetParam()};
  ASSERT_TRUE(sgemm(m, n, k, 1.f, SgemmA(*pa), SgemmB(b.data(), n), 0.f, full.data(), n, {}, ctx).is_ok());
  for (int64_t m0 = 0; m0 < m; m0 += mr) {
    for (int64_t m1 : {std::min(m, m0 + mr), std::min(m, m0 + 2 * mr + 3), m}) {
      SCOPED_TRACE(m0);
      auto s = pa->slice_rows(m0, m1);
      ASSERT_TRUE(s.is_ok()) << s.status().message();
      EXPECT_EQ(s->m(), m1 - m0);
      std::vector<float> part(static_cast<size_t>((m1 - m0) * n), -1.f);
      ASSERT_TRUE(sgemm(m1 - m0, n, k, 1.f, SgemmA(*s), SgemmB(b.data(), n), 0.f, part.data(), n, {}, ctx).is_ok());
      for (int64_t i = 0; i < (m1 - m0) * n; ++i) {
        const float want = full[static_cast<size_t>(m0 * n + i)];
        ASSERT_NEAR(part[static_cast<size_t>(i)], want, 1e-5f * (1.f + std::fabs(want))) << i;
      }
    }
  }
  if (mr > 1) {
    EXPECT_FALSE(pa->slice_rows(1, m).is_ok());  // not at a sliver boundary
  }
  EXPECT_FALSE(pa->slice_rows(0, m + 1).is_ok());
  EXPECT_FALSE(pa->slice_rows(mr, 0).is_ok());
}

// A column slice of a packed B (what the transposed pointwise conv hands each thread) multiplies like those
// columns of the whole matrix; small M (its own path) included; misaligned or out-of-range slices are errors.
TEST_P(SgemmIsaTest, PackedBColumnSlices) {
  std::mt19937 rng(79);
  const int64_t n = 83, k = 37;
  const std::vector<float> b = random_vector(static_cast<size_t>(n * k), rng);
  auto pb = pack_b(k, n, b.data(), k, true, GetParam());  // stored [n, k], as conv weights
  ASSERT_TRUE(pb.is_ok());
  const int64_t nr = pb->nr();
  SgemmContext ctx{nullptr, GetParam()};
  for (int64_t m : {int64_t{3}, int64_t{49}}) {
    const std::vector<float> a = random_vector(static_cast<size_t>(m * k), rng);
    std::vector<float> full(static_cast<size_t>(m * n));
    ASSERT_TRUE(sgemm(m, n, k, 1.f, SgemmA(a.data(), k), SgemmB(*pb), 0.f, full.data(), n, {}, ctx).is_ok());
    for (int64_t n0 = 0; n0 < n; n0 += nr) {
      for (int64_t n1 : {std::min(n, n0 + nr), std::min(n, n0 + 2 * nr + 5), n}) {
        SCOPED_TRACE(core::str_cat("m ", m, " columns ", n0, "..", n1));
        auto s = pb->slice_cols(n0, n1);
        ASSERT_TRUE(s.is_ok()) << s.status().message();
        EXPECT_EQ(s->n(), n1 - n0);
        std::vector<float> part(static_cast<size_t>(m * (n1 - n0)), -1.f);
        ASSERT_TRUE(
            sgemm(m, n1 - n0, k, 1.f, SgemmA(a.data(), k), SgemmB(*s), 0.f, part.data(), n1 - n0, {}, ctx).is_ok());
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n1 - n0; ++j) {
            const float want = full[static_cast<size_t>(i * n + n0 + j)];
            ASSERT_NEAR(part[static_cast<size_t>(i * (n1 - n0) + j)], want, 1e-5f * (1.f + std::fabs(want)));
          }
      }
    }
  }
  if (nr > 1) {
    EXPECT_FALSE(pb->slice_cols(1, n).is_ok());  // not at a sliver boundary
  }
  EXPECT_FALSE(pb->slice_cols(0, n + 1).is_ok());
  EXPECT_FALSE(pb->slice_cols(nr, 0).is_ok());
}

// M <= 4 against pre-packed B takes its own path (one pass over the slivers, no MR-row tile).
TEST_P(SgemmIsaTest, SmallMPrePackedB) {
  uint32_t seed = 350;
  core::ThreadPool pool(2);
  const int64_t ns[] = {1, 15, 16, 33, 47, 49, 97, 1000};
  const int64_t ks[] = {1, 2, 3, 17, 64, 1280};
  for (int64_t m = 1; m <= 5; ++m)
    for (int64_t n : ns)
      for (int64_t k : ks) {
        Case cs;
        cs.m = m;
        cs.n = n;
        cs.k = k;
        cs.pack_b = true;
        cs.tb = (seed % 2) == 0;
        cs.ta = (seed % 3) == 0;
        cs.pad_a = seed % 4;
        cs.pad_c = seed % 5;
        cs.pad_r = 3;
        cs.alpha = seed % 7 == 0 ? 0.5f : 1.f;
        cs.beta = seed % 5 == 0 ? 0.5f : 0.f;
        cs.bias = static_cast<GemmBias>(seed % 3);
        cs.residual = seed % 4 == 1;
        const GemmActivation acts[] = {GemmActivation::kNone, GemmActivation::kRelu, GemmActivation::kClip,
                                       GemmActivation::kSigmoid};
        cs.act = acts[seed % 4];
        cs.act_beta = 0.5f;
        check_case(cs, GetParam(), (seed % 2) ? &pool : nullptr, seed);
        ++seed;
      }
}

// N = 1 against pre-packed A (squeeze-excite 1x1 convs), or row-major A with a contiguous column,
// takes its own path when C = A * b with at most a per-row bias and a residual. When N is past a
// whole number of vectors by up to a quarter vector (7x7 planes: 49; 14x14: 196) the macro-kernel
// computes the last columns sliver by sliver (K = 1100 spans two K blocks on AVX2: the columns are
// added up across them). The other epilogues and layouts must still be right (they take the
// tiled path). K up to 256 is read a period of k rows at a time (8 on AVX-512, 4 on AVX2), the
// rest a k row at a time; every first case of a shape has N = 1.
TEST_P(SgemmIsaTest, SingleColumnPrePackedA) {
  uint32_t seed = 380;
  core::ThreadPool pool(2);
  std::mt19937 pick(17);  // independent choices per case
  auto one_in = [&](uint32_t n) { return pick() % n == 0; };
  const int64_t ms[] = {1, 13, 14, 15, 29, 48, 1152};
  const int64_t ks[] = {1, 2, 5, 8, 20, 48, 255, 256, 257, 577, 1100};
  // Extra columns on AVX-512: 1 for 17 and 49; 4, 4, 2, 3, 4 for 20, 36, 50, 51, 196; 21 (5) is
  // tiled. On AVX2: 1 for 9, 17 and 49, 2 for 50; the others are tiled.
  const int64_t ns[] = {1, 1, 9, 17, 49, 20, 36, 50, 51, 196, 21};
  const GemmActivation acts[] = {GemmActivation::kNone, GemmActivation::kRelu, GemmActivation::kSigmoid,
                                 GemmActivation::kSilu, GemmActivation::kHardSigmoid};
  for (int64_t m : ms)
    for (int64_t k : ks)
      for (int rep = 0; rep < 3; ++rep) {
        Case cs;
        cs.m = m;
        cs.n = rep == 0 ? 1 : ns[pick() % std::size(ns)];
        cs.k = k;
        cs.pack_a = !one_in(3);  // plain A with a contiguous column takes the path too
        cs.ta = one_in(4);
        cs.tb = one_in(2);
        cs.pad_b = one_in(2) ? 0 : 3;
        cs.pad_c = one_in(3) ? 2 : 0;
        cs.act = acts[pick() % 5];
        cs.act_alpha = 0.2f;
        cs.act_beta = 0.5f;
        cs.bias = one_in(3) ? GemmBias::kNone : GemmBias::kPerRow;
        if (one_in(7)) cs.beta = 0.5f;  // not the single-column path
        cs.residual = one_in(2);
        cs.pad_r = one_in(2) ? 1 : 0;
        check_case(cs, GetParam(), one_in(2) ? &pool : nullptr, seed++);
      }
}

TEST_P(SgemmIsaTest, Batched) {
  uint32_t seed = 400;
  for (bool ptrs : {false, true})
    for (bool bcast : {false, true})
      for (bool packed_b : {false, true}) {
        if (packed_b && !bcast) continue;  // a packed B is one matrix shared by the batch
        Case cs;
        cs.m = 19;
        cs.n = 35;
        cs.k = 27;
        cs.batch = 5;
        cs.batch_ptrs = ptrs;
        cs.broadcast_b = bcast;
        cs.pack_b = packed_b;
        cs.beta = 0.5f;
        cs.residual = true;
        cs.bias = GemmBias::kPerColumn;
        check_case(cs, GetParam(), nullptr, seed++);
      }
}

TEST_P(SgemmIsaTest, TwoThreadPool) {
  core::ThreadPool pool(2);
  uint32_t seed = 500;
  const Case cases[] = {
      {.m = 256, .n = 300, .k = 200, .beta = 0.5f, .bias = GemmBias::kPerColumn, .act = GemmActivation::kTanh},
      {.m = 1000, .n = 49, .k = 320, .bias = GemmBias::kPerRow, .residual = true, .act = GemmActivation::kRelu},
      {.m = 24, .n = 3136, .k = 144, .ta = true, .tb = true},
      {.m = 64, .n = 64, .k = 64, .pack_a = true, .pack_b = true},
      {.m = 77, .n = 91, .k = 130, .batch = 3},
      {.m = 200, .n = 120, .k = 90, .batch = 7, .batch_ptrs = true},
      {.m = 500, .n = 33, .k = 300, .pack_a = true},
  };
  for (const Case& cs : cases) check_case(cs, GetParam(), &pool, seed++);
}

// split_columns: with N >= kSplitColumnsMinN each thread takes one range of columns (a conv's
// pixels) whatever the cost model would pick; ranges end mid-vector when N is not a multiple of
// the tile width, and the residual / column bias follow the column offset.
TEST_P(SgemmIsaTest, ColumnSplitWithThreads) {
  uint32_t seed = 900;
  const Case cases[] = {
      {.m = 64,
       .n = 3025,
       .k = 16,
       .bias = GemmBias::kPerRow,
       .act = GemmActivation::kRelu,
       .pack_a = true,
       .split_columns = true},
      {.m = 16, .n = kSplitColumnsMinN, .k = 128, .bias = GemmBias::kPerRow, .pack_a = true, .split_columns = true},
      {.m = 30,
       .n = 1777,
       .k = 37,
       .pad_c = 3,
       .bias = GemmBias::kPerColumn,
       .residual = true,
       .act = GemmActivation::kClip,
       .act_alpha = -0.5f,
       .act_beta = 0.5f,
       .split_columns = true},
      {.m = 24, .n = 1100, .k = 20, .alpha = 0.5f, .beta = 0.25f, .batch = 2, .split_columns = true},
      {.m = 40, .n = 1500, .k = 600, .act = GemmActivation::kSigmoid, .split_columns = true},  // two K blocks
      {.m = 20, .n = 200, .k = 64, .split_columns = true},  // below the width: split by cost
  };
  for (int threads : {2, 3}) {
    core::ThreadPool pool(threads);
    for (const Case& cs : cases) check_case(cs, GetParam(), &pool, seed++);
  }
}

// With threads, a large C with 64-byte aligned rows is written with non-temporal stores when the
// activation is applied in the store (none, Relu, Clip); partial vectors and other activations keep
// ordinary stores. Checked against the naive product on aligned buffers, batched and not.
TEST_P(SgemmIsaTest, LargeAlignedCWithThreads) {
  core::ThreadPool pool(2);
  std::mt19937 rng(91);
  const int64_t m = 96, n = 1030, k = 40;  // 1030: whole vectors plus a partial one per row
  const int64_t ldc = 1040;                // a multiple of every vector width
  const std::vector<float> a = random_vector(static_cast<size_t>(2 * m * k), rng);
  const std::vector<float> b = random_vector(static_cast<size_t>(2 * k * n), rng);
  const std::vector<float> bias = random_vector(static_cast<size_t>(m), rng);
  const std::vector<float> res = random_vector(static_cast<size_t>(2 * m * ldc), rng);
  std::vector<float> storage(static_cast<size_t>(2 * m * ldc + 16));
  float* c = storage.data();
  while (reinterpret_cast<uintptr_t>(c) % 64 != 0) ++c;
  const GemmActivation acts[] = {GemmActivation::kNone, GemmActivation::kRelu, GemmActivation::kClip,
                                 GemmActivation::kSigmoid};
  for (GemmActivation act : acts)
    for (int64_t count : {1, 2}) {
      SCOPED_TRACE(std::string(activation_name(act)) + " batch " + std::to_string(count));
      GemmEpilogue ep;
      ep.bias_kind = GemmBias::kPerRow;
      ep.bias = bias.data();
      ep.residual = res.data();
      ep.ldr = ldc;
      ep.activation = act;
      ep.act_alpha = -0.5f;
      ep.act_beta = 0.5f;
      SgemmBatch batch;
      batch.count = count;
      batch.stride_a = m * k;
      batch.stride_b = k * n;
      batch.stride_c = m * ldc;
      batch.stride_residual = m * ldc;
      std::fill(storage.begin(), storage.end(), NAN);
      SgemmContext ctx{&pool, GetParam()};
      ASSERT_TRUE(sgemm_batched(m, n, k, 1.f, SgemmA(a.data(), k), SgemmB(b.data(), n), 0.f, c, ldc, batch, ep, ctx)
                      .is_ok());
      for (int64_t bi = 0; bi < count; ++bi)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double acc = bias[static_cast<size_t>(i)] + res[static_cast<size_t>(bi * m * ldc + i * ldc + j)];
            double mag = std::fabs(acc);
            for (int64_t p = 0; p < k; ++p) {
              const double x = a[static_cast<size_t>(bi * m * k + i * k + p)] * b[static_cast<size_t>(bi * k * n + p * n + j)];
              acc += x;
              mag += std::fabs(x);
            }
            const double want = testing::activation_ref(act, acc, -0.5, 0.5);
            ASSERT_NEAR(c[bi * m * ldc + i * ldc + j], want, 1e-5 * (1 + mag)) << bi << " " << i << " " << j;
          }
    }
}

TEST_P(SgemmIsaTest, DegenerateSizes) {
  uint32_t seed = 600;
  // K = 0: C = beta * C + epilogue.
  for (float beta : {0.f, 0.5f}) {
    Case cs;
    cs.m = 17;
    cs.n = 33;
    cs.k = 0;
    cs.beta = beta;
    cs.bias = GemmBias::kPerColumn;
    cs.act = GemmActivation::kSigmoid;
    check_case(cs, GetParam(), nullptr, seed++);
  }
  {  // alpha = 0 with K > 0
    Case cs;
    cs.m = 5;
    cs.n = 6;
    cs.k = 7;
    cs.alpha = 0.f;
    cs.beta = 2.f;
    check_case(cs, GetParam(), nullptr, seed++);
  }
  for (int64_t m : {0, 1})
    for (int64_t n : {0, 1})
      for (int64_t k : {0, 1, 5}) {
        Case cs;
        cs.m = m;
        cs.n = n;
        cs.k = k;
        cs.beta = 1.f;
        check_case(cs, GetParam(), nullptr, seed++);
      }
  // Null data is fine when there is nothing to read or write.
  EXPECT_TRUE(
      sgemm(false, false, 0, 0, 5, 1.f, nullptr, 5, nullptr, 0, 0.f, nullptr, 0, {}, {.isa = GetParam()}).is_ok());
}

INSTANTIATE_TEST_SUITE_P(AllIsas, SgemmIsaTest, ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                           return std::string(core::isa_name(info.param));
                         });

TEST(SgemmTest, RejectsBadArguments) {
  std::vector<float> a(64, 1.f), b(64, 1.f), c(64, 0.f);
  // ld smaller than the row.
  EXPECT_FALSE(sgemm(false, false, 4, 4, 4, 1.f, a.data(), 3, b.data(), 4, 0.f, c.data(), 4).is_ok());
  EXPECT_FALSE(sgemm(false, false, 4, 4, 4, 1.f, a.data(), 4, b.data(), 4, 0.f, c.data(), 2).is_ok());
  EXPECT_FALSE(sgemm(false, true, 4, 8, 2, 1.f, a.data(), 4, b.data(), 1, 0.f, c.data(), 8).is_ok());
  // Negative sizes, null pointers, missing bias.
  EXPECT_FALSE(sgemm(false, false, -1, 4, 4, 1.f, a.data(), 4, b.data(), 4, 0.f, c.data(), 4).is_ok());
  EXPECT_FALSE(sgemm(false, false, 4, 4, 4, 1.f, nullptr, 4, b.data(), 4, 0.f, c.data(), 4).is_ok());
  GemmEpilogue ep;
  ep.bias_kind = GemmBias::kPerRow;
  EXPECT_FALSE(sgemm(false, false, 4, 4, 4, 1.f, a.data(), 4, b.data(), 4, 0.f, c.data(), 4, ep).is_ok());
  // Overflowing extents.
  EXPECT_FALSE(
      sgemm(false, false, int64_t{1} << 40, 4, 4, 1.f, a.data(), int64_t{1} << 40, b.data(), 4, 0.f, c.data(), 4)
          .is_ok());
  // Packed operand with the wrong shape, or used with another ISA.
  auto pb = pack_b(4, 4, b.data(), 4, false, Isa::kScalar);
  ASSERT_TRUE(pb.is_ok());
  EXPECT_FALSE(sgemm(4, 5, 4, 1.f, SgemmA(a.data(), 4), *pb, 0.f, c.data(), 5).is_ok());
  if (core::detected_isa() > Isa::kScalar) {
    SgemmContext ctx;
    ctx.isa = core::detected_isa();
    EXPECT_FALSE(sgemm(4, 4, 4, 1.f, SgemmA(a.data(), 4), *pb, 0.f, c.data(), 4, {}, ctx).is_ok());
  }
  // A packed operand is shared by a batch: strides or pointer arrays for it are a mistake.
  SgemmBatch batch;
  batch.count = 2;
  batch.stride_b = 16;
  batch.stride_c = 16;
  EXPECT_FALSE(sgemm_batched(4, 4, 4, 1.f, SgemmA(a.data(), 4), *pb, 0.f, c.data(), 4, batch).is_ok());
  batch.stride_b = 0;
  batch.stride_c = -16;
  EXPECT_FALSE(sgemm_batched(4, 4, 4, 1.f, SgemmA(a.data(), 4), *pb, 0.f, c.data(), 4, batch).is_ok());
  EXPECT_TRUE(sgemm(4, 4, 4, 1.f, SgemmA(a.data(), 4), *pb, 0.f, c.data(), 4).is_ok());
  EXPECT_FLOAT_EQ(c[0], 4.f);
}

TEST(SgemmTest, ActiveIsaIsUsedByDefault) {
  // Whatever KESTREL_ISA selects must run; the result is the same as the explicit scalar path.
  std::vector<float> a(6 * 5), b(5 * 7), c1(6 * 7), c2(6 * 7);
  std::mt19937 rng(9);
  for (auto& x : a) x = static_cast<float>(rng() % 7) - 3.f;  // small integers: exact in float
  for (auto& x : b) x = static_cast<float>(rng() % 5) - 2.f;
  ASSERT_TRUE(sgemm(false, false, 6, 7, 5, 1.f, a.data(), 5, b.data(), 7, 0.f, c1.data(), 7).is_ok());
  ASSERT_TRUE(sgemm(false, false, 6, 7, 5, 1.f, a.data(), 5, b.data(), 7, 0.f, c2.data(), 7, {}, {.isa = Isa::kScalar})
                  .is_ok());
  EXPECT_EQ(c1, c2);
}

}  // namespace
}  // namespace kestrel::kernels::cpu
