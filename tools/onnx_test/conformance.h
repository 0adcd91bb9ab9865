// ONNX backend node-test runner core: finds test folders, runs one test through runtime::Session and
// compares its outputs with the ONNX tolerances. The kestrel-onnx-test CLI is a thin shell over it.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"

namespace kestrel::conformance {

enum class Outcome { kPass, kFail, kUnsupported };
const char* outcome_name(Outcome o);

struct TestResult {
  std::string name;    // folder name, e.g. "test_reduce_mean_do_not_keepdims_example"
  Outcome outcome = Outcome::kFail;
  std::string reason;  // empty on pass
  std::vector<std::string> op_types;  // distinct op types of the model's main graph, sorted
};

// |actual - expected| <= atol + rtol * |expected| per element (numpy.testing.assert_allclose).
struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

// One documented exception to the default tolerance.
struct ToleranceOverride {
  const char* op_type;
  Tolerance tol;
  const char* why;
};
// The per-op table (see conformance.cc); a model gets the loosest tolerance among its op types.
const std::vector<ToleranceOverride>& tolerance_overrides();
Tolerance tolerance_for(const std::vector<std::string>& op_types);

// The test's name: the last component of its folder path ("a/b/test_x/" -> "test_x").
std::string test_name(const std::string& dir);

// Test folders under each dir: the dir itself if it holds model.onnx, else its immediate
// subfolders that do, sorted by name. Appends a message to *errors for a dir that is neither.
std::vector<std::string> find_tests(const std::vector<std::string>& dirs, std::vector<std::string>* errors);

// Loads dir/model.onnx, runs every dir/test_data_set_*/ and compares all outputs. Never throws:
// any exception is reported as a failure of this test. A model that fails to load with
// StatusCode::kUnsupported is Outcome::kUnsupported.
TestResult run_test(const std::string& dir);

// Empty if `actual` matches `expected` (same dtype and shape; floats within tol with NaN == NaN;
// everything else exact), else why not: the first mismatching index and both values.
std::string compare_tensors(const core::Tensor& actual, const core::Tensor& expected, const Tolerance& tol);

}  // namespace kestrel::conformance
