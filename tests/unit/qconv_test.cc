// Int8 kernels (kernels/cpu/qconv, kernels/cpu/qops) against independent naive computations:
// convolution (gemm path: 1x1, im2col, groups, random shapes, extreme values and clamping; direct
// depthwise: 3x3 / 5x5 / other sizes, strides, dilations, pads, plus random depthwise shapes and
// extreme values) on every ISA this CPU has (with and without VNNI), u8 and int32 outputs, and
// the u8 element-wise, lookup and pooling kernels. All bit-exact: the kernels requantize like the
// reference (float(acc) * scale, round half to even, clamp).
#include "kernels/cpu/qconv/qconv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/str_util.h"
#include "core/thread_pool.h"
#include "kernels/cpu/qops/qops.h"
#include "kernels/reference/quantize.h"

namespace kestrel {
namespace {

using kernels::cpu::QConv;
using kernels::cpu::QConvShape;
using kernels::cpu::QConvSpec;
using kernels::cpu::QgemmIsa;
using kernels::cpu::QOut;

struct Level {
  const char* name;
  core::Isa isa;
  QgemmIsa qisa;
  bool dw_vnni;  // the depthwise kernel's VNNI (avx_vnni at avx2, avx512_vnni at avx512)
};
const Level kLevels[] = {{"scalar", core::Isa::kScalar, QgemmIsa::kScalar, false},
                         {"avx2", core::Isa::kAvx2, QgemmIsa::kAvx2, false},
                         {"avxvnni", core::Isa::kAvx2, QgemmIsa::kAvxVnni, true},
                         {"avx512", core::Isa::kAvx512, QgemmIsa::kAvx2, false},
                         {"avx512vnni", core::Isa::kAvx512, QgemmIsa::kAvx512Vnni, true}};
constexpr int kNumLevels = sizeof(kLevels) / sizeof(kLevels[0]);

class QConvTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    const Level& l = kLevels[GetParam()];
    if (l.isa > core::detected_isa() || !kernels::cpu::qgemm_isa_available(l.qisa))
      GTEST_SKIP() << l.name << " not available on this CPU / build";
  }
};

struct Case {
  int64_t n, c, ih, iw, m, kh, kw, group, sh, sw, dh, dw, pt, pl, pb, pr;
};

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
  return (in + pb + pe - ((k - 1) * d + 1)) / s + 1;
}

// extremes: activations and weights only at the ends of their ranges (the largest products, and
// the u8 x s8 pairs that saturate vpmaddubsw); scale_mul scales the requantization scales (large:
// most outputs clamp).
void run_case(const Case& cs, const Level& lv, QOut out, bool with_bias, uint32_t seed, core::ThreadPool* pool,
              bool extremes = false, float scale_mul = 1.f) {
  std::mt19937 rng(seed);
  const int64_t cg = cs.c / cs.group, mg = cs.m / cs.group;
  const int64_t oh = out_size(cs.ih, cs.kh, cs.sh, cs.dh, cs.pt, cs.pb);
  const int64_t ow = out_size(cs.iw, cs.kw, cs.sw, cs.dw, cs.pl, cs.pr);
  std::vector<uint8_t> x(static_cast<size_t>(cs.n * cs.c * cs.ih * cs.iw));
  std::vector<int8_t> w(static_cast<size_t>(cs.m * cg * cs.kh * cs.kw));
  std::uniform_int_distribution<int> du(0, 255), ds(-128, 127), db(-5000, 5000);
  for (auto& v : x) v = static_cast<uint8_t>(extremes ? (du(rng) & 1) * 255 : du(rng));
  for (auto& v : w) v = static_cast<int8_t>(extremes ? ((ds(rng) & 1) ? 127 : -128) : ds(rng));
  QConvSpec sp;
  sp.m = cs.m;
  sp.c_per_group = cg;
  sp.kh = cs.kh;
  sp.kw = cs.kw;
  sp.group = cs.group;
  sp.w = w.data();
  sp.x_zp = static_cast<uint8_t>(extremes ? (rng() & 1) * 255 : du(rng));
  sp.y_zp = du(rng);
  switch (seed % 3) {  // no clamp, a Relu-like one, a Relu6-like narrow one
    case 0:
      break;
    case 1:
      sp.out_min = std::min(sp.y_zp, 40);
      sp.out_max = 250;
      break;
    default:
      sp.out_min = sp.y_zp;
      sp.out_max = std::min(255, sp.y_zp + 30);
  }
  sp.out = out;
  sp.isa = lv.isa;
  sp.qgemm_isa = lv.qisa;
  sp.dw_vnni = lv.dw_vnni;
  for (int64_t i = 0; i < cs.m; ++i)
    sp.scale.push_back(scale_mul * std::uniform_real_distribution<float>(1e-4f, 3e-3f)(rng));
  if (with_bias)
    for (int64_t i = 0; i < cs.m; ++i) sp.bias.push_back(db(rng));
  auto conv = QConv::create(sp);
  ASSERT_TRUE(conv.is_ok()) << conv.status().to_string();
  QConvShape s{cs.n, cs.c, cs.ih, cs.iw, oh, ow, cs.sh, cs.sw, cs.dh, cs.dw, cs.pt, cs.pl};
  const size_t ny = static_cast<size_t>(cs.n * cs.m * oh * ow);
  std::vector<uint8_t> y8(ny, 0xAB);
  std::vector<int32_t> y32(ny, 0x5A5A5A5A);
  void* y = out == QOut::kU8 ? static_cast<void*>(y8.data()) : static_cast<void*>(y32.data());
  // Twice: the second run reuses the scratch.
  for (int rep = 0; rep < 2; ++rep) ASSERT_TRUE((*conv)->run(s, x.data(), y, pool).is_ok());
  int bad = 0;
  for (int64_t n = 0; n < cs.n; ++n)
    for (int64_t m = 0; m < cs.m; ++m) {
      const int64_t g = m / mg;
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          int64_t acc = 0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t ky = 0; ky < cs.kh; ++ky)
              for (int64_t kx = 0; kx < cs.kw; ++kx) {
                const int64_t iy = oy * cs.sh - cs.pt + ky * cs.dh, ix = ox * cs.sw - cs.pl + kx * cs.dw;
                if (iy < 0 || iy >= cs.ih || ix < 0 || ix >= cs.iw) continue;
                const int64_t xv = x[static_cast<size_t>(((n * cs.c + g * cg + c) * cs.ih + iy) * cs.iw + ix)];
                const int64_t wv = w[static_cast<size_t>(((m * cg + c) * cs.kh + ky) * cs.kw + kx)];
                acc += (xv - sp.x_zp) * wv;
              }
          if (with_bias) acc += sp.bias[static_cast<size_t>(m)];
          const size_t at = static_cast<size_t>(((n * cs.m + m) * oh + oy) * ow + ox);
          if (out == QOut::kI32) {
            if (y32[at] != acc && bad++ < 5) ADD_FAILURE() << "i32 at " << at << ": got " << y32[at] << " want " << acc;
            continue;
          }
          const float f = static_cast<float>(acc) * sp.scale[static_cast<size_t>(m)];
          const int64_t q = std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(f)) + sp.y_zp,
                                                std::max(sp.out_min, 0), std::min(sp.out_max, 255));
          if (y8[at] != q && bad++ < 5) ADD_FAILURE() << "u8 at " << at << ": got " << int(y8[at]) << " want " << q;
        }
    }
  EXPECT_EQ(bad, 0) << (*conv)->impl_name() << " case n=" << cs.n << " c=" << cs.c << " " << cs.ih << "x" << cs.iw
                    << " m=" << cs.m << " k=" << cs.kh << "x" << cs.kw << " g=" << cs.group << " s=" << cs.sh << ","
                    << cs.sw << " d=" << cs.dh << "," << cs.dw;
}

