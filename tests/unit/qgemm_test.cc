// Int8 GEMM against a plain int64 reference written here: every ISA path (skipped visibly when the
// CPU lacks it), random shapes (1, primes, non-multiples of 4 / 16 / 64, large K), the worst-case
// values (A = 255, B = -128: the pairs that saturate vpmaddubsw), zero points, every epilogue,
// strides, transposed weights, a 2-thread pool and bad arguments.
#include "kernels/cpu/qgemm/qgemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"

namespace kestrel::kernels::cpu {
namespace {

struct Case {
  int64_t m, n, k;
  int64_t lda_pad = 0, ldc_pad = 0;
  bool trans_b = false;
  bool trans_c = false;  // C stored transposed ([N, M], ldc >= M)
};

struct Inputs {
  std::vector<uint8_t> a;  // [m, lda]
  std::vector<int8_t> b;   // [k, n] or [n, k]
  std::vector<int32_t> bias;
  int64_t lda = 0, ldb = 0;
};

Inputs make_inputs(const Case& cs, std::mt19937& rng, int a_fill = -1, int b_fill = 1000) {
  Inputs in;
  in.lda = cs.k + cs.lda_pad;
  in.ldb = cs.trans_b ? cs.k : cs.n;
  std::uniform_int_distribution<int> du(0, 255), ds(-128, 127), db(-100000, 100000);
  in.a.resize(static_cast<size_t>(std::max<int64_t>(cs.m * in.lda, 1)));
  for (auto& x : in.a) x = static_cast<uint8_t>(a_fill >= 0 ? a_fill : du(rng));
  in.b.resize(static_cast<size_t>(std::max<int64_t>(cs.k * cs.n, 1)));
  for (auto& x : in.b) x = static_cast<int8_t>(b_fill != 1000 ? b_fill : ds(rng));
  in.bias.resize(static_cast<size_t>(std::max<int64_t>(cs.n, 1)));
  for (auto& x : in.bias) x = db(rng);
  return in;
}

// acc[m, n] = sum_k (a - zp) * b (+ bias), in int64.
std::vector<int64_t> reference_acc(const Case& cs, const Inputs& in, int zp, bool with_bias) {
  std::vector<int64_t> acc(static_cast<size_t>(cs.m * cs.n));
  for (int64_t i = 0; i < cs.m; ++i) {
    for (int64_t j = 0; j < cs.n; ++j) {
      int64_t s = with_bias ? in.bias[static_cast<size_t>(j)] : 0;
      for (int64_t p = 0; p < cs.k; ++p) {
        const int64_t bv =
            cs.trans_b ? in.b[static_cast<size_t>(j * in.ldb + p)] : in.b[static_cast<size_t>(p * in.ldb + j)];
        s += (static_cast<int64_t>(in.a[static_cast<size_t>(i * in.lda + p)]) - zp) * bv;
      }
      acc[static_cast<size_t>(i * cs.n + j)] = s;
    }
  }
  return acc;
}

class QgemmIsaTest : public ::testing::TestWithParam<QgemmIsa> {
 protected:
  void SetUp() override {
    if (!qgemm_isa_available(GetParam()))
      GTEST_SKIP() << qgemm_isa_name(GetParam()) << " kernels not available on this CPU / build";
  }

