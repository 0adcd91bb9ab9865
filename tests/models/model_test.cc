// Runs every model of $KESTREL_DATA/models/manifest.json through the public C++ API (fast and
// reference kernels) and through `kestrel run`, and compares each output with the reference:
// max|out - ref| / max|ref| <= the manifest's fp32 tolerance.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
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

// Compares one output with its reference file and prints the error.
void check_output(const ModelCase& c, const nlohmann::json& o, const Tensor& got, const char* how) {
  const std::string dir = testing::data_dir() + "/models/";
  const std::string name = o["name"];
  Tensor ref = read_npy_public(dir + o["file"].get<std::string>());
  double tol = c.entry["tolerance"]["fp32"].get<double>();
  ASSERT_EQ(got.dtype(), DType::kF32) << name;
  ASSERT_EQ(got.shape(), ref.shape()) << name;
  double err = relative_error(got, ref);
  EXPECT_LE(err, tol) << c.name << " output " << name << " (" << how << "): max|out-ref|/max|ref| = " << err;
  std::printf("[ model    ] %-20s %-18s %-4s rel.err %.3g (tol %.0e)\n", c.name.c_str(), name.c_str(), how, err, tol);
}

void check_model(const ModelCase& c, const SessionOptions& opts) {
  std::string dir = testing::data_dir() + "/models/";
  Session s = Session::open(dir + c.entry["file"].get<std::string>(), opts);
  std::map<std::string, Tensor> inputs;
  for (const auto& in : c.entry["inputs"]) inputs[in["name"]] = read_npy_public(dir + in["file"].get<std::string>());
  auto outputs = s.run(inputs);
  ASSERT_EQ(outputs.size(), c.entry["outputs"].size());
  for (const auto& o : c.entry["outputs"]) {
    const std::string name = o["name"];
    ASSERT_TRUE(outputs.count(name)) << "missing output " << name;
    check_output(c, o, outputs[name], opts.reference_kernels ? "ref" : "api");
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

#ifdef KESTREL_CLI_PATH
// `kestrel run MODEL --input NAME=FILE ... --output-dir DIR`: exit 0, and DIR/<output>.npy matches.
TEST_P(ModelTest, MatchesReferenceThroughCli) {
  const ModelCase& c = GetParam();
  if (c.name.empty()) GTEST_SKIP() << "no models: " << testing::data_dir() << "/models/manifest.json not found";
  const std::string dir = testing::data_dir() + "/models/";
  const std::filesystem::path out =
      std::filesystem::temp_directory_path() / ("kestrel_model_cli_" + std::to_string(::getpid()) + "_" + c.name);
  std::filesystem::remove_all(out);
  std::string cmd = std::string("'") + KESTREL_CLI_PATH + "' run '" + dir + c.entry["file"].get<std::string>() + "'";
  for (const auto& in : c.entry["inputs"])
    cmd += " --input '" + in["name"].get<std::string>() + "=" + dir + in["file"].get<std::string>() + "'";
  cmd += " --output-dir '" + out.string() + "' >'" + out.string() + ".log' 2>&1";
  int status = std::system(cmd.c_str());
  std::ifstream log_file(out.string() + ".log");
  std::stringstream log;
  log << log_file.rdbuf();
  std::filesystem::remove(out.string() + ".log");
  ASSERT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << "\n" << log.str();
  for (const auto& o : c.entry["outputs"]) {
    const std::string name = o["name"];
    EXPECT_NE(log.str().find("output " + name), std::string::npos) << log.str();
    // Output names in the shared models are plain identifiers: the file is <name>.npy.
    auto got = core::read_npy((out / (name + ".npy")).string());
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    check_output(c, o, Tensor(static_cast<DType>(got->dtype()), got->dims(), got->raw_data(), got->owner()), "cli");
  }
  std::filesystem::remove_all(out);
}
#endif

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
