// Fast attention (sgemm + vector softmax) against the reference kernel on every ISA of this CPU:
// sequence lengths 1, primes and non-multiples of the vector width, head dims, B / H broadcast of
// Q, K, V, masks of several broadcast shapes (with -inf entries and fully masked rows), and a
// 2-thread pool with more and fewer heads than threads.
#include "kernels/cpu/attention/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/fast_kernel_util.h"
#include "kernels/reference/attention.h"

namespace kestrel::kernels::cpu {
namespace {

using core::Dims;
using core::Isa;

class FastAttentionTest : public ::testing::TestWithParam<Isa> {};

TEST_P(FastAttentionTest, MatchesReference) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  std::mt19937 rng(29);
  core::ThreadPool pool(2);
  struct Case {
    Dims q, k, v, mask;  // mask empty = none
  };
  const Case cases[] = {
      {{1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}, {}},
      {{1, 3, 17, 8}, {1, 3, 17, 8}, {1, 3, 17, 8}, {}},
      {{2, 2, 13, 16}, {2, 2, 29, 16}, {2, 2, 29, 5}, {2, 1, 1, 29}},  // padding-mask shape
      {{1, 4, 31, 7}, {1, 1, 31, 7}, {1, 1, 31, 7}, {31, 31}},         // shared K/V heads, 2-D mask
      {{3, 1, 9, 12}, {1, 1, 33, 12}, {1, 1, 33, 12}, {3, 1, 9, 33}},
      {{1, 3, 65, 64}, {1, 3, 65, 64}, {1, 3, 65, 64}, {}},  // ViT-like (shortened)
  };
  int i = 0;
  for (const Case& c : cases)
    for (int threads = 0; threads < 2; ++threads, ++i) {
      SCOPED_TRACE(i);
      core::Tensor q = testing::random_f32(c.q, rng, -2.f, 2.f), k = testing::random_f32(c.k, rng, -2.f, 2.f);
      core::Tensor v = testing::random_f32(c.v, rng);
      core::Tensor mask;
      if (!c.mask.empty()) {
        mask = testing::random_f32(c.mask, rng, -3.f, 0.f);
        for (int64_t j = 0; j < mask.num_elements(); j += 5) mask.data<float>()[j] = -INFINITY;
      }
      const Dims yd{std::max(c.q[0], std::max(c.k[0], c.v[0])), std::max(c.q[1], std::max(c.k[1], c.v[1])), c.q[2],
                    c.v[3]};
      core::Tensor want = testing::filled_f32(yd, 7.f), got = testing::filled_f32(yd, 7.f);
      const float scale = 0.125f * static_cast<float>(i % 3 + 1);
      ASSERT_TRUE(ref::attention(scale, q, k, v, mask.defined() ? &mask : nullptr, want).is_ok());
      core::Status s =
          attention(scale, q, k, v, mask.defined() ? &mask : nullptr, got, threads ? &pool : nullptr, GetParam());
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      EXPECT_TRUE(testing::close_f32(got, want, 1e-5));
    }
}

TEST_P(FastAttentionTest, FullyMaskedRowIsNan) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  std::mt19937 rng(2);
  core::Tensor q = testing::random_f32({1, 1, 3, 4}, rng), k = testing::random_f32({1, 1, 5, 4}, rng);
  core::Tensor v = testing::random_f32({1, 1, 5, 2}, rng), mask = testing::filled_f32({3, 5}, 0.f);
  for (int j = 0; j < 5; ++j) mask.data<float>()[5 + j] = -INFINITY;  // row 1
  core::Tensor y = testing::filled_f32({1, 1, 3, 2}, 0.f);
  ASSERT_TRUE(attention(1.f, q, k, v, &mask, y, nullptr, GetParam()).is_ok());
  EXPECT_TRUE(std::isnan(y.data<float>()[2]) && std::isnan(y.data<float>()[3]));
  EXPECT_FALSE(std::isnan(y.data<float>()[0]) || std::isnan(y.data<float>()[4]));
}

TEST_P(FastAttentionTest, RejectsBadShapes) {
  KESTREL_SKIP_IF_ISA_MISSING(GetParam());
  std::mt19937 rng(3);
  core::Tensor q = testing::random_f32({1, 2, 3, 4}, rng), k = testing::random_f32({1, 2, 5, 3}, rng);
  core::Tensor v = testing::random_f32({1, 2, 5, 2}, rng), y = testing::filled_f32({1, 2, 3, 2}, 0.f);
  EXPECT_FALSE(attention(1.f, q, k, v, nullptr, y, nullptr, GetParam()).is_ok());  // D 4 vs 3
  core::Tensor k2 = testing::random_f32({1, 2, 5, 4}, rng), bad_mask = testing::filled_f32({4, 5}, 0.f);
  EXPECT_FALSE(attention(1.f, q, k2, v, &bad_mask, y, nullptr, GetParam()).is_ok());
  core::Tensor k3 = testing::random_f32({1, 3, 5, 4}, rng);  // 3 heads vs 2
  EXPECT_FALSE(attention(1.f, q, k3, v, nullptr, y, nullptr, GetParam()).is_ok());
}

INSTANTIATE_TEST_SUITE_P(AllIsas, FastAttentionTest, ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512),
                         testing::isa_param_name);

}  // namespace
}  // namespace kestrel::kernels::cpu
