// Test helpers for the NN op families: seeded random tensors, dtype conversion, closeness checks
// and running a one-node ONNX model through runtime::Session.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/onnx_builder.h"
#include "core/tensor.h"
#include "runtime/session.h"

namespace kestrel::testing {

// f32 tensor with values uniform in [lo, hi), fixed seed.
inline core::Tensor random_tensor(const core::Dims& dims, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  core::Tensor t = core::Tensor::allocate(core::DType::kF32, dims).value();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (auto& v : t.span<float>()) v = dist(rng);
  return t;
}

// Converts a float tensor to another float dtype (f16 / bf16 / f64 / f32).
inline core::Tensor to_dtype(const core::Tensor& t, core::DType d) {
  core::Tensor out = core::Tensor::allocate(d, t.dims()).value();
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    double v = t.element_as_double(i);
    switch (d) {
      case core::DType::kF32:
        out.data<float>()[i] = static_cast<float>(v);
        break;
      case core::DType::kF64:
        out.data<double>()[i] = v;
        break;
      case core::DType::kF16:
        out.data<core::Float16>()[i] = core::Float16(static_cast<float>(v));
        break;
      case core::DType::kBF16:
        out.data<core::BFloat16>()[i] = core::BFloat16(static_cast<float>(v));
        break;
      default:
        ADD_FAILURE() << "to_dtype: unsupported dtype";
    }
  }
  return out;
}

inline std::vector<double> values(const core::Tensor& t) {
  return core::tensor_to_doubles(t);
}

// |got - want| <= atol + rtol * |want| element-wise; NaN matches NaN.
inline void expect_close(const std::vector<double>& got, const std::vector<double>& want, double atol = 1e-5,
                         double rtol = 1e-5, const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) && std::isnan(got[i])) continue;
    if (!(std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i]))) {
      ADD_FAILURE() << what << " element " << i << ": got " << got[i] << ", want " << want[i];
      if (++reported >= 5) return;
    }
  }
}
inline void expect_close(const core::Tensor& got, const std::vector<double>& want, double atol = 1e-5,
                         double rtol = 1e-5, const std::string& what = "") {
  expect_close(values(got), want, atol, rtol, what);
}

// Opens a model; on failure returns the status (for error tests).
inline core::Result<std::unique_ptr<runtime::Session>> open_model(const OnnxBuilder& b) {
  std::string bytes = b.bytes();
  return runtime::Session::open_memory(bytes.data(), bytes.size());
}

// Opens and runs a model on the given inputs (graph input order); fails the test on errors.
inline std::vector<core::Tensor> run_model(const OnnxBuilder& b, const std::vector<core::Tensor>& inputs) {
  auto s = open_model(b);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  if (!s.is_ok()) return {};
  std::vector<const core::Tensor*> ptrs;
  for (const auto& t : inputs) ptrs.push_back(&t);
  std::vector<core::Tensor> out;
  core::Status st = (*s)->run(ptrs, out);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return out;
}

// The status of opening a model that should be rejected; checks it names `node`.
inline core::Status open_error(const OnnxBuilder& b, const std::string& node) {
  auto s = open_model(b);
  EXPECT_FALSE(s.is_ok()) << "model should have been rejected";
  if (s.is_ok()) return core::Status::ok();
  EXPECT_NE(s.status().message().find(node), std::string::npos) << s.status().to_string();
  return s.status();
}

inline bool contains(const core::Status& s, const std::string& text) {
  return s.message().find(text) != std::string::npos;
}

// Row-major strides helper for the naive loops in tests.
inline int64_t flat_index(const std::vector<int64_t>& idx, const core::Dims& dims) {
  int64_t f = 0;
  for (size_t i = 0; i < dims.size(); ++i) f = f * dims[i] + idx[i];
  return f;
}

}  // namespace kestrel::testing