const Case kCases[] = {
    // n, c, ih, iw, m, kh, kw, group, sh, sw, dh, dw, pt, pl, pb, pr
    {1, 16, 7, 9, 24, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},     // pointwise (transposed input)
    {2, 5, 13, 11, 7, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},     // pointwise, odd sizes
    {1, 3, 17, 15, 32, 3, 3, 1, 2, 2, 1, 1, 1, 1, 1, 1},    // stem 3x3 s2
    {1, 8, 10, 12, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},     // 3x3 pad 1
    {1, 6, 9, 9, 10, 3, 3, 2, 1, 1, 2, 2, 2, 2, 2, 2},      // grouped, dilated
    {1, 4, 8, 8, 6, 1, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},       // 1x1 stride 2 (im2col)
    {1, 7, 6, 5, 3, 2, 3, 1, 1, 2, 1, 1, 0, 1, 1, 0},       // asymmetric kernel and pads
    {1, 13, 14, 14, 13, 3, 3, 13, 1, 1, 1, 1, 1, 1, 1, 1},  // depthwise 3x3 s1
    {2, 9, 15, 16, 9, 3, 3, 9, 2, 2, 1, 1, 1, 1, 1, 1},     // depthwise 3x3 s2
    {1, 5, 11, 13, 5, 5, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2},     // depthwise 5x5 s2
    {1, 4, 9, 10, 4, 5, 5, 4, 1, 1, 1, 1, 2, 2, 2, 2},      // depthwise 5x5 s1
    {1, 3, 12, 12, 3, 3, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},     // depthwise dilated
    {1, 3, 10, 9, 3, 7, 1, 3, 1, 1, 1, 1, 3, 0, 3, 0},      // depthwise 7x1 (generic taps)
    {1, 2, 7, 7, 2, 3, 3, 2, 3, 3, 1, 1, 0, 2, 1, 0},       // depthwise stride 3
    {1, 5, 1, 1, 5, 3, 3, 5, 1, 1, 1, 1, 1, 1, 1, 1},       // depthwise 1x1 plane, all padding but the centre
    {1, 48, 5, 8, 17, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},     // pointwise, 16 x 16 transposed blocks + edges
    {1, 32, 9, 21, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},     // 3x3 over 32 channels (blocked HWC copy)
    {2, 34, 6, 18, 4, 3, 3, 2, 2, 1, 1, 2, 0, 2, 1, 3},     // grouped (17 per group), dilated width
    {1, 40, 7, 7, 19, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},     // 49 pixels: a tile of 48, then one column
    {1, 24, 1, 1, 20, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},     // one pixel (squeeze-excite)
    {1, 9, 14, 14, 11, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},    // 196 pixels: four tiles, then four columns
};

TEST_P(QConvTest, MatchesNaiveU8) {
  const Level& lv = kLevels[GetParam()];
  uint32_t seed = 1;
  for (const Case& c : kCases) {
    run_case(c, lv, QOut::kU8, true, seed++, nullptr);
    run_case(c, lv, QOut::kU8, false, seed++, nullptr);
  }
}

TEST_P(QConvTest, MatchesNaiveInt32) {
  const Level& lv = kLevels[GetParam()];
  uint32_t seed = 100;
  for (const Case& c : kCases) run_case(c, lv, QOut::kI32, false, seed++, nullptr);
}

TEST_P(QConvTest, TwoThreads) {
  const Level& lv = kLevels[GetParam()];
  core::ThreadPool pool(2);
  uint32_t seed = 200;
  for (const Case& c : kCases) run_case(c, lv, QOut::kU8, true, seed++, &pool);
}

