// Fast convolution (pointwise GEMM, direct depthwise / grouped, Winograd, im2col + GEMM) against the reference conv
// on every ISA of this CPU: random shapes (1, primes, widths that are not multiples of the vector
// width), strides, pads, dilations, groups, 1-D, batches, every fused activation and a residual,
// with and without a 2-thread pool.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "common/conv_ref_util.h"
#include "common/fast_kernel_util.h"
#include "core/str_util.h"
#include "core/thread_pool.h"
#include "ir/ops/window_geometry.h"
#include "kernels/cpu/conv/conv.h"
#include "kernels/reference/conv.h"
#include "kernels/reference/pool.h"

namespace kestrel::kernels::cpu {
namespace {

using core::Dims;
using core::Isa;
using testing::close_f32;
using testing::random_f32;

struct ConvCase {
  int64_t n, c, h, w, m, group, kh, kw, stride, pad, dilation;
  FastConv::Path path;
  bool one_d = false;
};

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

class FastConvTest : public ::testing::TestWithParam<Isa> {};

using testing::kEveryFusedActivation;

// plane_hint: the plane size FastConv::create is told (0: unknown). nan_residual: every 7th residual element is NaN,
// which every activation must pass on as NaN (activation_ref), on every path.
void check(const ConvCase& cc, Isa isa, const FusedActivation& act, bool residual, bool with_bias,
           core::ThreadPool* pool, std::mt19937& rng, int64_t plane_hint = 0, bool split_columns = false,
           bool nan_residual = false, bool stem_rows_per_thread = false) {
  const int64_t oh = cc.one_d ? 1 : out_size(cc.h, cc.kh, cc.stride, cc.pad, cc.dilation);
  const int64_t ow = out_size(cc.w, cc.kw, cc.stride, cc.pad, cc.dilation);
  const Dims xd = cc.one_d ? Dims{cc.n, cc.c, cc.w} : Dims{cc.n, cc.c, cc.h, cc.w};
  const Dims wd = cc.one_d ? Dims{cc.m, cc.c / cc.group, cc.kw} : Dims{cc.m, cc.c / cc.group, cc.kh, cc.kw};
  const Dims yd = cc.one_d ? Dims{cc.n, cc.m, ow} : Dims{cc.n, cc.m, oh, ow};
  core::Tensor x = random_f32(xd, rng), w = random_f32(wd, rng), b = random_f32({cc.m}, rng);
  core::Tensor z = random_f32(yd, rng);
  if (nan_residual)
    for (int64_t i = 3; i < z.num_elements(); i += 7) z.data<float>()[i] = NAN;
  ref::ConvParams p;
  const size_t sp = cc.one_d ? 1 : 2;
  p.strides.assign(sp, cc.stride);
  p.dilations.assign(sp, cc.dilation);
  p.pads_begin.assign(sp, cc.pad);
  p.group = cc.group;
  core::Tensor want = testing::filled_f32(yd, NAN), got = testing::filled_f32(yd, NAN);
  ASSERT_TRUE(ref::conv(p, x, w, with_bias ? &b : nullptr, want).is_ok());
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    double v = want.data<float>()[i] + (residual ? z.data<float>()[i] : 0.f);
    want.data<float>()[i] = static_cast<float>(testing::activation_ref(act.kind, v, act.alpha, act.beta));
  }
  auto fc = FastConv::create(w, cc.group, act, isa, true, plane_hint);
  ASSERT_TRUE(fc.is_ok()) << fc.status().to_string();
  fc->set_split_columns(split_columns);
  fc->set_stem_rows_per_thread(stem_rows_per_thread);
  const int64_t plane = oh * ow, tmax = FastConv::pointwise_transposed_max_plane(isa);
  EXPECT_EQ(fc->pointwise_transposed(plane), cc.path == FastConv::Path::kPointwise && cc.group == 1 && plane_hint > 0 &&
                                                 plane_hint <= tmax && plane <= tmax);
  // kGrouped: the direct grouped path when the ISA's vector width divides both group widths.
  const int64_t width = isa == Isa::kScalar ? 1 : isa == Isa::kAvx2 ? 8 : 16;
  const bool grouped = (cc.c / cc.group) % width == 0 && (cc.m / cc.group) % width == 0;
  EXPECT_EQ(fc->path_for(p), cc.path == FastConv::Path::kGrouped && !grouped ? FastConv::Path::kIm2col : cc.path);
  Status s = fc->run(p, x, with_bias ? &b : nullptr, residual ? &z : nullptr, got, pool);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_TRUE(close_f32(got, want)) << "x " << core::dims_to_string(xd) << " w " << core::dims_to_string(wd)
                                    << " stride " << cc.stride << " pad " << cc.pad << " dil " << cc.dilation
                                    << " group " << cc.group << " act " << static_cast<int>(act.kind);
}

using P = FastConv::Path;

const ConvCase kCases[] = {
    // pointwise
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, P::kPointwise},
    {1, 16, 7, 7, 24, 1, 1, 1, 1, 0, 1, P::kPointwise},
    {2, 13, 5, 11, 29, 1, 1, 1, 1, 0, 1, P::kPointwise},
    {1, 12, 9, 9, 8, 4, 1, 1, 1, 0, 1, P::kPointwise},  // grouped 1x1 (shufflenet-like)
    {1, 32, 1, 1, 8, 1, 1, 1, 1, 0, 1, P::kPointwise},  // squeeze-excite
    // depthwise
    {1, 3, 7, 7, 3, 3, 3, 3, 1, 1, 1, P::kDepthwise},
    {2, 5, 17, 19, 5, 5, 3, 3, 2, 1, 1, P::kDepthwise},
    {1, 4, 14, 14, 4, 4, 5, 5, 1, 2, 1, P::kDepthwise},
    {1, 3, 23, 13, 3, 3, 5, 5, 2, 2, 1, P::kDepthwise},
    {1, 2, 1, 1, 2, 2, 3, 3, 1, 1, 1, P::kDepthwise},
    {1, 2, 33, 35, 2, 2, 3, 3, 2, 0, 1, P::kDepthwise},  // no pad
    {1, 2, 6, 6, 2, 2, 5, 5, 2, 3, 1, P::kDepthwise},    // pad > reach
    {1, 3, 12, 40, 3, 3, 3, 3, 1, 1, 1, P::kDepthwise},
    // im2col
    {1, 3, 15, 15, 8, 1, 3, 3, 2, 1, 1, P::kStem},         // stem
    {2, 6, 9, 10, 4, 2, 3, 3, 1, 1, 1, P::kGrouped},       // grouped 3x3
    {1, 4, 11, 13, 5, 1, 3, 5, 1, 2, 2, P::kIm2col},       // dilated, non-square
    {1, 3, 9, 9, 3, 3, 3, 3, 1, 2, 2, P::kIm2col},         // depthwise, dilated: falls back
    {1, 3, 9, 9, 3, 3, 3, 3, 3, 1, 1, P::kIm2col},         // depthwise, stride 3
    {1, 8, 8, 8, 16, 1, 1, 1, 2, 0, 1, P::kIm2col},        // 1x1 stride 2
    {1, 5, 6, 6, 7, 1, 1, 1, 1, 1, 1, P::kIm2col},         // 1x1 padded
    {1, 7, 16, 16, 9, 1, 4, 4, 4, 0, 1, P::kIm2col},       // patchify (ViT / mixer stem)
    {1, 6, 1, 10, 4, 2, 1, 3, 1, 1, 1, P::kIm2col, true},  // 1-D grouped
    {2, 3, 1, 17, 5, 1, 1, 1, 1, 0, 1, P::kPointwise, true},
    {2, 12, 5, 5, 8, 4, 1, 1, 1, 0, 1, P::kPointwise},  // grouped 1x1, batch
    {2, 48, 7, 7, 48, 3, 3, 3, 1, 1, 1, P::kGrouped},   // RegNet-like groups of 16
    // depthwise over channel blocks: channels past a whole block, batches, strips of rows
    {2, 37, 9, 11, 37, 37, 3, 3, 1, 1, 1, P::kDepthwise},
    {1, 20, 15, 13, 20, 20, 5, 5, 2, 2, 1, P::kDepthwise},
    {1, 17, 31, 29, 17, 17, 3, 3, 1, 1, 1, P::kDepthwise},  // large 3x3 plane
    {1, 18, 60, 70, 18, 18, 5, 5, 1, 2, 1, P::kDepthwise},  // several strips
    {2, 19, 40, 41, 19, 19, 3, 3, 2, 0, 1, P::kDepthwise},
    {1, 16, 7, 7, 16, 16, 3, 3, 2, 1, 1, P::kDepthwise},  // one whole block, 4x4 out
    // grouped direct (groups of 16 / 32 channels), strides, strips, 5x5
    {1, 32, 11, 13, 32, 2, 3, 3, 1, 1, 1, P::kGrouped},
    {2, 64, 9, 9, 32, 2, 3, 3, 2, 1, 1, P::kGrouped},
    {1, 48, 30, 31, 48, 3, 3, 3, 1, 1, 1, P::kGrouped},
    {1, 32, 8, 6, 64, 2, 5, 5, 1, 2, 1, P::kGrouped},
    // Winograd F(2x2, 3x3): odd sizes (partial tiles), no pad, 1x1 planes, several chunks, batches
    {1, 32, 9, 11, 32, 1, 3, 3, 1, 1, 1, P::kWinograd},
    {2, 37, 7, 6, 33, 1, 3, 3, 1, 1, 1, P::kWinograd},
    {1, 32, 12, 13, 35, 1, 3, 3, 1, 0, 1, P::kWinograd},
    {1, 32, 1, 1, 32, 1, 3, 3, 1, 1, 1, P::kWinograd},
    {1, 40, 40, 37, 48, 1, 3, 3, 1, 1, 1, P::kWinograd},
    {1, 32, 9, 9, 32, 1, 3, 3, 1, 2, 1, P::kWinograd},  // pad 2: output larger than input
    {1, 15, 9, 9, 64, 1, 3, 3, 1, 1, 1, P::kIm2col},    // too few input channels for Winograd
    // plane-direct depthwise (rows at least one vector wide): strides, 5x5, tails, rows past 4 vectors, no pad
    {1, 21, 56, 56, 21, 21, 3, 3, 2, 1, 1, P::kDepthwise},
    {1, 5, 37, 47, 5, 5, 5, 5, 2, 2, 1, P::kDepthwise},
    {2, 9, 33, 100, 9, 9, 5, 5, 1, 2, 1, P::kDepthwise},
    {1, 3, 21, 120, 3, 3, 3, 3, 1, 0, 1, P::kDepthwise},
    {1, 4, 19, 131, 4, 4, 3, 3, 2, 1, 1, P::kDepthwise},
    // plane-direct stride 1 on planes past kDirectCopyMaxPlaneBytes (read from the input, no copy): 5x5, no pad,
    // a tail past whole vectors, batches
    {1, 5, 90, 100, 5, 5, 5, 5, 1, 2, 1, P::kDepthwise},
    {2, 3, 70, 131, 3, 3, 3, 3, 1, 0, 1, P::kDepthwise},
    {1, 17, 64, 129, 17, 17, 3, 3, 1, 1, 1, P::kDepthwise},
    // rows whose last tile is 2 / 3 / 4 vectors wide on AVX-512 and AVX2 (96, 112 and 120 outputs)
    {1, 3, 96, 96, 3, 3, 3, 3, 1, 1, 1, P::kDepthwise},
    {1, 2, 80, 112, 2, 2, 3, 3, 1, 1, 1, P::kDepthwise},
    {1, 2, 72, 120, 2, 2, 5, 5, 1, 2, 1, P::kDepthwise},
    // plane-direct stride 2 (outputs at least kDirectStride2MinWidth wide, read in place): 5x5 with a tail, no pad
    {1, 6, 40, 101, 6, 6, 5, 5, 2, 2, 1, P::kDepthwise},
    {2, 3, 21, 99, 3, 3, 3, 3, 2, 0, 1, P::kDepthwise},
    // stems (3x3 stride 2, at most 4 input channels): channel tails past blocks of 8 and 4, odd sizes, no pad,
    // pad beyond the reach, rows past 2 vectors, batches
    {1, 3, 224, 224, 32, 1, 3, 3, 2, 1, 1, P::kStem},
    {2, 1, 37, 41, 13, 1, 3, 3, 2, 1, 1, P::kStem},
    {1, 4, 30, 70, 7, 1, 3, 3, 2, 0, 1, P::kStem},
    {1, 2, 9, 20, 16, 1, 3, 3, 2, 3, 1, P::kStem},
    {1, 5, 17, 17, 8, 1, 3, 3, 2, 1, 1, P::kIm2col},      // 5 input channels: not a stem
    {1, 16, 13, 11, 16, 1, 3, 3, 1, 1, 1, P::kWinograd},  // Winograd: the fewest channels it takes
    {2, 32, 20, 19, 40, 1, 3, 3, 1, 1, 1, P::kWinograd},  // 2 threads: chunks of tiles as tasks, batch
    {2, 35, 11, 13, 71, 1, 3, 3, 1, 1, 1, P::kWinograd},  // 2 threads: output-channel ranges (few tiles), batch
    // 2 threads: strips of output rows as tasks (stride 2, the direct stem, stride 1 with a residual-sized plane,
    // groups)
    {1, 5, 67, 70, 16, 1, 3, 3, 2, 1, 1, P::kIm2col},  // 5 input channels: not a stem
    {1, 3, 67, 70, 16, 1, 3, 3, 2, 1, 1, P::kStem},
    {2, 15, 41, 37, 24, 1, 3, 3, 1, 1, 1, P::kIm2col},
    {1, 8, 40, 45, 12, 2, 3, 3, 1, 2, 2, P::kIm2col},  // grouped, dilated
    // 2 threads, outputs past FastConv::kStreamOutputBytes: non-temporal stores (plane-direct and blocked depthwise)
    {1, 24, 112, 112, 24, 24, 3, 3, 1, 1, 1, P::kDepthwise},
    {1, 97, 112, 112, 97, 97, 3, 3, 2, 1, 1, P::kDepthwise},
    // 1x1 stride 2 (RegNet's projections), rows of even and odd width
    {1, 6, 9, 64, 10, 1, 1, 1, 2, 0, 1, P::kIm2col},
    {1, 6, 9, 63, 10, 1, 1, 1, 2, 0, 1, P::kIm2col},
};

