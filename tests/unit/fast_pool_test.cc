// Fast MaxPool (2-D) and GlobalAveragePool against the reference kernels: kernel sizes, strides,
// pads (including windows entirely in the padding), dilations, odd plane sizes, ceil-mode output
// sizes, with and without a 2-thread pool.
#include <gtest/gtest.h>

#include <random>

#include "common/fast_kernel_util.h"
#include "kernels/cpu/pool/pool.h"

namespace kestrel::kernels::cpu {
namespace {

using core::Dims;

TEST(FastPoolTest, MaxPoolMatchesReference) {
  std::mt19937 rng(31);
  core::ThreadPool pool(2);
  struct Case {
    Dims x;
    int64_t k, s, pad, dil;
    bool ceil;
  };
  const Case cases[] = {
      {{1, 64, 111, 111}, 3, 2, 0, 1, true},   // SqueezeNet
      {{1, 24, 112, 112}, 3, 2, 1, 1, false},  // ShuffleNet
      {{2, 3, 7, 9}, 2, 2, 0, 1, false},      {{1, 2, 5, 5}, 3, 1, 1, 1, false}, {{1, 1, 1, 1}, 1, 1, 0, 1, false},
      {{1, 3, 13, 11}, 3, 3, 2, 2, true},     {{1, 2, 4, 4}, 5, 1, 4, 1, false},  // windows only in the padding at the
                                                                                  // corners
  };
  int i = 0;
  for (const Case& c : cases)
    for (int threads = 0; threads < 2; ++threads, ++i) {
      SCOPED_TRACE(i);
      ref::PoolParams p;
      p.kernel = {c.k, c.k};
      p.strides = {c.s, c.s};
      p.dilations = {c.dil, c.dil};
      p.pads_begin = {c.pad, c.pad};
      p.pads_end = {c.pad, c.pad};
      Dims yd = {c.x[0], c.x[1]};
      for (int a = 2; a < 4; ++a) {
        const int64_t span = c.x[a] + 2 * c.pad - c.dil * (c.k - 1) - 1;
        yd.push_back((c.ceil ? (span + c.s - 1) / c.s : span / c.s) + 1);
      }
      core::Tensor x = testing::random_f32(c.x, rng);
      core::Tensor want = testing::filled_f32(yd, 0.f), got = testing::filled_f32(yd, 0.f);
      ASSERT_TRUE(ref::max_pool(p, x, want, nullptr, false).is_ok());
      ASSERT_TRUE(max_pool_2d(p, x, got, threads ? &pool : nullptr).is_ok());
      for (int64_t j = 0; j < want.num_elements(); ++j)
        ASSERT_EQ(got.data<float>()[j], want.data<float>()[j]) << "element " << j;
    }
}

TEST(FastPoolTest, GlobalAveragePoolMatchesReference) {
  std::mt19937 rng(37);
  core::ThreadPool pool(2);
  for (const Dims& d : {Dims{1, 1, 1, 1}, Dims{2, 3, 7, 7}, Dims{1, 1280, 7, 7}, Dims{1, 5, 13, 17}, Dims{3, 4, 9}}) {
    core::Tensor x = testing::random_f32(d, rng);
    Dims yd = {d[0], d[1]};
    for (size_t a = 2; a < d.size(); ++a) yd.push_back(1);
    core::Tensor want = testing::filled_f32(yd, 0.f), got = testing::filled_f32(yd, 0.f);
    ASSERT_TRUE(ref::global_pool(ref::GlobalPoolKind::kAverage, 2, x, want).is_ok());
    ASSERT_TRUE(global_average_pool(x, got, &pool).is_ok());
    EXPECT_TRUE(testing::close_f32(got, want, 1e-6)) << core::dims_to_string(d);
  }
}

TEST(FastPoolTest, RejectsBadInput) {
  std::mt19937 rng(1);
  core::Tensor x = testing::random_f32({1, 2, 5, 5}, rng), y = testing::filled_f32({1, 3, 2, 2}, 0.f);
  ref::PoolParams p{{2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}};
  EXPECT_FALSE(max_pool_2d(p, x, y, nullptr).is_ok());  // channel mismatch
  ref::PoolParams bad{{2, 2}, {0, 2}, {1, 1}, {0, 0}, {0, 0}};
  core::Tensor y2 = testing::filled_f32({1, 2, 2, 2}, 0.f);
  EXPECT_FALSE(max_pool_2d(bad, x, y2, nullptr).is_ok());
  EXPECT_FALSE(global_average_pool(x, y, nullptr).is_ok());
}

}  // namespace
}  // namespace kestrel::kernels::cpu