// Random begin / end pads below the window size; false when the output would be empty.
bool random_pads(Case& cs, std::mt19937& rng) {
  cs.pt = static_cast<int64_t>(rng() % static_cast<uint32_t>(cs.kh));
  cs.pb = static_cast<int64_t>(rng() % static_cast<uint32_t>(cs.kh));
  cs.pl = static_cast<int64_t>(rng() % static_cast<uint32_t>(cs.kw));
  cs.pr = static_cast<int64_t>(rng() % static_cast<uint32_t>(cs.kw));
  return out_size(cs.ih, cs.kh, cs.sh, cs.dh, cs.pt, cs.pb) >= 1 &&
         out_size(cs.iw, cs.kw, cs.sw, cs.dw, cs.pl, cs.pr) >= 1;
}

// Random depthwise shapes: channel counts around the vector widths, planes from 1 x 1, 3x3 and 5x5
// windows (the integer kernels) and a few others (the float fallback), strides 1 / 2 / 3, every
// begin / end pad combination, dilation, u8 (three clamps) and int32 outputs, with and without bias.
TEST_P(QConvTest, DepthwiseRandomShapes) {
  const Level& lv = kLevels[GetParam()];
  std::mt19937 rng(4242);
  const int64_t chans[] = {1, 2, 3, 7, 13, 15, 16, 17, 31, 33};
  const int64_t sizes[] = {1, 2, 3, 5, 7, 11, 16, 17, 23, 31, 37, 66, 131};  // rows past one 64-byte vector too
  const auto pick = [&](const auto& arr) { return arr[rng() % (sizeof(arr) / sizeof(arr[0]))]; };
  int ran = 0;
  for (int it = 0; ran < 120 && it < 1000; ++it) {
    Case cs{};
    cs.n = 1 + static_cast<int64_t>(rng() % 4 == 0);
    cs.c = cs.m = cs.group = pick(chans);
    const int kind = static_cast<int>(rng() % 8);
    cs.kh = cs.kw = kind < 4 ? 3 : kind < 7 ? 5 : 1 + static_cast<int64_t>(rng() % 4) * 2;
    if (rng() % 8 == 0) cs.kw = 1 + static_cast<int64_t>(rng() % 5);  // non-square: the float kernel
    cs.sh = cs.sw = 1 + static_cast<int64_t>(rng() % 2);
    if (rng() % 10 == 0) cs.sw = 3;
    cs.dh = cs.dw = rng() % 8 == 0 ? 2 : 1;
    cs.ih = pick(sizes);
    cs.iw = pick(sizes);
    if (!random_pads(cs, rng)) continue;
    const uint32_t seed = 1000 + static_cast<uint32_t>(it);
    const bool i32 = rng() % 4 == 0;
    run_case(cs, lv, i32 ? QOut::kI32 : QOut::kU8, rng() % 3 != 0, seed, nullptr, rng() % 6 == 0);
    if (HasFailure()) return;
    ++ran;
  }
  EXPECT_EQ(ran, 120);
}

// Small output planes (oh * ow <= 64: 7x7, 4x16, 1x64 ...), which the blocked kernel takes on
// AVX-512 and AVX2 (16 channels per block: channel counts around one and two blocks), any window (non-square, 1x1 to
// 7x7), strides 1-3, dilation 2, pads, input rows and columns the window never reaches, batches, 1-2 threads, u8 output
// (int32 keeps the per-plane kernels, checked too).
TEST_P(QConvTest, DepthwiseBlockedSmallPlanes) {
  const Level& lv = kLevels[GetParam()];
  std::mt19937 rng(9090);
  core::ThreadPool pool(2);
  const int64_t chans[] = {1, 5, 15, 16, 17, 31, 32, 33, 40};
  const auto pick = [&](const auto& arr) { return arr[rng() % std::size(arr)]; };
  int ran = 0, blocked = 0;
  for (int it = 0; ran < 150 && it < 2000; ++it) {
    Case cs{};
    cs.n = 1 + static_cast<int64_t>(rng() % 4 == 0);
    cs.c = cs.m = cs.group = pick(chans);
    const int64_t ks[] = {1, 2, 3, 3, 3, 5, 5, 5, 7};
    cs.kh = pick(ks);
    cs.kw = rng() % 6 == 0 ? pick(ks) : cs.kh;
    cs.sh = 1 + static_cast<int64_t>(rng() % 2);
    cs.sw = rng() % 8 == 0 ? 3 : cs.sh;
    cs.dh = cs.dw = rng() % 8 == 0 ? 2 : 1;
    const int64_t oh = 1 + static_cast<int64_t>(rng() % 17), ow = 1 + static_cast<int64_t>(rng() % 17);
    if (oh * ow > 64) continue;
    cs.pt = static_cast<int64_t>(rng() % static_cast<uint32_t>(cs.kh));
    cs.pl = static_cast<int64_t>(rng() % static_cast<uint32_t>(cs.kw));
    // The input the window needs, minus the begin pad, plus rows / columns it may leave unread.
    cs.ih = std::max<int64_t>(1, (oh - 1) * cs.sh + (cs.kh - 1) * cs.dh + 1 - cs.pt + static_cast<int64_t>(rng() % 3));
    cs.iw = std::max<int64_t>(1, (ow - 1) * cs.sw + (cs.kw - 1) * cs.dw + 1 - cs.pl + static_cast<int64_t>(rng() % 3));
    cs.pb = std::max<int64_t>(0, (oh - 1) * cs.sh + (cs.kh - 1) * cs.dh + 1 - cs.pt - cs.ih);
    cs.pr = std::max<int64_t>(0, (ow - 1) * cs.sw + (cs.kw - 1) * cs.dw + 1 - cs.pl - cs.iw);
    if (cs.pb >= cs.kh || cs.pr >= cs.kw) continue;
    const bool i32 = rng() % 8 == 0;
    const uint32_t seed = 3000 + static_cast<uint32_t>(it);
    QConvSpec probe;
    probe.m = cs.m;
    probe.c_per_group = 1;
    probe.group = cs.group;
    probe.kh = cs.kh;
    probe.kw = cs.kw;
    const std::vector<int8_t> w0(static_cast<size_t>(cs.m * cs.kh * cs.kw), 1);
    probe.w = w0.data();
    probe.scale.assign(static_cast<size_t>(cs.m), 1e-3f);
    probe.out = i32 ? QOut::kI32 : QOut::kU8;
    probe.isa = lv.isa;
    probe.qgemm_isa = lv.qisa;
    auto conv = QConv::create(probe);
    ASSERT_TRUE(conv.is_ok());
    const QConvShape shape{cs.n, cs.c, cs.ih, cs.iw, oh, ow, cs.sh, cs.sw, cs.dh, cs.dw, cs.pt, cs.pl};
    blocked += (*conv)->uses_dw_blocks(shape);
    run_case(cs, lv, i32 ? QOut::kI32 : QOut::kU8, rng() % 4 != 0, seed, rng() % 2 ? &pool : nullptr, rng() % 5 == 0);
    if (HasFailure()) return;
    ++ran;
  }
  EXPECT_EQ(ran, 150);
  if (lv.isa != core::Isa::kScalar)
    EXPECT_GT(blocked, 100);  // the u8 cases
  else
    EXPECT_EQ(blocked, 0);
}