TEST_P(FastConvTest, MatchesReference) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  std::mt19937 rng(17);
  core::ThreadPool pool(2);
  int i = 0;
  for (const ConvCase& cc : kCases) {
    for (int variant = 0; variant < 2; ++variant, ++i) {
      SCOPED_TRACE(i);
      check(cc, GetParam(), {}, false, variant == 0, variant ? &pool : nullptr, rng);
    }
  }
}

TEST_P(FastConvTest, FusedEpilogues) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  std::mt19937 rng(23);
  core::ThreadPool pool(2);
  // One case per path.
  const ConvCase cases[] = {kCases[2],  kCases[6],  kCases[8],  kCases[14], kCases[23], kCases[24], kCases[25],
                            kCases[28], kCases[31], kCases[32], kCases[34], kCases[37], kCases[42], kCases[44],
                            kCases[47], kCases[49], kCases[50], kCases[51], kCases[53], kCases[54]};
  int i = 0;
  for (const ConvCase& cc : cases)
    for (const FusedActivation& a : kEveryFusedActivation)
      for (int residual = 0; residual < 3; ++residual, ++i) {  // 2: a residual with NaNs
        SCOPED_TRACE(i);
        check(cc, GetParam(), a, residual > 0, true, i % 3 == 0 ? &pool : nullptr, rng, 0, false, residual == 2);
      }
}

