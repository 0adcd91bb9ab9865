// Fast Softmax / LayerNormalization / trailing-axis reductions / global pools (kernels/cpu/norm)
// against the reference kernels on every ISA path.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/fast_kernel_test_util.h"

namespace kestrel::testing {
namespace {

const std::vector<core::Dims> kShapes = {{1}, {7}, {16}, {17}, {3, 31}, {2, 3, 5, 7}, {4, 1000}, {2, 3, 64, 197}, {4, 40001}};

TEST(FastNorm, SoftmaxLastAxis) {
  std::mt19937 rng(11);
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (const auto& d : kShapes) {
      expect_fast_matches_reference(op, {random_f32(d, rng, -20.f, 20.f)}, {}, 1e-5, 1e-7);
      expect_fast_matches_reference(op, {random_f32(d, rng)}, {{"axis", ir::Attribute(-1)}}, 1e-5, 1e-7);
    }
  // Another axis: reference path, still correct.
  expect_fast_matches_reference("Softmax", {random_f32({3, 4, 5}, rng)}, {{"axis", ir::Attribute(1)}}, 1e-6, 1e-7, 1,
                                false);
}

TEST(FastNorm, LayerNormalization) {
  std::mt19937 rng(12);
  for (const auto& d : kShapes) {
    const int64_t r = static_cast<int64_t>(d.size());
    for (int64_t axis = -1; axis >= -r; --axis) {
      core::Dims nd(d.end() + axis, d.end());
      core::Tensor x = random_f32(d, rng), s = random_f32(nd, rng), b = random_f32(nd, rng);
      expect_fast_matches_reference("LayerNormalization", {x, s, b}, {{"axis", ir::Attribute(axis)}}, 1e-4, 1e-4, 3);
      expect_fast_matches_reference("LayerNormalization", {x, s}, {{"axis", ir::Attribute(axis + r)},
                                                                    {"epsilon", ir::Attribute(0.1f)}},
                                    1e-4, 1e-4);
    }
  }
  // Scale broadcast from fewer dims: reference path.
  core::Tensor x = random_f32({2, 3, 4}, rng);
  expect_fast_matches_reference("LayerNormalization", {x, random_f32({4}, rng)}, {{"axis", ir::Attribute(1)}}, 1e-5,
                                1e-6, 1, false);
}

TEST(FastNorm, ReduceTrailingAxes) {
  std::mt19937 rng(13);
  for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax"}) {
    for (const auto& d : kShapes) {
      const int64_t r = static_cast<int64_t>(d.size());
      core::Tensor x = random_f32(d, rng);
      // Float partial sums vs the reference's order: error grows with the row length.
      const double atol = std::max(1e-5, 1e-7 * static_cast<double>(x.num_elements()));
      for (int64_t k = 1; k <= r; ++k) {
        std::vector<int64_t> axes;
        for (int64_t a = r - k; a < r; ++a) axes.push_back(a == r - 1 ? -1 : a);
        for (int64_t keep : {0, 1})
          expect_fast_matches_reference(op, {x, i64s(axes)}, {{"keepdims", ir::Attribute(keep)}}, 1e-5, atol, 1, true,
                                        {false, true});
      }
      expect_fast_matches_reference(op, {x}, {}, 1e-5, atol);  // all axes
    }
    // One contiguous block of axes before kept ones (the middle-axis path): leading, middle, with
    // size-1 dims inside and around it.
    const std::pair<core::Dims, std::vector<int64_t>> blocks[] = {
        {{3, 5}, {0}},        {{2, 196, 64}, {1}},   {{2, 3, 5, 7}, {1, 2}}, {{2, 1, 5, 1, 7}, {1, 2, 3}},
        {{4, 6, 17}, {0, 1}}, {{1, 33, 1, 9}, {-3}}, {{5, 1, 3}, {0}},
    };
    for (const auto& [d, axes] : blocks)
      for (int64_t keep : {0, 1})
        expect_fast_matches_reference(op, {random_f32(d, rng), i64s(axes)}, {{"keepdims", ir::Attribute(keep)}}, 1e-5,
                                      1e-5, 1, true, {false, true});
    // Axes around a kept dim: reference path, still correct.
    expect_fast_matches_reference(op, {random_f32({3, 4, 5}, rng), i64s({0, 2})}, {}, 1e-6, 1e-6, 1, true,
                                  {false, true});
  }
}

}  // namespace
}  // namespace kestrel::testing