// Planes the row tiles take (dw_int_rows: at least 4 / 7 output rows and 3/4 of a vector wide, or 7 columns
// where they read the plane in place): heights around the tile (the last tile overlapping the one before),
// widths around one and two vectors (masked column tails), 3x3 and 5x5, strides 1 and 2, every output kind;
// each pad from 0 to k / 2 on its own (the in-place loads mask the columns and rows outside the plane), and at
// stride 2 sometimes a row or column past the last window.
TEST_P(QConvTest, DepthwiseRowTiles) {
  const Level& lv = kLevels[GetParam()];
  uint32_t seed = 500;
  const int64_t heights[] = {4, 5, 7, 8, 9, 13, 14, 15, 22};
  const int64_t widths[] = {6, 7, 8, 9, 12, 14, 15, 16, 17, 28, 31, 33};
  int ran = 0;
  for (int64_t st : {1, 2})
    for (int64_t k : {3, 5})
      for (int64_t oh : heights)
        for (int64_t ow : widths) {
          const int64_t h = k / 2 + 1, pt = seed % h, pl = seed / 3 % h, pb = seed / 5 % h, pr = seed / 7 % h;
          const int64_t extra = st == 2 ? seed / 2 % 2 : 0;
          const int64_t ih = (oh - 1) * st + k - pt - pb + extra, iw = (ow - 1) * st + k - pl - pr + extra;
          const Case c{1, 3, ih, iw, 3, k, k, 3, st, st, 1, 1, pt, pl, pb, pr};
          run_case(c, lv, seed % 5 == 0 ? QOut::kI32 : QOut::kU8, seed % 3 != 0, seed, nullptr, seed % 7 == 0);
          ++seed;
          ++ran;
          if (HasFailure()) return;
        }
  EXPECT_EQ(ran, 432);
}

// Groups of 16 output channels over channel quads (the direct grouped kernel on AVX-512 VNNI, the
// GEMM path elsewhere): 4-32 channels per group, windows 1-7, strides 1 / 2 (and 3, dilation 2:
// the GEMM fallback), planes from 1 x 1 and rows past one vector, pads, batches, every output kind,
// 1 and 2 threads.
TEST_P(QConvTest, GroupedSixteenRandomShapes) {
  const Level& lv = kLevels[GetParam()];
  std::mt19937 rng(777);
  core::ThreadPool pool(2);
  const int64_t cgs[] = {4, 8, 16, 32}, ks[] = {1, 3, 3, 5, 7}, sizes[] = {1, 2, 5, 7, 9, 14, 17, 28, 33, 56};
  const auto pick = [&](const auto& arr) { return arr[rng() % std::size(arr)]; };
  int ran = 0;
  for (int it = 0; ran < 60 && it < 1000; ++it) {
    Case cs{};
    cs.n = 1 + static_cast<int64_t>(rng() % 5 == 0);
    cs.group = 2 + static_cast<int64_t>(rng() % 4);
    cs.c = pick(cgs) * cs.group;
    cs.m = 16 * cs.group;
    cs.kh = cs.kw = pick(ks);
    cs.sh = cs.sw = 1 + static_cast<int64_t>(rng() % 2);
    cs.dh = cs.dw = 1;
    if (rng() % 10 == 0) cs.sh = cs.sw = 3;
    if (rng() % 10 == 0) cs.dh = cs.dw = 2;
    cs.ih = pick(sizes);
    cs.iw = pick(sizes);
    if (!random_pads(cs, rng)) continue;
    const uint32_t seed = 2000 + static_cast<uint32_t>(it);
    run_case(cs, lv, rng() % 4 == 0 ? QOut::kI32 : QOut::kU8, rng() % 3 != 0, seed, rng() % 2 ? &pool : nullptr,
             rng() % 6 == 0);
    if (HasFailure()) return;
    ++ran;
  }
  EXPECT_EQ(ran, 60);
}

TEST_P(QConvTest, DepthwiseExtremeValues) {
  const Level& lv = kLevels[GetParam()];
  const Case cases[] = {
      // n, c, ih, iw, m, kh, kw, group, sh, sw, dh, dw, pt, pl, pb, pr
      {1, 17, 19, 21, 17, 3, 3, 17, 1, 1, 1, 1, 1, 1, 1, 1},
      {1, 17, 19, 21, 17, 5, 5, 17, 2, 2, 1, 1, 2, 2, 2, 2},
      {1, 9, 40, 37, 9, 5, 5, 9, 1, 1, 1, 1, 0, 4, 4, 0},
      {1, 3, 5, 150, 3, 3, 3, 3, 1, 1, 1, 1, 1, 2, 1, 0},  // padded rows wider than 128 bytes
      {1, 3, 6, 149, 3, 5, 5, 3, 2, 2, 1, 1, 2, 0, 1, 4},
  };
  uint32_t seed = 300;
  for (const Case& c : cases)
    for (QOut out : {QOut::kU8, QOut::kI32}) run_case(c, lv, out, true, seed++, nullptr, true);
}