// Pointwise convs told their plane size at creation: on small planes C^T = X^T W^T, then a transpose with the
// epilogue. Random channel counts around the vector and GEMM tile widths, planes of 1 to 64 pixels (2-D and 1-D),
// batches, every activation, residual, bias or none, 1 and 2 threads; then kernels told a small plane but run on
// a larger one (the plain GEMM over the unpacked weights), and told a large one (packed as before).
TEST_P(FastConvTest, TransposedPointwise) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  std::mt19937 rng(53);
  core::ThreadPool pool(2);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int i = 0; i < 80; ++i) {
    const bool one_d = i % 7 == 0;
    const int64_t h = one_d ? 1 : pick(1, 8), w = one_d ? pick(1, 64) : pick(1, 64 / h);
    const int64_t m = i % 5 == 0 ? pick(100, 300) : pick(1, 70);
    const ConvCase cc{pick(1, 2), pick(1, 80), h, w, m, 1, 1, 1, 1, 0, 1, P::kPointwise, one_d};
    SCOPED_TRACE(core::str_cat("case ", i, ": n ", cc.n, " c ", cc.c, " h ", h, " w ", w, " m ", m));
    check(cc, GetParam(), kEveryFusedActivation[i % 10], i % 2 == 1, i % 3 != 0, i % 4 < 2 ? &pool : nullptr, rng,
          h * w, false, i % 6 == 5);
  }
  check({2, 24, 12, 12, 40, 1, 1, 1, 1, 0, 1, P::kPointwise}, GetParam(), kEveryFusedActivation[2], true, true, nullptr,
        rng, 49);
  check({1, 24, 12, 12, 40, 1, 1, 1, 1, 0, 1, P::kPointwise}, GetParam(), kEveryFusedActivation[1], false, true, &pool,
        rng, 49);
  check({1, 24, 7, 7, 40, 1, 1, 1, 1, 0, 1, P::kPointwise}, GetParam(), kEveryFusedActivation[1], true, true, nullptr,
        rng, 144);
}

