// Test helpers for fast kernels: random f32 tensors, comparison against the reference kernel's
// output with a tolerance relative to the output's magnitude, and the list of ISAs to test.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "core/cpu_features.h"
#include "core/tensor.h"
#include "kernels/cpu/gemm/sgemm.h"

namespace kestrel::testing {

inline core::Tensor random_f32(const core::Dims& dims, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  core::Tensor t = core::Tensor::allocate(core::DType::kF32, dims).value();
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

inline core::Tensor filled_f32(const core::Dims& dims, float v) {
  core::Tensor t = core::Tensor::allocate(core::DType::kF32, dims).value();
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = v;
  return t;
}

// One fused activation (kernels/cpu/gemm/sgemm.h) in double, as the reference kernels define it: a NaN input gives NaN
// for every kind.
inline double activation_ref(kernels::cpu::GemmActivation act, double x, double alpha, double beta) {
  using kernels::cpu::GemmActivation;
  switch (act) {
    case GemmActivation::kNone:
      return x;
    case GemmActivation::kRelu:
      return x > 0 || std::isnan(x) ? x : 0;
    case GemmActivation::kClip:
      return std::min(std::max(x, alpha), beta);
    case GemmActivation::kLeakyRelu:
      return x >= 0 ? x : alpha * x;
    case GemmActivation::kSigmoid:
      return 1 / (1 + std::exp(-x));
    case GemmActivation::kHardSigmoid:
      return std::min(std::max(alpha * x + beta, 0.0), 1.0);
    case GemmActivation::kHardSwish:
      return x * std::min(std::max(x / 6 + 0.5, 0.0), 1.0);
    case GemmActivation::kSilu:
    case GemmActivation::kSiluBf16:
      return x / (1 + std::exp(-x));
    case GemmActivation::kGelu:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case GemmActivation::kTanh:
      return std::tanh(x);
  }
  return x;
}

// max |got - want| <= tol * max(1, max |want|), same shape, NaN exactly where want has NaN.
inline ::testing::AssertionResult close_f32(const core::Tensor& got, const core::Tensor& want, double tol = 1e-4) {
  if (got.dims() != want.dims())
    return ::testing::AssertionFailure() << "got " << got.type_string() << ", want " << want.type_string();
  double scale = 1;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double w = want.data<float>()[i];
    if (!std::isnan(w)) scale = std::max(scale, std::fabs(w));
  }
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double g = got.data<float>()[i], w = want.data<float>()[i];
    if (std::isnan(w) && std::isnan(g)) continue;
    if (!(std::fabs(g - w) <= tol * scale))
      return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w << " (of "
                                           << want.num_elements() << ", " << want.type_string() << ")";
  }
  return ::testing::AssertionSuccess();
}

// Parameter name for ISA-parameterized suites.
inline std::string isa_param_name(const ::testing::TestParamInfo<core::Isa>& info) {
  return core::isa_name(info.param);
}

#define KESTREL_SKIP_IF_ISA_MISSING(isa) \
  if ((isa) > core::detected_isa()) GTEST_SKIP() << core::isa_name(isa) << " not available on this CPU"

}  // namespace kestrel::testing