// Random gemm-path shapes (no depthwise): output channels and channels per group 1, primes,
// multiples of 4 / 16 / 64 and one off; planes from 1x1 to 56x56; 1x1 and 3x3 (stride 1 / 2,
// pads, dilation); groups > 1; batches. Every register-tile edge and panel split is reached.
std::vector<Case> random_gemm_cases(uint32_t seed, int count) {
  std::mt19937 rng(seed);
  const int64_t kChannels[] = {1, 2, 3, 4, 5, 7, 8, 13, 15, 16, 17, 24, 31, 32, 33, 63, 64, 65};
  const int64_t kPlanes[][2] = {{1, 1}, {1, 7}, {2, 3}, {5, 5}, {7, 7}, {11, 13}, {14, 14}, {17, 9}, {28, 28}, {56, 56}};
  auto pick = [&](auto& arr) { return arr[std::uniform_int_distribution<size_t>(0, std::size(arr) - 1)(rng)]; };
  std::vector<Case> cases;
  while (static_cast<int>(cases.size()) < count) {
    Case c{};
    const int64_t group = std::uniform_int_distribution<int>(0, 4)(rng) == 0 ? pick(kChannels) % 3 + 2 : 1;
    const int64_t cg = pick(kChannels), mg = pick(kChannels);
    if (cg == 1 && mg == 1 && group > 1) continue;  // depthwise: not this path
    const auto& pl = pick(kPlanes);
    c.n = std::uniform_int_distribution<int>(0, 5)(rng) == 0 ? 2 : 1;
    c.c = cg * group;
    c.m = mg * group;
    c.group = group;
    c.ih = pl[0];
    c.iw = pl[1];
    const int kind = std::uniform_int_distribution<int>(0, 3)(rng);
    c.kh = c.kw = kind == 0 ? 1 : 3;
    if (kind == 3) c.kw = 1 + 2 * std::uniform_int_distribution<int>(0, 1)(rng);  // 3x1 / 3x3
    c.sh = c.sw = std::uniform_int_distribution<int>(1, 2)(rng);
    c.dh = c.dw = kind == 2 && std::uniform_int_distribution<int>(0, 2)(rng) == 0 ? 2 : 1;
    const int64_t pad = c.kh == 1 ? 0 : std::uniform_int_distribution<int>(0, 2)(rng);
    c.pt = c.pl = pad;
    c.pb = c.pr = pad == 2 ? 1 : pad;
    if (c.kw == 1) c.pl = c.pr = 0;
    if (out_size(c.ih, c.kh, c.sh, c.dh, c.pt, c.pb) < 1 || out_size(c.iw, c.kw, c.sw, c.dw, c.pl, c.pr) < 1) continue;
    if (c.n * c.m * c.c / group * c.ih * c.iw * c.kh * c.kw > 6'000'000) continue;  // keep the naive reference quick
    cases.push_back(c);
  }
  return cases;
}

TEST_P(QConvTest, RandomGemmShapes) {
  const Level& lv = kLevels[GetParam()];
  uint32_t seed = 300;
  for (const Case& c : random_gemm_cases(7, 60)) {
    const QOut out = seed % 3 == 0 ? QOut::kI32 : QOut::kU8;
    run_case(c, lv, out, seed % 2 == 0, seed, nullptr);
    ++seed;
  }
}

TEST_P(QConvTest, RandomGemmShapesTwoThreads) {
  const Level& lv = kLevels[GetParam()];
  core::ThreadPool pool(2);
  uint32_t seed = 500;
  for (const Case& c : random_gemm_cases(11, 25)) run_case(c, lv, QOut::kU8, true, seed++, &pool);
}