// How threads share a transposed pointwise conv: every (pixel, channel) of the image exactly once, pixel ranges
// starting on GEMM tiles and channel ranges on slivers; one share with one thread; on AVX-512 (14-row tiles, 32-wide
// slivers) a 7x7 plane into 160 channels by pixels (5 slivers split 3 : 2; 28 + 21 rows), into 320 by channels
// (10 slivers, 5 : 5), into 400 by channels (13 slivers, 7 : 6: 7 x 49 rows against 13 x 28).
TEST_P(FastConvTest, TransposedShares) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  std::mt19937 rng(59);
  const SgemmTileShape tile = sgemm_tile_shape(GetParam()).value();
  for (const auto& [m, plane, threads] : std::vector<std::tuple<int64_t, int64_t, int>>{{160, 49, 2},
                                                                                        {320, 49, 2},
                                                                                        {400, 49, 2},
                                                                                        {96, 196, 2},
                                                                                        {160, 49, 1},
                                                                                        {7, 13, 3},
                                                                                        {70, 64, 3},
                                                                                        {1, 1, 2},
                                                                                        {300, 30, 2}}) {
    SCOPED_TRACE(core::str_cat("m ", m, " plane ", plane, " threads ", threads));
    auto fc = FastConv::create_transposed_pointwise(random_f32({m, 8, 1, 1}, rng), {}, GetParam());
    ASSERT_TRUE(fc.is_ok());
    const int64_t nr = fc->transposed_weights().nr(), tasks = fc->transposed_tasks(plane, threads);
    ASSERT_GE(tasks, 1);
    ASSERT_LE(tasks, threads);
    std::vector<int> seen(static_cast<size_t>(m * plane), 0);
    bool by_pixels = false;
    for (int64_t t = 0; t < tasks; ++t) {
      const FastConv::TransposedShare s = fc->transposed_share(plane, tasks, t);
      EXPECT_EQ(s.p0 % tile.mr, 0);
      EXPECT_EQ(s.n0 % nr, 0);
      by_pixels |= s.p1 - s.p0 < plane;
      for (int64_t p = s.p0; p < s.p1; ++p)
        for (int64_t n = s.n0; n < s.n1; ++n) ++seen[static_cast<size_t>(n * plane + p)];
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), m * plane);
    if (threads == 1) {
      EXPECT_EQ(tasks, 1);
    }
    if (GetParam() == Isa::kAvx512 && plane == 49 && threads == 2) {
      EXPECT_EQ(by_pixels, m == 160);
    }
  }
}

