// Fast Concat (kernels/cpu/transform/concat) against the reference kernel: every axis, odd shapes,
// empty inputs, several dtypes, and outputs large enough to split across 2 threads mid-block.
#include <gtest/gtest.h>

#include "common/fast_kernel_test_util.h"
#include "kernels/cpu/transform/concat.h"

namespace kestrel::testing {
namespace {

TEST(FastConcat, EveryAxisMatchesReference) {
  std::mt19937 rng(41);
  for (int64_t axis : {0, 1, 2, -1, -3}) {
    core::Dims a = {3, 5, 7}, b = a, c = a;
    const size_t ax = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
    b[ax] = 2;
    c[ax] = 1;
    expect_fast_matches_reference("Concat", {random_f32(a, rng), random_f32(b, rng), random_f32(c, rng)},
                                  {{"axis", ir::Attribute(axis)}}, 0, 0);
  }
  // One input; an empty input between two others.
  expect_fast_matches_reference("Concat", {random_f32({4, 9}, rng)}, {{"axis", ir::Attribute(int64_t{1})}}, 0, 0);
  expect_fast_matches_reference("Concat", {random_f32({2, 3}, rng), random_f32({2, 0}, rng), random_f32({2, 4}, rng)},
                                {{"axis", ir::Attribute(int64_t{1})}}, 0, 0);
}

TEST(FastConcat, DtypesAndThreadSplits) {
  std::mt19937 rng(42);
  expect_fast_matches_reference("Concat", {iota<int64_t>({2, 3, 5}), iota<int64_t>({2, 1, 5})},
                                {{"axis", ir::Attribute(int64_t{1})}}, 0, 0);
  expect_fast_matches_reference("Concat", {iota<uint8_t>({7, 13}), iota<uint8_t>({7, 6})},
                                {{"axis", ir::Attribute(int64_t{-1})}}, 0, 0);
  // SqueezeNet's channel concat (over 256 KiB: split across the threads, a range boundary inside
  // the first input), and an outer axis with many rows whose blocks straddle the boundary.
  expect_fast_matches_reference("Concat", {random_f32({1, 64, 55, 55}, rng), random_f32({1, 64, 55, 55}, rng)},
                                {{"axis", ir::Attribute(int64_t{1})}}, 0, 0);
  expect_fast_matches_reference("Concat", {random_f32({301, 7, 33}, rng), random_f32({301, 7, 5}, rng)},
                                {{"axis", ir::Attribute(int64_t{2})}}, 0, 0);
  // One block per input, blocks that are not whole cache lines: each thread copies a range of each.
  expect_fast_matches_reference(
      "Concat", {random_f32({1, 7, 10007}, rng), random_f32({1, 3, 10007}, rng), random_f32({1, 1, 10007}, rng)},
      {{"axis", ir::Attribute(int64_t{1})}}, 0, 0);
  expect_fast_matches_reference("Concat", {iota<int16_t>({3, 40001}), iota<int16_t>({3, 17})},
                                {{"axis", ir::Attribute(int64_t{1})}}, 0, 0);
}

TEST(FastConcat, DeclinesWhatItCannotDo) {
  core::Tensor a = iota<float>({2, 3}), b = iota<float>({3, 3}), i = iota<int32_t>({2, 3});
  core::Tensor y = *core::Tensor::allocate(core::DType::kF32, {2, 6});
  const core::Tensor* mismatched[] = {&a, &b};
  EXPECT_FALSE(kernels::cpu::concat_fast(mismatched, 1, y, nullptr));  // dims differ outside the axis
  const core::Tensor* mixed[] = {&a, &i};
  EXPECT_FALSE(kernels::cpu::concat_fast(mixed, 1, y, nullptr));  // dtypes differ
  const core::Tensor* ok[] = {&a, &a};
  EXPECT_FALSE(kernels::cpu::concat_fast(ok, 2, y, nullptr));  // axis out of range
  EXPECT_FALSE(kernels::cpu::concat_fast(ok, 0, y, nullptr));  // y is not [4, 3]
  ASSERT_TRUE(kernels::cpu::concat_fast(ok, -1, y, nullptr));
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 6; ++c) EXPECT_EQ(y.data<float>()[r * 6 + c], static_cast<float>(r * 3 + c % 3));
}

}  // namespace
}  // namespace kestrel::testing