TEST_P(QConvTest, ExtremeValuesAndClamping) {
  const Level& lv = kLevels[GetParam()];
  const Case cases[] = {
      // n, c, ih, iw, m, kh, kw, group, sh, sw, dh, dw, pt, pl, pb, pr
      {1, 64, 9, 9, 17, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
      {1, 33, 8, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
      {1, 256, 4, 4, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},  // K = 2304
  };
  uint32_t seed = 700;
  for (const Case& c : cases) {
    run_case(c, lv, QOut::kI32, true, seed++, nullptr, true);
    run_case(c, lv, QOut::kU8, true, seed++, nullptr, true);
    run_case(c, lv, QOut::kU8, true, seed++, nullptr, false, 50.f);  // most outputs clamp
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, QConvTest, ::testing::Range(0, kNumLevels),
                         [](const ::testing::TestParamInfo<int>& i) { return std::string(kLevels[i.param].name); });

TEST(QConv, RejectsBadArguments) {
  std::vector<int8_t> w(2 * 3 * 3 * 3, 1);
  QConvSpec sp;
  sp.m = 2;
  sp.c_per_group = 3;
  sp.kh = sp.kw = 3;
  sp.w = w.data();
  sp.scale = {1.f};  // needs 2
  EXPECT_FALSE(QConv::create(sp).is_ok());
  sp.scale = {1.f, 1.f};
  sp.group = 3;  // 2 output channels are not a multiple of 3 groups
  EXPECT_FALSE(QConv::create(sp).is_ok());
  sp.group = 1;
  sp.y_zp = 300;
  EXPECT_FALSE(QConv::create(sp).is_ok());
  sp.y_zp = 0;
  auto conv = QConv::create(sp);
  ASSERT_TRUE(conv.is_ok());
  std::vector<uint8_t> x(4 * 5 * 5), y(2 * 3 * 3);
  QConvShape s{1, 4, 5, 5, 3, 3, 1, 1, 1, 1, 0, 0};  // 4 channels, weights want 3
  EXPECT_FALSE((*conv)->run(s, x.data(), y.data(), nullptr).is_ok());
}

// --- element-wise / pooling ---

TEST(QOps, BinaryBroadcastMatchesNaive) {
  struct BCase {
    core::Dims a, b, y;
  };
  const BCase cases[] = {{{2, 3, 4, 5}, {2, 3, 4, 5}, {2, 3, 4, 5}},
                         {{2, 3, 4, 5}, {1, 3, 1, 1}, {2, 3, 4, 5}},
                         {{3, 1, 5}, {4, 1}, {3, 4, 5}},
                         {{7}, {}, {7}},
                         {{1}, {2, 9}, {2, 9}},
                         {{2, 1, 3}, {2, 5, 1}, {2, 5, 3}},
                         // One value per row of the other (squeeze-excite gates), either operand.
                         {{1, 6, 7, 7}, {1, 6, 1, 1}, {1, 6, 7, 7}},
                         {{1, 5, 1, 1}, {1, 5, 3, 11}, {1, 5, 3, 11}},
                         {{4, 37}, {4, 1}, {4, 37}},
                         {{3, 16}, {3, 1}, {3, 16}},
                         // Rows of 64 bytes and more (affine_row's packed path), with and without a tail.
                         {{1, 4, 14, 14}, {1, 4, 1, 1}, {1, 4, 14, 14}},
                         {{1, 3, 1, 1}, {1, 3, 8, 16}, {1, 3, 8, 16}},
                         {{2, 70}, {2, 1}, {2, 70}}};
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> du(0, 255);
  for (const auto op : {kernels::cpu::QBinaryOp::kAdd, kernels::cpu::QBinaryOp::kMul})
    for (const BCase& bc : cases) {
      auto numel = [](const core::Dims& d) {
        int64_t n = 1;
        for (int64_t v : d) n *= v;
        return n;
      };
      std::vector<uint8_t> a(static_cast<size_t>(numel(bc.a))), b(static_cast<size_t>(numel(bc.b))),
          y(static_cast<size_t>(numel(bc.y)));
      for (auto& v : a) v = static_cast<uint8_t>(du(rng));
      for (auto& v : b) v = static_cast<uint8_t>(du(rng));
      kernels::cpu::QBinaryParams p;
      p.op = op;
      p.a_scale = 0.02f;
      p.b_scale = 0.013f;
      p.y_scale = op == kernels::cpu::QBinaryOp::kAdd ? 0.03f : 0.05f;
      p.a_zp = 120;
      p.b_zp = 30;
      p.y_zp = 100;
      p.lo = 10;
      p.hi = 240;
      for (core::Isa isa : {core::Isa::kScalar, core::Isa::kAvx2, core::Isa::kAvx512}) {
        if (isa > core::detected_isa()) continue;
        ASSERT_TRUE(kernels::cpu::qbinary_u8(p, a.data(), bc.a, b.data(), bc.b, y.data(), bc.y, nullptr, isa).is_ok());
        // Naive: index every output element, broadcast by coordinates.
        const size_t r = bc.y.size();
        for (int64_t i = 0; i < numel(bc.y); ++i) {
          int64_t rem = i, ia = 0, ib = 0, sa = 1, sb = 1;
          for (size_t d = r; d-- > 0;) {
            const int64_t idx = rem % bc.y[d];
            rem /= bc.y[d];
            const size_t oa = r - bc.a.size(), ob = r - bc.b.size();
            if (d >= oa) {
              const int64_t da = bc.a[d - oa];
              ia += (da == 1 ? 0 : idx) * sa;
              sa *= da;
            }
            if (d >= ob) {
              const int64_t db = bc.b[d - ob];
              ib += (db == 1 ? 0 : idx) * sb;
              sb *= db;
            }
          }
          const double ra = p.a_scale * (a[static_cast<size_t>(ia)] - p.a_zp);
          const double rb = p.b_scale * (b[static_cast<size_t>(ib)] - p.b_zp);
          const double f = (op == kernels::cpu::QBinaryOp::kAdd ? ra + rb : ra * rb) / p.y_scale;
          const double want = std::clamp<double>(std::nearbyint(f) + p.y_zp, p.lo, p.hi);
          ASSERT_LE(std::abs(y[static_cast<size_t>(i)] - want), 1) << "element " << i << " isa " << core::isa_name(isa);
        }
      }
    }
}

TEST(QOps, BinaryRejectsBadShapes) {
  std::vector<uint8_t> a(6), b(4), y(6);
  kernels::cpu::QBinaryParams p;
  EXPECT_FALSE(kernels::cpu::qbinary_u8(p, a.data(), core::Dims{2, 3}, b.data(), core::Dims{4}, y.data(),
                                        core::Dims{2, 3}, nullptr)
                   .is_ok());
  p.y_scale = 0;
  EXPECT_FALSE(kernels::cpu::qbinary_u8(p, a.data(), core::Dims{2, 3}, a.data(), core::Dims{2, 3}, y.data(),
                                        core::Dims{2, 3}, nullptr)
                   .is_ok());
}

TEST(QOps, LookupAndRequantTable) {
  uint8_t table[256];
  kernels::cpu::qrequant_table(0.25, 10, 0.5, 20, 0, 255, table);
  for (int v = 0; v < 256; ++v)
    EXPECT_EQ(table[v], std::clamp<double>(std::nearbyint((v - 10) * 0.5) + 20, 0, 255)) << v;
  std::vector<uint8_t> x(1000), y(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>(i * 7);
  core::ThreadPool pool(2);
  kernels::cpu::qlookup_u8(table, x.data(), y.data(), 1000, &pool);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], table[x[i]]);
}

// Every path (scalar; the AVX-512 VBMI register-table kernel where the CPU has it) against a
// plain lookup: random tables, every byte value, lengths around the 64-byte vector and the
// thread split, unaligned starts; bytes past n stay untouched.
TEST(QOps, LookupEveryIsaMatchesPlainLookup) {
  std::mt19937 rng(11);
  uint8_t table[256];
  for (int v = 0; v < 256; ++v) table[v] = static_cast<uint8_t>(rng());
  core::ThreadPool pool(2);
  for (core::Isa isa : {core::Isa::kScalar, core::Isa::kAvx2, core::Isa::kAvx512}) {
    if (isa > core::detected_isa()) continue;
    for (int64_t n : {1, 2, 63, 64, 65, 127, 128, 129, 256, 1000, 40001}) {
      for (int64_t off : {0, 3}) {
        std::vector<uint8_t> x(static_cast<size_t>(n + off)), y(static_cast<size_t>(n + off + 8), 0xA5);
        for (auto& v : x) v = static_cast<uint8_t>(rng());
        kernels::cpu::qlookup_u8(table, x.data() + off, y.data() + off, n, n > 1000 ? &pool : nullptr, isa);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(y[static_cast<size_t>(off + i)], table[x[static_cast<size_t>(off + i)]])
              << core::isa_name(isa) << " n=" << n << " i=" << i;
        for (int64_t i = n + off; i < n + off + 8; ++i) ASSERT_EQ(y[static_cast<size_t>(i)], 0xA5) << "wrote past n";
        for (int64_t i = 0; i < off; ++i) ASSERT_EQ(y[static_cast<size_t>(i)], 0xA5) << "wrote before the start";
      }
    }
  }
}

// Every ISA's plane sums (vpsadbw on AVX-512 / AVX2 with masked or scalar tails) against the sum in double: plane
// sizes around the 32- and 64-byte vectors (1x1 to 56x56), all-255 planes, unaligned starts, two threads; every ISA
// gives the scalar one's bytes exactly (the sums are exact).
TEST(QOps, GlobalAveragePoolEveryIsaAndPlaneSize) {
  std::mt19937 rng(21);
  core::ThreadPool pool(2);
  for (int64_t hw : {1, 7, 31, 32, 33, 49, 63, 64, 65, 196, 3136}) {
    for (int64_t nc : {1, 5, 300}) {
      std::vector<uint8_t> x(static_cast<size_t>(nc * hw + 1));
      for (auto& v : x) v = static_cast<uint8_t>(rng() & 255);
      if (nc == 5) std::fill(x.begin(), x.begin() + hw, uint8_t{255});  // plane 0 saturates every byte
      std::vector<uint8_t> want;
      for (core::Isa isa : {core::Isa::kScalar, core::Isa::kAvx2, core::Isa::kAvx512}) {
        if (isa > core::detected_isa()) continue;
        std::vector<uint8_t> y(static_cast<size_t>(nc), 0xA5);
        const uint8_t* src = x.data() + (nc == 300 ? 1 : 0);  // unaligned
        ASSERT_TRUE(kernels::cpu::qglobal_avg_pool_u8(src, nc, hw, 0.05f, 7, 0.02f, 3, y.data(),
                                                      nc == 300 ? &pool : nullptr, isa)
                        .is_ok());
        for (int64_t c = 0; c < nc; ++c) {
          double sum = 0;
          for (int64_t i = 0; i < hw; ++i) sum += src[c * hw + i];
          const double q = std::clamp<double>(std::nearbyint((sum / hw - 7) * 0.05 / 0.02) + 3, 0, 255);
          ASSERT_LE(std::abs(y[static_cast<size_t>(c)] - q), 1) << core::isa_name(isa) << " hw=" << hw << " c=" << c;
        }
        if (want.empty()) {
          want = y;
        } else {
          ASSERT_EQ(y, want) << core::isa_name(isa) << " hw=" << hw << " nc=" << nc;
        }
      }
    }
  }
}

TEST(QOps, GlobalAveragePoolMatchesNaive) {
  std::mt19937 rng(3);
  std::vector<uint8_t> x(6 * 49), y(6);
  for (auto& v : x) v = static_cast<uint8_t>(rng() & 255);
  ASSERT_TRUE(kernels::cpu::qglobal_avg_pool_u8(x.data(), 6, 49, 0.05f, 7, 0.02f, 3, y.data(), nullptr).is_ok());
  for (int c = 0; c < 6; ++c) {
    double s = 0;
    for (int i = 0; i < 49; ++i) s += x[static_cast<size_t>(c * 49 + i)];
    const double want = std::clamp<double>(std::nearbyint((s / 49 - 7) * 0.05 / 0.02) + 3, 0, 255);
    EXPECT_LE(std::abs(y[static_cast<size_t>(c)] - want), 1) << c;
  }
}

// Every ISA against the naive max (columns and rows outside the input count as 0, the identity on u8): fixed
// shapes, then random ones with floor or ceil output sizes (windows past the input's end), pads below the
// window, kernels 1-5 and 9 (past the AVX-512 direct path's kMaxKw), strides 1-3, dilations 1-2, rows of
// 1-200 bytes (runs of 32 / 64 outputs and their tails), 1 or 2 threads.
TEST(QOps, MaxPoolMatchesNaive) {
  struct PCase {
    int64_t planes, ih, iw, kh, kw, s, pad, d;
    bool ceil;
  };
  std::vector<PCase> cases = {{3, 13, 11, 3, 3, 2, 0, 1, false},
                              {3, 8, 8, 2, 2, 2, 0, 1, false},
                              {3, 9, 7, 3, 3, 1, 1, 1, false},
                              {3, 10, 10, 3, 3, 2, 1, 2, false},
                              {3, 5, 6, 3, 3, 3, 1, 1, false},
                              // stride 2 rows wide enough for the vector even-column pass (and its tails)
                              {3, 112, 112, 3, 3, 2, 1, 1, false},
                              {3, 9, 150, 3, 3, 2, 1, 1, false},
                              {3, 7, 131, 2, 2, 2, 0, 1, false},
                              {3, 6, 100, 5, 5, 2, 2, 1, false},
                              {3, 4, 66, 3, 3, 2, 0, 1, false},
                              // SqueezeNet's pools (ceil_mode)
                              {2, 111, 111, 3, 3, 2, 0, 1, true},
                              {2, 27, 27, 3, 3, 2, 0, 1, true}};
  std::mt19937 rng(5);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int i = 0; i < 60; ++i) {
    const int64_t kh = pick(1, 5), kw = i % 10 == 9 ? 9 : pick(1, 5), d = i % 7 == 6 ? 2 : 1;
    cases.push_back(
        {pick(1, 5), pick(1, 20), pick(1, 200), kh, kw, pick(1, 3), pick(0, std::min(kh, kw) - 1), d, i % 2 == 1});
  }
  core::ThreadPool pool2(2);
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const PCase& pc = cases[ci];
    kernels::cpu::QMaxPoolShape s;
    s.planes = pc.planes;
    s.ih = pc.ih;
    s.iw = pc.iw;
    s.kh = pc.kh;
    s.kw = pc.kw;
    s.sh = s.sw = pc.s;
    s.dh = s.dw = pc.d;
    s.pad_top = s.pad_left = pc.pad;
    auto out = [&](int64_t in, int64_t k) {
      const int64_t span = in + 2 * pc.pad - ((k - 1) * pc.d + 1);
      if (span < 0) return int64_t{0};
      int64_t o = (pc.ceil ? (span + pc.s - 1) / pc.s : span / pc.s) + 1;
      if (pc.ceil && (o - 1) * pc.s >= in + pc.pad) --o;  // the last window starts inside the input or left pad
      return o;
    };
    s.oh = out(pc.ih, pc.kh);
    s.ow = out(pc.iw, pc.kw);
    if (s.oh < 1 || s.ow < 1) continue;
    SCOPED_TRACE(core::str_cat("case ", ci, ": ", pc.planes, "x", pc.ih, "x", pc.iw, " k ", pc.kh, "x", pc.kw, " s ",
                               pc.s, " pad ", pc.pad, " d ", pc.d, pc.ceil ? " ceil" : ""));
    std::vector<uint8_t> x(static_cast<size_t>(pc.planes * pc.ih * pc.iw)),
        y(static_cast<size_t>(pc.planes * s.oh * s.ow));
    for (auto& v : x) v = static_cast<uint8_t>(rng() & 255);
    for (core::Isa isa : {core::Isa::kScalar, core::Isa::kAvx2, core::Isa::kAvx512}) {
      if (isa > core::detected_isa()) continue;
      std::fill(y.begin(), y.end(), uint8_t{7});
      ASSERT_TRUE(kernels::cpu::qmax_pool_u8(s, x.data(), y.data(), ci % 3 == 2 ? &pool2 : nullptr, isa).is_ok());
      for (int64_t p = 0; p < pc.planes; ++p)
        for (int64_t oy = 0; oy < s.oh; ++oy)
          for (int64_t ox = 0; ox < s.ow; ++ox) {
            int want = 0;
            for (int64_t ky = 0; ky < pc.kh; ++ky)
              for (int64_t kx = 0; kx < pc.kw; ++kx) {
                const int64_t iy = oy * pc.s - pc.pad + ky * pc.d, ix = ox * pc.s - pc.pad + kx * pc.d;
                if (iy >= 0 && iy < pc.ih && ix >= 0 && ix < pc.iw)
                  want = std::max<int>(want, x[static_cast<size_t>((p * pc.ih + iy) * pc.iw + ix)]);
              }
            ASSERT_EQ(y[static_cast<size_t>((p * s.oh + oy) * s.ow + ox)], want)
                << core::isa_name(isa) << " " << p << " " << oy << " " << ox;
          }
    }
  }
}