// Narrow stride-1 depthwise planes (depthwise_runs_narrow: on AVX-512 output rows of 1 to 4 vectors with at most 1/8
// of the lanes idle, run plane-direct 14, 7, 4 or 3 rows at a time, then pairs and a single row): rows of 12-16,
// 26-32, 42-48 and 56-64 outputs (some just outside the rule, on the blocked path), random heights 1-45 (every
// mix of full tiles, pairs and a last row), 3x3 and 5x5, pads 0 to k - 1, channels across blocks, batches, every
// activation, residual (with NaNs) and bias or none, 1 and 2 threads, against the reference; other ISAs take their
// usual paths on the same shapes.
TEST_P(FastConvTest, NarrowDepthwisePlanes) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  std::mt19937 rng(67);
  core::ThreadPool pool(2);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int i = 0; i < 64; ++i) {
    const int64_t k = i / 4 % 2 ? 5 : 3, pad = pick(0, k - 1);
    const int64_t ow = i % 4 == 0 ? pick(12, 16) : i % 4 == 1 ? pick(26, 32) : i % 4 == 2 ? pick(42, 48) : pick(56, 64);
    const int64_t w = ow + k - 1 - 2 * pad, h = pick(1, 45) + k - 1 - 2 * pad, c = pick(1, 40);
    if (w < 1 || h < 1) continue;
    const ConvCase cc{pick(1, 2), c, h, w, c, c, k, k, 1, pad, 1, P::kDepthwise};
    SCOPED_TRACE(core::str_cat("case ", i, ": n ", cc.n, " c ", c, " h ", h, " w ", w, " k ", k, " pad ", pad));
    const bool residual = i / 8 % 2 == 0;
    check(cc, GetParam(), kEveryFusedActivation[i % 10], residual, i % 5 != 0, i / 2 % 2 ? &pool : nullptr, rng, 0,
          false, residual && i / 16 % 2 == 1);
  }
}

