// Fast 2-D MaxPool / AveragePool (kernels/cpu/pool) against the reference kernels on every ISA
// path: kernel sizes, strides, dilations, pads, ceil_mode, count_include_pad, auto_pad.
#include <gtest/gtest.h>

#include "common/fast_kernel_test_util.h"
#include "core/str_util.h"

namespace kestrel::testing {
namespace {

struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads;
  int64_t ceil_mode = 0;
};

TEST(FastPool, MaxAndAverage2d) {
  std::mt19937 rng(21);
  const std::vector<Window> windows = {
      {{3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}, 1},  // squeezenet
      {{3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 0},  // shufflenet
      {{2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, 0},  {{3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 0},
      {{1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, 0},  {{5, 3}, {1, 2}, {1, 1}, {2, 0, 1, 1}, 1},
      {{3, 2}, {3, 1}, {2, 3}, {0, 1, 2, 0}, 0},  {{2, 2}, {3, 3}, {1, 1}, {1, 1, 1, 1}, 1},
      {{7, 7}, {1, 1}, {1, 1}, {0, 0, 0, 0}, 0},
      {{3, 3}, {2, 2}, {2, 2}, {1, 2, 0, 1}, 1},  // stride 2, dilated
      // 3x3 stride 2 without left padding (the in-register rows): top padding only, bottom padding with ceil_mode
      {{3, 3}, {2, 2}, {1, 1}, {1, 0, 0, 0}, 0},  {{3, 3}, {2, 2}, {1, 1}, {0, 0, 2, 0}, 1},
  };
  const std::vector<core::Dims> shapes = {{1, 1, 7, 7}, {2, 3, 13, 17}, {1, 4, 8, 40}, {1, 2, 33, 31}, {1, 1, 7, 1},
                                          {1, 64, 56, 56}, {1, 3, 9, 111},
                                          {1, 5, 23, 47},  {1, 2, 6, 35}};
  for (const auto& d : shapes) {
    core::Tensor x = random_f32(d, rng);
    for (const auto& w : windows) {
      if ((w.kernel[0] - 1) * w.dilations[0] + 1 > d[2] + w.pads[0] + w.pads[2] ||
          (w.kernel[1] - 1) * w.dilations[1] + 1 > d[3] + w.pads[1] + w.pads[3])
        continue;
      Attrs a = {{"kernel_shape", ir::Attribute(w.kernel)}, {"strides", ir::Attribute(w.strides)},
                 {"pads", ir::Attribute(w.pads)}, {"ceil_mode", ir::Attribute(w.ceil_mode)}};
      Attrs am = a;
      am["dilations"] = ir::Attribute(w.dilations);
      expect_fast_matches_reference("MaxPool", {x}, am, 0, 0);
      for (int64_t cip : {0, 1}) {
        Attrs aa = a;
        aa["count_include_pad"] = ir::Attribute(cip);
        aa["dilations"] = ir::Attribute(w.dilations);
        expect_fast_matches_reference("AveragePool", {x}, aa, 1e-5, 1e-6);
      }
    }
  }
}

// Planes of at least kSplitColumnsMinN pixels: with 2 threads each takes a range of output rows of every plane
// (pool2d_f32), each range a plane of its own with the pads it keeps. Random windows, strides, dilations, pads
// (top and bottom cut at the range edges) and ceil_mode; AveragePool with and without the pads counted.
TEST(FastPool, RowRangesOnLargePlanes) {
  std::mt19937 rng(24);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int i = 0; i < 24; ++i) {
    const int64_t kh = pick(1, 5), kw = pick(1, 5), sh = pick(1, 3), sw = pick(1, 3), dh = pick(1, 2), dw = pick(1, 2);
    const std::vector<int64_t> pads = {pick(0, kh - 1), pick(0, kw - 1), pick(0, kh - 1), pick(0, kw - 1)};
    const int64_t h = pick(32, 70), w = pick(std::max<int64_t>(32, 1024 / h + 1), 70);
    core::Tensor x = random_f32({pick(1, 2), pick(1, 5), h, w}, rng);
    SCOPED_TRACE(core::str_cat("case ", i, ": ", x.type_string(), " k ", kh, "x", kw, " s ", sh, "x", sw, " d ", dh,
                               "x", dw, " pads ", pads[0], ",", pads[1], ",", pads[2], ",", pads[3]));
    Attrs a = {{"kernel_shape", ir::Attribute(std::vector<int64_t>{kh, kw})},
               {"strides", ir::Attribute(std::vector<int64_t>{sh, sw})},
               {"dilations", ir::Attribute(std::vector<int64_t>{dh, dw})},
               {"pads", ir::Attribute(pads)},
               {"ceil_mode", ir::Attribute(pick(0, 1))}};
    expect_fast_matches_reference("MaxPool", {x}, a, 0, 0);
    a["count_include_pad"] = ir::Attribute(int64_t{i % 2});
    expect_fast_matches_reference("AveragePool", {x}, a, 1e-5, 1e-6);
  }
}

TEST(FastPool, AutoPadAndFallbacks) {
  std::mt19937 rng(22);
  core::Tensor x = random_f32({1, 3, 10, 11}, rng);
  for (const char* ap : {"SAME_UPPER", "SAME_LOWER", "VALID"})
    for (const char* op : {"MaxPool", "AveragePool"})
      expect_fast_matches_reference(op, {x}, {{"kernel_shape", ir::Attribute(std::vector<int64_t>{3, 2})},
                                               {"strides", ir::Attribute(std::vector<int64_t>{2, 2})},
                                               {"auto_pad", ir::Attribute(ap)}},
                                    1e-5, 1e-6);
  // 1-D pools and MaxPool with indices run the reference kernels (same binding).
  expect_fast_matches_reference("MaxPool", {random_f32({1, 2, 9}, rng)},
                                {{"kernel_shape", ir::Attribute(std::vector<int64_t>{3})}}, 0, 0, 1);
  expect_fast_matches_reference("MaxPool", {x}, {{"kernel_shape", ir::Attribute(std::vector<int64_t>{2, 2})}}, 0, 0, 2,
                                true);
}

}  // namespace
}  // namespace kestrel::testing

namespace kestrel::testing {
namespace {

// Huge pads and strides (a hostile model): the fast binding must not try to allocate a row
// buffer over the padded width; the result still matches the reference.
TEST(FastPool, HugePadsStayBounded) {
  std::mt19937 rng(23);
  core::Tensor x = random_f32({1, 2, 5, 6}, rng);
  const int64_t big = int64_t{1} << 30;
  for (const char* op : {"MaxPool", "AveragePool"})
    expect_fast_matches_reference(op, {x}, {{"kernel_shape", ir::Attribute(std::vector<int64_t>{2, 2})},
                                             {"strides", ir::Attribute(std::vector<int64_t>{big, big})},
                                             {"pads", ir::Attribute(std::vector<int64_t>{1, big, 1, big})}},
                                  1e-5, 1e-6);
}

}  // namespace
}  // namespace kestrel::testing