TEST(QOps, QuantizeDequantizeMatchReference) {
  std::mt19937 rng(11);
  const int64_t n = 1000;
  core::Tensor x = core::Tensor::allocate(core::DType::kF32, {n}).value();
  for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = std::uniform_real_distribution<float>(-3.f, 3.f)(rng);
  x.data<float>()[0] = std::nanf("");
  x.data<float>()[1] = INFINITY;
  x.data<float>()[2] = -INFINITY;
  x.data<float>()[3] = 1e30f;
  x.data<float>()[4] = 0.5f * 0.02f;  // a tie
  core::Tensor s = core::Tensor::scalar<float>(0.02f), z = core::Tensor::scalar<uint8_t>(117);
  core::Tensor want = core::Tensor::allocate(core::DType::kU8, {n}).value();
  core::Tensor back = core::Tensor::allocate(core::DType::kF32, {n}).value();
  ASSERT_TRUE(kernels::ref::quantize_linear({0, 0}, x, s, &z, want).is_ok());
  ASSERT_TRUE(kernels::ref::dequantize_linear({0, 0}, want, s, &z, back).is_ok());
  std::vector<uint8_t> got(n);
  std::vector<float> got_back(n);
  core::ThreadPool pool(2);
  for (core::Isa isa : {core::Isa::kScalar, core::Isa::kAvx2, core::Isa::kAvx512}) {
    if (isa > core::detected_isa()) continue;
    kernels::cpu::quantize_f32_u8(x.data<float>(), n, 0.02f, 117, got.data(), &pool, isa);
    kernels::cpu::dequantize_u8_f32(got.data(), n, 0.02f, 117, got_back.data(), nullptr);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[static_cast<size_t>(i)], want.data<uint8_t>()[i]) << "element " << i << " x " << x.data<float>()[i];
      ASSERT_EQ(got_back[static_cast<size_t>(i)], back.data<float>()[i]) << "element " << i;
    }
  }
}

}  // namespace
}  // namespace kestrel