// The stem with one contiguous range of rows per thread (FastConv::set_stem_rows_per_thread, ordinary stores): 2 and
// 3 threads, batches of 1-3 (shares that cross images), heights from 1 output row up, every activation, residual and
// bias or none, against the reference.
TEST_P(FastConvTest, StemRowsPerThread) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  std::mt19937 rng(73);
  core::ThreadPool pool2(2), pool3(3);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int i = 0; i < 30; ++i) {
    const int64_t c = pick(1, FastConv::kStemMaxChannels), m = pick(1, 40), pad = pick(0, 1);
    const ConvCase cc{pick(1, 3), c, pick(3, i % 5 == 0 ? 120 : 30), pick(3, 70), m, 1, 3, 3, 2, pad, 1, P::kStem};
    SCOPED_TRACE(core::str_cat("case ", i, ": n ", cc.n, " c ", c, " h ", cc.h, " w ", cc.w, " m ", m, " pad ", pad));
    check(cc, GetParam(), kEveryFusedActivation[i % 10], i % 3 == 0, i % 4 != 0, i % 2 ? &pool2 : &pool3, rng, 0, false,
          false, true);
  }
}

// The direct grouped path on random shapes: group widths of 16 / 32 / 48 input and 16 / 32 output channels (whole
// vectors on every ISA), 2-4 groups, 3x3 and 5x5, strides 1 and 2, every pad up to k / 2, rows 1-70 wide (one to five
// runs of pixels, split unevenly), tall planes (several strips), batches, every activation, residual, bias or none,
// 1 and 2 threads. Stride 3 leaves the path (im2col).
TEST_P(FastConvTest, GroupedRandomShapes) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  std::mt19937 rng(71);
  core::ThreadPool pool(2);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int i = 0; i < 60; ++i) {
    const int64_t groups = pick(2, 4), cg = 16 * pick(1, 3), mg = 16 * pick(1, 2), k = pick(0, 2) ? 3 : 5;
    const int64_t stride = i == 59 ? 3 : pick(1, 2), pad = pick(0, k / 2);
    const int64_t h = i % 8 == 0 ? pick(40, 90) : pick(k, 24), w = pick(std::max<int64_t>(k - 2 * pad, 1), 70);
    const ConvCase cc{pick(1, 2), groups * cg, h,      w,   groups * mg, groups,
                      k,          k,           stride, pad, 1,           stride == 3 ? P::kIm2col : P::kGrouped};
    SCOPED_TRACE(core::str_cat("case ", i, ": n ", cc.n, " groups ", groups, " cg ", cg, " mg ", mg, " k ", k,
                               " stride ", stride, " pad ", pad, " h ", h, " w ", w));
    check(cc, GetParam(), kEveryFusedActivation[i % 10], i % 2 == 1, i % 3 != 0, i % 4 < 2 ? &pool : nullptr, rng);
  }
}

// The 2-thread task splits (Winograd chunks and output-channel ranges, im2col strips) with every
// epilogue input: bias, residual and an activation, on the cases sized to take them (the last
// eight of kCases).
TEST_P(FastConvTest, ThreadedSplitsWithEpilogues) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  std::mt19937 rng(31);
  core::ThreadPool pool(2);
  const size_t count = std::size(kCases);
  int i = 0;
  for (size_t c = count - 8; c < count; ++c)
    for (int residual = 0; residual < 2; ++residual)
      for (int with_bias = 0; with_bias < 2; ++with_bias, ++i) {
        SCOPED_TRACE(i);
        check(kCases[c], GetParam(), {GemmActivation::kHardSwish, 0, 0}, residual, with_bias, &pool, rng);
      }
}

