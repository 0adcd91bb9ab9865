// Fast Transpose (kernels/cpu/transform) against the reference kernel: every permutation of
// ranks 1-4 on odd shapes, size-1 dims, the models' shapes, and several dtypes.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/fast_kernel_test_util.h"
#include "kernels/cpu/transform/transpose.h"

namespace kestrel::testing {
namespace {

TEST(FastTranspose, AllPermutations) {
  std::mt19937 rng(31);
  const std::vector<core::Dims> shapes = {{7}, {3, 5}, {17, 33}, {2, 3, 5}, {1, 7, 1}, {2, 3, 5, 7}, {3, 1, 17, 19},
                                          {1, 197, 3, 3, 64}};
  for (const auto& d : shapes) {
    core::Tensor x = random_f32(d, rng);
    std::vector<int64_t> perm(d.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
    int count = 0;
    do {
      if (d.size() == 5 && ++count % 7 != 0) continue;  // 120 perms: a sample
      expect_fast_matches_reference("Transpose", {x}, {{"perm", ir::Attribute(perm)}}, 0, 0);
    } while (std::next_permutation(perm.begin(), perm.end()));
    expect_fast_matches_reference("Transpose", {x}, {}, 0, 0);  // default: reversed
  }
}

TEST(FastTranspose, DtypesAndModelShapes) {
  std::mt19937 rng(32);
  expect_fast_matches_reference("Transpose", {iota<int64_t>({4, 6, 5})},
                                {{"perm", ir::Attribute(std::vector<int64_t>{2, 0, 1})}}, 0, 0);
  expect_fast_matches_reference("Transpose", {iota<uint8_t>({33, 17})}, {}, 0, 0);
  expect_fast_matches_reference("Transpose", {iota<int16_t>({3, 9, 11})},
                                {{"perm", ir::Attribute(std::vector<int64_t>{1, 2, 0})}}, 0, 0);
  // ShuffleNet's channel shuffle and ViT's head split.
  expect_fast_matches_reference("Transpose", {random_f32({1, 2, 58, 28, 28}, rng)},
                                {{"perm", ir::Attribute(std::vector<int64_t>{0, 2, 1, 3, 4})}}, 0, 0);
  expect_fast_matches_reference("Transpose", {random_f32({1, 3, 197, 64}, rng)},
                                {{"perm", ir::Attribute(std::vector<int64_t>{0, 1, 3, 2})}}, 0, 0);
  // Big enough for 2 threads, on both the memcpy and the blocked path.
  expect_fast_matches_reference("Transpose", {random_f32({8, 300, 131}, rng)},
                                {{"perm", ir::Attribute(std::vector<int64_t>{0, 2, 1})}}, 0, 0);
  expect_fast_matches_reference("Transpose", {random_f32({300, 8, 251}, rng)},
                                {{"perm", ir::Attribute(std::vector<int64_t>{1, 0, 2})}}, 0, 0);
}

TEST(FastTranspose, TakesTheFastPathAndRejectsBadPerms) {
  core::Tensor x = iota<float>({2, 3, 4});
  core::Tensor y = *core::Tensor::allocate(core::DType::kF32, {4, 2, 3});
  const std::vector<int64_t> perm = {2, 0, 1};
  ASSERT_TRUE(kernels::cpu::transpose_fast(x, perm, y, nullptr));
  for (int64_t k = 0; k < 4; ++k)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(y.data<float>()[(k * 2 + i) * 3 + j], static_cast<float>((i * 3 + j) * 4 + k));
  const std::vector<int64_t> dup = {0, 0, 1}, wrong = {0, 1, 2};
  EXPECT_FALSE(kernels::cpu::transpose_fast(x, dup, y, nullptr));
  EXPECT_FALSE(kernels::cpu::transpose_fast(x, wrong, y, nullptr));  // y has the wrong shape for it
}

}  // namespace
}  // namespace kestrel::testing

namespace kestrel::testing {
namespace {

// Slice shares the strided copy: steps of any sign, every axis, clamped bounds.
TEST(FastSlice, StepsAxesAndBounds) {
  std::mt19937 rng(33);
  core::Tensor x = random_f32({4, 7, 9, 5}, rng);
  struct Case {
    std::vector<int64_t> starts, ends, axes, steps;
  };
  const std::vector<Case> cases = {
      {{0}, {2}, {0}, {1}},          {{1, 2}, {3, 9}, {1, 2}, {1, 1}},   {{0}, {5}, {3}, {2}},
      {{-1}, {-100}, {2}, {-1}},     {{8, 6}, {0, 1}, {2, 1}, {-3, -2}}, {{0, 0, 0, 0}, {4, 7, 9, 5}, {0, 1, 2, 3}, {1, 1, 1, 1}},
      {{2}, {2}, {1}, {1}},          {{1, 0}, {100, 3}, {-1, 0}, {3, 2}}, {{0}, {29}, {1}, {1}},
  };
  for (const auto& c : cases)
    expect_fast_matches_reference("Slice", {x, i64s(c.starts), i64s(c.ends), i64s(c.axes), i64s(c.steps)}, {}, 0, 0, 1,
                                  true, {false, true, true, true, true});
  // ShuffleNet's channel split.
  core::Tensor s = random_f32({1, 116, 28, 28}, rng);
  expect_fast_matches_reference("Slice", {s, i64s({58}), i64s({116}), i64s({1}), i64s({1})}, {}, 0, 0, 1, true,
                                {false, true, true, true, true});
  expect_fast_matches_reference("Slice", {iota<int64_t>({6, 5}), i64s({1}), i64s({5}), i64s({1}), i64s({2})}, {}, 0, 0, 1,
                                true, {false, true, true, true, true});
}

}  // namespace
}  // namespace kestrel::testing
