// Runs every model of $KESTREL_DATA/models/manifest.json through the public C++ API and compares
// each output with the reference: max|out - ref| / max|ref| <= the manifest's fp32 tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/test_data.h"
#include "core/npy.h"
#include "kestrel/kestrel.hpp"

namespace kestrel {
namespace {

struct ModelCase {
  std::string name;
  nlohmann::json entry;
};

void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.name; }

std::vector<ModelCase> load_manifest() {
  std::vector<ModelCase> cases;
  std::string path = testing::data_dir() + "/models/manifest.json";
  std::ifstream f(path);
  if (!f) return cases;
  nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  if (j.is_discarded() || !j.contains("models")) return cases;
  for (auto& [name, e] : j["models"].items()) cases.push_back({name, e});
  return cases;
}

Tensor read_npy_public(const std::string& path) {
  auto t = core::read_npy(path);
  if (!t.is_ok()) throw Error(ErrorCode::kIoError, t.status().message());
  return Tensor(static_cast<DType>(t->dtype()), t->dims(), t->raw_data(), t->owner());
}

// max|a - b| / max|b|, over float32 tensors of the same shape.
double relative_error(const Tensor& out, const Tensor& ref) {
  double max_err = 0, max_ref = 0;
  const float* a = out.data<float>();
  const float* b = ref.data<float>();
  for (size_t i = 0; i < ref.num_elements(); ++i) {
    double e = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (std::isnan(a[i])) e = INFINITY;
    max_err = std::max(max_err, e);
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(b[i])));
  }
  return max_ref > 0 ? max_err / max_ref : max_err;
}

class ModelTest : public ::testing::TestWithParam<ModelCase> {};

void check_model(const ModelCase& c, const SessionOptions& opts) {
  std::string dir = testing::data_dir() + "/models/";
  Session s = Session::open(dir + c.entry["file"].get<std::string>(), opts);
  std::map<std::string, Tensor> inputs;
  for (const auto& in : c.entry["inputs"]) inputs[in["name"]] = read_npy_public(dir + in["file"].get<std::string>());
  auto outputs = s.run(inputs);
  double tol = c.entry["tolerance"]["fp32"].get<double>();
  ASSERT_EQ(outputs.size(), c.entry["outputs"].size());
  for (const auto& o : c.entry["outputs"]) {
    const std::string name = o["name"];
    ASSERT_TRUE(outputs.count(name)) << "missing output " << name;
    Tensor ref = read_npy_public(dir + o["file"].get<std::string>());
    const Tensor& got = outputs[name];
    ASSERT_EQ(got.dtype(), DType::kF32) << name;
    ASSERT_EQ(got.shape(), ref.shape()) << name;
    double err = relative_error(got, ref);
    EXPECT_LE(err, tol) << c.name << " output " << name << ": max|out-ref|/max|ref| = " << err;
    std::printf("[ model    ] %-20s %-18s rel.err %.3g (tol %.0e)\n", c.name.c_str(), name.c_str(), err, tol);
  }
}

TEST_P(ModelTest, MatchesReference) {
  if (GetParam().name.empty()) GTEST_SKIP() << "no models: " << testing::data_dir() << "/models/manifest.json not found";
  try {
    check_model(GetParam(), SessionOptions{});
  } catch (const Error& e) {
    FAIL() << GetParam().name << ": " << e.what();
  }
}

TEST_P(ModelTest, MatchesReferenceWithReferenceKernels) {
  if (GetParam().name.empty()) GTEST_SKIP() << "no models: " << testing::data_dir() << "/models/manifest.json not found";
  SessionOptions o;
  o.reference_kernels = true;
  try {
    check_model(GetParam(), o);
  } catch (const Error& e) {
    FAIL() << GetParam().name << ": " << e.what();
  }
}

std::vector<ModelCase> cases_or_placeholder() {
  auto c = load_manifest();
  if (c.empty()) c.push_back({"", {}});
  return c;
}

INSTANTIATE_TEST_SUITE_P(Shared, ModelTest, ::testing::ValuesIn(cases_or_placeholder()),
                         [](const ::testing::TestParamInfo<ModelCase>& i) {
                           return i.param.name.empty() ? std::string("data_folder_missing") : i.param.name;
                         });

}  // namespace
}  // namespace kestrel