// set_split_columns: with threads, GEMMs over planes of at least kSplitColumnsMinN pixels give each
// thread one range of pixels. Pointwise (batches, groups, a plane that ends mid-vector), im2col
// (one GEMM per image and groups, too few rows for strips) and a plane below the threshold, with
// every epilogue input, at 2 and 3 threads.
TEST_P(FastConvTest, ColumnSplitWithThreads) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  std::mt19937 rng(61);
  const ConvCase cases[] = {
      {1, 16, 55, 55, 64, 1, 1, 1, 1, 0, 1, P::kPointwise},  // SqueezeNet's expand 1x1
      {2, 13, 33, 41, 29, 1, 1, 1, 1, 0, 1, P::kPointwise},
      {1, 12, 40, 40, 8, 4, 1, 1, 1, 0, 1, P::kPointwise},
      {1, 5, 3, 700, 7, 1, 3, 3, 1, 1, 1, P::kIm2col},
      {2, 8, 4, 600, 12, 2, 3, 3, 1, 1, 1, P::kGrouped},     // im2col where the vector is wider than a group
      {1, 24, 20, 20, 40, 1, 1, 1, 1, 0, 1, P::kPointwise},  // 400 pixels: split by cost
  };
  for (int threads : {2, 3}) {
    core::ThreadPool pool(threads);
    int i = 0;
    for (const ConvCase& cc : cases)
      for (int residual = 0; residual < 2; ++residual, ++i) {
        SCOPED_TRACE(core::str_cat(threads, " threads, case ", i));
        check(cc, GetParam(), kEveryFusedActivation[1 + i % 9], residual, i % 3 != 2, &pool, rng, 0, true);
      }
  }
}

// The stem with a MaxPool in its epilogue (run_max_pooled) against the reference conv, activation
// and MaxPool: random sizes, channel counts, conv pads, pool windows / strides / pads / ceil_mode,
// batches, bias or none, one strip of pool rows or several, with and without threads.
TEST_P(FastConvTest, MaxPooledStem) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  std::mt19937 rng(41);
  core::ThreadPool pool(2);
  const FusedActivation acts[] = {{GemmActivation::kNone, 0, 0},
                                  {GemmActivation::kRelu, 0, 0},
                                  {GemmActivation::kClip, -0.5f, 0.5f},
                                  {GemmActivation::kHardSwish, 0, 0}};
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int i = 0; i < 60; ++i) {
    // Every fourth case wide and deep enough (M x conv width) for several strips of pool rows.
    const bool wide = i % 4 == 0;
    const int64_t n = pick(1, 2), c = pick(1, FastConv::kStemMaxChannels), m = wide ? pick(32, 64) : pick(1, 40);
    const int64_t h = wide ? pick(40, 90) : pick(5, 70), w = wide ? pick(150, 240) : pick(5, 70), pad = pick(0, 2);
    const int64_t oh = out_size(h, 3, 2, pad, 1), ow = out_size(w, 3, 2, pad, 1);
    ir::WindowAttrs pw;
    pw.kernel = {pick(1, std::min<int64_t>(3, oh)), pick(1, std::min<int64_t>(3, ow))};
    pw.strides = {pick(1, 3), pick(1, 3)};
    pw.dilations = {1, 1};
    pw.pads = {pick(0, pw.kernel[0] - 1), pick(0, pw.kernel[1] - 1), pick(0, pw.kernel[0] - 1),
               pick(0, pw.kernel[1] - 1)};
    pw.ceil_mode = pick(0, 1) == 1;
    auto ry = ir::forward_window(pw, 0, oh), rx = ir::forward_window(pw, 1, ow);
    ASSERT_TRUE(ry.is_ok() && rx.is_ok());
    const FusedActivation act = acts[pick(0, 3)];
    const bool with_bias = pick(0, 1) == 1;
    SCOPED_TRACE(core::str_cat("case ", i, ": x [", n, ",", c, ",", h, ",", w, "] m ", m, " pad ", pad, " pool k ",
                               pw.kernel[0], "x", pw.kernel[1], " s ", pw.strides[0], "x", pw.strides[1], " pads ",
                               pw.pads[0], ",", pw.pads[1], ",", pw.pads[2], ",", pw.pads[3], " ceil ", pw.ceil_mode,
                               " act ", static_cast<int>(act.kind)));
    core::Tensor x = random_f32({n, c, h, w}, rng), wt = random_f32({m, c, 3, 3}, rng), b = random_f32({m}, rng);
    ref::ConvParams p;
    p.strides = {2, 2};
    p.dilations = {1, 1};
    p.pads_begin = {pad, pad};
    core::Tensor conv = testing::filled_f32({n, m, oh, ow}, NAN);
    ASSERT_TRUE(ref::conv(p, x, wt, with_bias ? &b : nullptr, conv).is_ok());
    for (int64_t j = 0; j < conv.num_elements(); ++j)
      conv.data<float>()[j] =
          static_cast<float>(testing::activation_ref(act.kind, conv.data<float>()[j], act.alpha, act.beta));
    ref::PoolParams pp{pw.kernel, pw.strides, pw.dilations, {ry->pad_begin, rx->pad_begin}, {ry->pad_end, rx->pad_end}};
    core::Tensor want = testing::filled_f32({n, m, ry->out, rx->out}, NAN);
    core::Tensor got = testing::filled_f32({n, m, ry->out, rx->out}, NAN);
    ASSERT_TRUE(ref::max_pool(pp, conv, want, nullptr, false).is_ok());
    Pool2dParams q;
    q.kh = pw.kernel[0];
    q.kw = pw.kernel[1];
    q.sh = pw.strides[0];
    q.sw = pw.strides[1];
    q.pad_top = ry->pad_begin;
    q.pad_left = rx->pad_begin;
    q.pad_bottom = ry->pad_end;
    q.pad_right = rx->pad_end;
    auto fc = FastConv::create(wt, 1, act, GetParam());
    ASSERT_TRUE(fc.is_ok());
    ASSERT_EQ(fc->path_for(p), P::kStem);
    // Threads in every other group of four cases, so wide ones run with and without them.
    Status st = fc->run_max_pooled(p, oh, ow, q, x, with_bias ? &b : nullptr, got, (i / 4) % 2 ? &pool : nullptr);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_TRUE(close_f32(got, want));
  }
}