  PackedBS8 pack(const Case& cs, const Inputs& in) {
    auto r = pack_b_s8(cs.k, cs.n, in.b.data(), in.ldb, cs.trans_b, GetParam());
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return r.is_ok() ? std::move(r).value() : PackedBS8();
  }
};

std::string describe(const Case& cs, int zp) {
  return "m=" + std::to_string(cs.m) + " n=" + std::to_string(cs.n) + " k=" + std::to_string(cs.k) + " lda+" +
         std::to_string(cs.lda_pad) + " ldc+" + std::to_string(cs.ldc_pad) + (cs.trans_b ? " transB" : "") +
         " a_zp=" + std::to_string(zp);
}

// int32 output (with and without bias) vs the reference; the padding of C must stay untouched.
void check_int32(const Case& cs, const Inputs& in, const PackedBS8& pb, int zp, bool with_bias,
                 core::ThreadPool* pool = nullptr) {
  const int64_t rows = cs.trans_c ? cs.n : cs.m, cols = cs.trans_c ? cs.m : cs.n;
  const int64_t ldc = cols + cs.ldc_pad;
  std::vector<int32_t> c(static_cast<size_t>(std::max<int64_t>(rows * ldc, 1)), -777);
  QgemmEpilogue ep;
  ep.bias = with_bias ? in.bias.data() : nullptr;
  ep.transpose_c = cs.trans_c;
  QgemmContext ctx;
  ctx.pool = pool;
  ASSERT_TRUE(
      qgemm_u8s8(cs.m, cs.n, cs.k, in.a.data(), in.lda, static_cast<uint8_t>(zp), pb, c.data(), ldc, ep, ctx).is_ok());
  const auto ref = reference_acc(cs, in, zp, with_bias);
  int bad = 0;
  for (int64_t si = 0; si < rows && bad < 5; ++si) {
    for (int64_t sj = 0; sj < ldc && bad < 5; ++sj) {
      const int64_t i = cs.trans_c ? sj : si, j = cs.trans_c ? si : sj;
      const int64_t got = c[static_cast<size_t>(si * ldc + sj)];
      const int64_t want = sj < cols ? ref[static_cast<size_t>(i * cs.n + j)] : -777;
      if (got != want) {
        ADD_FAILURE() << describe(cs, zp) << " C[" << i << "," << j << "] = " << got << ", want " << want;
        ++bad;
      }
    }
  }
}

TEST_P(QgemmIsaTest, RandomShapesInt32) {
  const auto tile = qgemm_tile_shape(GetParam());
  ASSERT_TRUE(tile.is_ok());
  const int64_t mr = tile.value().mr, nr = tile.value().nr;
  std::mt19937 rng(1234);
  std::vector<Case> cases = {
      {1, 1, 1},
      {1, 7, 3},
      {3, 1, 5},
      {2, 2, 4},
      {13, 17, 19},
      {14, 32, 288},
      {15, 33, 4},
      {29, 31, 97},
      {64, 64, 64},
      {100, 65, 130},
      {5, 3, 1000},
      {2, 3, 5003},
      {mr, nr, 16},
      {mr + 1, nr - 1, 17},
      {mr - 1, nr + 1, 15},
      {2 * mr + 3, 2 * nr + 5, 63},
      {37, 80, 257},
      {1, 200, 301},
      {1, 70, 1283},  // one row (the four-way split of the groups) and a remainder group
      {7, 16, 1},
      {3, 64, 2},
      {11, 5, 3},
  };
  for (const Case& base : cases) {
    for (int variant = 0; variant < 4; ++variant) {
      Case cs = base;
      cs.lda_pad = variant == 1 ? 5 : 0;
      cs.ldc_pad = variant == 1 ? 3 : 0;
      cs.trans_b = variant == 2;
      cs.trans_c = variant == 3;
      if (variant == 3) cs.ldc_pad = 2;
      const Inputs in = make_inputs(cs, rng);
      const PackedBS8 pb = pack(cs, in);
      ASSERT_FALSE(pb.empty());
      for (int zp : {0, 128, 255, 37}) check_int32(cs, in, pb, zp, variant != 0);
    }
  }
}

TEST_P(QgemmIsaTest, WorstCaseValuesDoNotSaturate) {
  // 255 * -128 twice is -65280: out of int16 range, the case that breaks a plain vpmaddubsw kernel.
  std::mt19937 rng(7);
  for (const Case& cs : std::vector<Case>{{3, 5, 2}, {17, 33, 4099}, {2, 3, 65536}, {15, 40, 64}}) {
    for (int b_fill : {-128, 127}) {
      const Inputs in = make_inputs(cs, rng, 255, b_fill);
      const PackedBS8 pb = pack(cs, in);
      for (int zp : {0, 255, 1}) check_int32(cs, in, pb, zp, false);
    }
  }
  // Alternating 255 / 0 along K with B = -128 / 127 exercises each half of a pair separately.
  Case cs{6, 20, 1001};
  Inputs in = make_inputs(cs, rng);
  for (int64_t i = 0; i < cs.m; ++i)
    for (int64_t p = 0; p < cs.k; ++p) in.a[static_cast<size_t>(i * in.lda + p)] = (p + i) % 3 ? 255 : 0;
  for (int64_t p = 0; p < cs.k; ++p)
    for (int64_t j = 0; j < cs.n; ++j) in.b[static_cast<size_t>(p * in.ldb + j)] = (p + j) % 2 ? -128 : 127;
  check_int32(cs, in, pack(cs, in), 0, false);
  check_int32(cs, in, pack(cs, in), 200, true);
}

TEST_P(QgemmIsaTest, KIsZero) {
  std::mt19937 rng(3);
  Case cs{5, 9, 0};
  const Inputs in = make_inputs(cs, rng);
  const PackedBS8 pb = pack(cs, in);
  check_int32(cs, in, pb, 10, true);
  check_int32(cs, in, pb, 10, false);
}

// The epilogue reference: written from the documented formulas, not from the kernel code.
struct EpCase {
  QgemmOutput out;
  QgemmRequant req;
  bool per_column;
  int32_t zp;
  int32_t out_min, out_max;
};

TEST_P(QgemmIsaTest, EveryEpilogue) {
  std::mt19937 rng(99);
  const std::vector<EpCase> eps = {
      {QgemmOutput::kF32, QgemmRequant::kFloat, true, 0, -2147483647 - 1, 2147483647},
      {QgemmOutput::kF32, QgemmRequant::kFloat, false, 0, -2147483647 - 1, 2147483647},
      {QgemmOutput::kU8, QgemmRequant::kFloat, true, 128, -2147483647 - 1, 2147483647},
      {QgemmOutput::kU8, QgemmRequant::kFloat, false, 3, -2147483647 - 1, 2147483647},
      {QgemmOutput::kU8, QgemmRequant::kFloat, true, 20, 20, 200},  // fused Relu + clip
      {QgemmOutput::kS8, QgemmRequant::kFloat, true, -5, -2147483647 - 1, 2147483647},
      {QgemmOutput::kS8, QgemmRequant::kFloat, false, 0, 0, 2147483647},
      {QgemmOutput::kU8, QgemmRequant::kFixedPoint, true, 128, -2147483647 - 1, 2147483647},
      {QgemmOutput::kU8, QgemmRequant::kFixedPoint, false, 0, -2147483647 - 1, 2147483647},
      {QgemmOutput::kS8, QgemmRequant::kFixedPoint, true, 7, -2147483647 - 1, 2147483647},
      {QgemmOutput::kS8, QgemmRequant::kFixedPoint, true, -128, -100, 50},
  };
  for (const Case& cs : std::vector<Case>{
           {1, 1, 1}, {13, 17, 19}, {29, 70, 97, 3, 2}, {40, 33, 300, 0, 0, true}, {31, 45, 70, 0, 3, false, true}}) {
    const Inputs in = make_inputs(cs, rng);
    const PackedBS8 pb = pack(cs, in);
    const int a_zp = 77;
    const auto acc = reference_acc(cs, in, a_zp, true);
    // Scales that map the accumulator range onto roughly +-300 output steps (so clamping is hit).
    int64_t amax = 1;
    for (int64_t v : acc) amax = std::max<int64_t>(amax, std::llabs(v));
    std::uniform_real_distribution<double> dscale(0.3, 1.5);
    std::vector<float> scale(static_cast<size_t>(cs.n));
    std::vector<int32_t> mult(static_cast<size_t>(cs.n)), shift(static_cast<size_t>(cs.n));
    for (int64_t j = 0; j < cs.n; ++j) {
      const double real = dscale(rng) * 300.0 / static_cast<double>(amax);
      scale[static_cast<size_t>(j)] = static_cast<float>(real);
      ASSERT_TRUE(quantize_multiplier(real, &mult[static_cast<size_t>(j)], &shift[static_cast<size_t>(j)]).is_ok());
    }
    for (const EpCase& e : eps) {
      QgemmEpilogue ep;
      ep.output = e.out;
      ep.requant = e.req;
      ep.bias = in.bias.data();
      ep.per_column = e.per_column;
      ep.scale = scale.data();
      ep.multiplier = mult.data();
      ep.shift = shift.data();
      ep.out_zero_point = e.zp;
      ep.out_min = e.out_min;
      ep.out_max = e.out_max;
      ep.transpose_c = cs.trans_c;
      const int64_t rows = cs.trans_c ? cs.n : cs.m, cols = cs.trans_c ? cs.m : cs.n;
      const int64_t ldc = cols + cs.ldc_pad;
      const bool q = e.out == QgemmOutput::kU8 || e.out == QgemmOutput::kS8;
      const size_t esize = q ? 1 : 4;
      std::vector<uint8_t> c(static_cast<size_t>(rows * ldc) * esize, 0xA5);
      ASSERT_TRUE(qgemm_u8s8(cs.m, cs.n, cs.k, in.a.data(), in.lda, a_zp, pb, c.data(), ldc, ep).is_ok());
      const int32_t tmin = e.out == QgemmOutput::kU8 ? 0 : -128, tmax = e.out == QgemmOutput::kU8 ? 255 : 127;
      const int64_t lo = std::max(tmin, e.out_min), hi = std::min(tmax, e.out_max);
      int bad = 0;
      for (int64_t si = 0; si < rows && bad < 5; ++si) {
        for (int64_t sj = 0; sj < ldc && bad < 5; ++sj) {
          const int64_t i = cs.trans_c ? sj : si, j = cs.trans_c ? si : sj;
          const size_t at = static_cast<size_t>(si * ldc + sj);
          if (sj >= cols) {  // padding untouched
            for (size_t bidx = 0; bidx < esize; ++bidx) {
              if (c[at * esize + bidx] != 0xA5) {
                ADD_FAILURE() << describe(cs, a_zp) << " padding C[" << i << "," << j << "] written";
                ++bad;
              }
            }
            continue;
          }
          const int64_t x = acc[static_cast<size_t>(i * cs.n + j)];
          const size_t pj = e.per_column ? static_cast<size_t>(j) : 0;
          std::string what;
          bool ok;
          if (e.out == QgemmOutput::kF32) {
            float got;
            std::memcpy(&got, &c[at * 4], 4);
            const float want = static_cast<float>(static_cast<int32_t>(x)) * scale[pj];
            ok = got == want;
            what = std::to_string(got) + " want " + std::to_string(want);
          } else {
            int64_t r;
            if (e.req == QgemmRequant::kFloat) {
              r = std::llrint(static_cast<double>(static_cast<float>(x) * scale[pj]));
            } else {
              const int s = shift[pj];
              r = (x * mult[pj] + (int64_t{1} << (s - 1))) >> s;  // floor: arithmetic shift (C++20)
              // The fixed-point result is the real product rounded (within one step).
              const double real = static_cast<double>(mult[pj]) * std::ldexp(1.0, -s);
              if (std::fabs(static_cast<double>(r) - static_cast<double>(x) * real) > 0.5 + 1e-6) {
                ADD_FAILURE() << "fixed point off by more than half a step";
                ++bad;
              }
            }
            const int64_t want = std::min(hi, std::max(lo, r + e.zp));
            const int64_t got = e.out == QgemmOutput::kU8 ? static_cast<int64_t>(c[at])
                                                          : static_cast<int64_t>(static_cast<int8_t>(c[at]));
            ok = got == want;
            what = std::to_string(got) + " want " + std::to_string(want);
          }
          if (!ok) {
            ADD_FAILURE() << describe(cs, a_zp) << " out=" << static_cast<int>(e.out)
                          << " req=" << static_cast<int>(e.req) << " per_column=" << e.per_column << " zp=" << e.zp
                          << " C[" << i << "," << j << "] = " << what;
            ++bad;
          }
        }
      }
    }
  }
}

TEST_P(QgemmIsaTest, TwoThreadPool) {
  core::ThreadPool pool(2);
  std::mt19937 rng(5);
  for (const Case& cs :
       std::vector<Case>{{300, 64, 288}, {7, 500, 300}, {130, 130, 130, 1, 1}, {200, 40, 100, 0, 1, false, true}}) {
    const Inputs in = make_inputs(cs, rng);
    const PackedBS8 pb = pack(cs, in);
    check_int32(cs, in, pb, 99, true, &pool);
  }
}

TEST_P(QgemmIsaTest, BadArguments) {
  std::vector<uint8_t> a(64, 1);
  std::vector<int8_t> b(64, 1);
  std::vector<int32_t> c(64);
  auto pb = pack_b_s8(4, 4, b.data(), 4, false, GetParam());
  ASSERT_TRUE(pb.is_ok());
  EXPECT_FALSE(qgemm_u8s8(4, 4, 5, a.data(), 5, 0, pb.value(), c.data(), 4).is_ok());  // K mismatch
  EXPECT_FALSE(qgemm_u8s8(4, 3, 4, a.data(), 4, 0, pb.value(), c.data(), 4).is_ok());  // N mismatch
  EXPECT_FALSE(qgemm_u8s8(-1, 4, 4, a.data(), 4, 0, pb.value(), c.data(), 4).is_ok());
  EXPECT_FALSE(qgemm_u8s8(4, 4, 4, nullptr, 4, 0, pb.value(), c.data(), 4).is_ok());
  EXPECT_FALSE(qgemm_u8s8(4, 4, 4, a.data(), 3, 0, pb.value(), c.data(), 4).is_ok());  // lda < k
  EXPECT_FALSE(qgemm_u8s8(4, 4, 4, a.data(), 4, 0, pb.value(), c.data(), 2).is_ok());  // ldc < n
  EXPECT_FALSE(qgemm_u8s8(4, 4, 4, a.data(), 4, 0, PackedBS8(), c.data(), 4).is_ok());
  QgemmEpilogue ep;
  ep.output = QgemmOutput::kF32;  // no scale
  EXPECT_FALSE(qgemm_u8s8(4, 4, 4, a.data(), 4, 0, pb.value(), c.data(), 4, ep).is_ok());
  float scale = 0.5f;
  int32_t mult = 1 << 30, shift = 0;
  ep.output = QgemmOutput::kU8;
  ep.scale = &scale;
  ep.per_column = false;
  ep.out_zero_point = 300;  // outside u8
  EXPECT_FALSE(qgemm_u8s8(4, 4, 4, a.data(), 4, 0, pb.value(), c.data(), 4, ep).is_ok());
  ep.out_zero_point = 0;
  ep.out_min = 100;
  ep.out_max = 50;  // empty range
  EXPECT_FALSE(qgemm_u8s8(4, 4, 4, a.data(), 4, 0, pb.value(), c.data(), 4, ep).is_ok());
  ep.out_min = 0;
  ep.out_max = 255;
  ep.requant = QgemmRequant::kFixedPoint;  // no multiplier
  EXPECT_FALSE(qgemm_u8s8(4, 4, 4, a.data(), 4, 0, pb.value(), c.data(), 4, ep).is_ok());
  ep.multiplier = &mult;
  ep.shift = &shift;  // shift 0 is outside [1, 62]
  EXPECT_FALSE(qgemm_u8s8(4, 4, 4, a.data(), 4, 0, pb.value(), c.data(), 4, ep).is_ok());
  shift = 31;
  EXPECT_TRUE(qgemm_u8s8(4, 4, 4, a.data(), 4, 0, pb.value(), c.data(), 4, ep).is_ok());
  EXPECT_FALSE(pack_b_s8(65537, 1, b.data(), 1, false, GetParam()).is_ok());  // K too large
  EXPECT_FALSE(pack_b_s8(4, -1, b.data(), 4, false, GetParam()).is_ok());
  EXPECT_FALSE(pack_b_s8(4, 4, nullptr, 4, false, GetParam()).is_ok());
  // M = 0 / N = 0 are no-ops.
  EXPECT_TRUE(qgemm_u8s8(0, 4, 4, nullptr, 4, 0, pb.value(), nullptr, 4).is_ok());
}

INSTANTIATE_TEST_SUITE_P(AllIsas, QgemmIsaTest,
                         ::testing::Values(QgemmIsa::kScalar, QgemmIsa::kAvx2, QgemmIsa::kAvxVnni,
                                           QgemmIsa::kAvx512Vnni),
                         [](const ::testing::TestParamInfo<QgemmIsa>& info) {
                           return std::string(qgemm_isa_name(info.param));
                         });

TEST(Qgemm, QuantizeMultiplier) {
  for (double real : {0.5, 0.25, 0.75, 1e-6, 0.999999, 1.0, 3.5, 0.0123456789}) {
    int32_t m = 0, s = 0;
    ASSERT_TRUE(quantize_multiplier(real, &m, &s).is_ok()) << real;
    EXPECT_GE(m, 1 << 30);
    EXPECT_NEAR(static_cast<double>(m) * std::ldexp(1.0, -s), real, real * 1e-9) << real;
  }
  int32_t m, s;
  EXPECT_FALSE(quantize_multiplier(0.0, &m, &s).is_ok());
  EXPECT_FALSE(quantize_multiplier(-1.0, &m, &s).is_ok());
  EXPECT_FALSE(quantize_multiplier(NAN, &m, &s).is_ok());
  EXPECT_FALSE(quantize_multiplier(1e30, &m, &s).is_ok());  // shift < 1
}

TEST(Qgemm, ActiveIsaIsAvailable) {
  const QgemmIsa isa = qgemm_active_isa();
  EXPECT_TRUE(qgemm_isa_available(isa)) << qgemm_isa_name(isa);
  std::printf("qgemm active ISA: %s\n", qgemm_isa_name(isa));
}

}  // namespace
}  // namespace kestrel::kernels::cpu
