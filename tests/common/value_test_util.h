// Small helpers shared by op tests that compare against naive re-computations: seeded random
// f32 tensors, a tensor's f32 values, and an element-wise closeness check.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/tensor.h"

namespace kestrel::testing {

// Uniform values in [lo, hi) from mt19937(seed): the same tensor for the same arguments.
inline core::Tensor random_f32(const core::Dims& dims, uint32_t seed, float lo = -2.f, float hi = 2.f) {
  core::Tensor t = core::Tensor::allocate(core::DType::kF32, dims).value();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

// The elements of an f32 tensor.
inline std::vector<float> values(const core::Tensor& t) {
  return {t.data<float>(), t.data<float>() + t.num_elements()};
}

// |got - want| <= tol * (1 + |want|) for every element (any numeric dtype), and the same count.
inline ::testing::AssertionResult near_all(const core::Tensor& got, const std::vector<double>& want, double tol) {
  if (got.num_elements() != static_cast<int64_t>(want.size()))
    return ::testing::AssertionFailure() << "got " << got.num_elements() << " values, want " << want.size();
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got.element_as_double(static_cast<int64_t>(i));
    if (!(std::fabs(g - want[i]) <= tol * (1 + std::fabs(want[i]))))
      return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << want[i];
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kestrel::testing