TEST_P(FastConvTest, MaxPooledRejectsOtherPathsAndBadShapes) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  std::mt19937 rng(43);
  ref::ConvParams p{{2, 2}, {1, 1}, {1, 1}, 1};
  Pool2dParams q;
  q.kh = q.kw = 3;
  q.sh = q.sw = 2;
  core::Tensor x = random_f32({1, 3, 20, 20}, rng), y = random_f32({1, 4, 4, 4}, rng);
  auto stem = FastConv::create(random_f32({4, 3, 3, 3}, rng), 1, {}, GetParam());
  ASSERT_TRUE(stem.is_ok());
  EXPECT_TRUE(stem->run_max_pooled(p, 10, 10, q, x, nullptr, y, nullptr).is_ok());  // 10x10 -> 4x4
  core::Tensor big = random_f32({1, 4, 9, 4}, rng);  // windows past the conv rows
  EXPECT_FALSE(stem->run_max_pooled(p, 10, 10, q, x, nullptr, big, nullptr).is_ok());
  core::Tensor wrong_m = random_f32({1, 5, 4, 4}, rng);
  EXPECT_FALSE(stem->run_max_pooled(p, 10, 10, q, x, nullptr, wrong_m, nullptr).is_ok());
  Pool2dParams bad = q;
  bad.pad_top = 3;  // a window of padding only
  EXPECT_FALSE(stem->run_max_pooled(p, 10, 10, bad, x, nullptr, y, nullptr).is_ok());
  auto other = FastConv::create(random_f32({4, 8, 3, 3}, rng), 1, {}, GetParam());  // 8 channels: im2col
  ASSERT_TRUE(other.is_ok());
  core::Tensor x8 = random_f32({1, 8, 20, 20}, rng);
  EXPECT_FALSE(other->run_max_pooled(p, 10, 10, q, x8, nullptr, y, nullptr).is_ok());
}

TEST_P(FastConvTest, RejectsBadInput) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  std::mt19937 rng(1);
  core::Tensor w = random_f32({4, 2, 3, 3}, rng);
  EXPECT_FALSE(FastConv::create(w, 3, {}, GetParam()).is_ok());  // 4 not divisible by 3
  auto fc = FastConv::create(w, 2, {}, GetParam());
  ASSERT_TRUE(fc.is_ok());
  ref::ConvParams p{{1, 1}, {1, 1}, {1, 1}, 2};
  core::Tensor x = random_f32({1, 3, 5, 5}, rng), y = random_f32({1, 4, 5, 5}, rng);
  EXPECT_FALSE(fc->run(p, x, nullptr, nullptr, y, nullptr).is_ok());  // 3 channels, needs 4
  core::Tensor x4 = random_f32({1, 4, 5, 5}, rng), b = random_f32({3}, rng);
  EXPECT_FALSE(fc->run(p, x4, &b, nullptr, y, nullptr).is_ok());  // bias size
  ref::ConvParams bad{{0, 1}, {1, 1}, {1, 1}, 2};
  EXPECT_FALSE(fc->run(bad, x4, nullptr, nullptr, y, nullptr).is_ok());
  EXPECT_TRUE(fc->run(p, x4, nullptr, nullptr, y, nullptr).is_ok());
}

INSTANTIATE_TEST_SUITE_P(AllIsas, FastConvTest, ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512),
                         testing::isa_param_name);

}  // namespace
}  // namespace kestrel::kernels::cpu
