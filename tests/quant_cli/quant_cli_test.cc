// `kestrel quantize` through the command line: the report, sizes and agreement on a tiny CNN, the
// written .kst runs, and bad calibration data or options exit non-zero naming the problem.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "common/onnx_builder.h"
#include "core/npy.h"
#include "runtime/session.h"

namespace {

namespace fs = std::filesystem;

class QuantCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kestrel_quant_cli_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "calib");
    write_model();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // x[1,2,8,8] -> Conv(4x2x3x3) -> Relu -> GlobalAveragePool -> Flatten -> Gemm(transB) -> y[1,5]
  void write_model() {
    kestrel::testing::OnnxBuilder b;
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-1, 1);
    auto rnd = [&](size_t n) {
      std::vector<float> v(n);
      for (float& x : v) x = u(rng);
      return v;
    };
    b.input("x", 1, {1, 2, 8, 8}).output("y");
    b.initializer_f32("w", {4, 2, 3, 3}, rnd(72)).initializer_f32("b", {4}, rnd(4));
    b.initializer_f32("gw", {5, 4}, rnd(20)).initializer_f32("gb", {5}, rnd(5));
    auto& conv = b.node("Conv", {"x", "w", "b"}, {"c"}, "conv");
    kestrel::testing::OnnxBuilder::attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
    b.node("Relu", {"c"}, {"r"}, "relu");
    b.node("GlobalAveragePool", {"r"}, {"g"}, "gap");
    b.node("Flatten", {"g"}, {"f"}, "flatten");
    auto& gemm = b.node("Gemm", {"f", "gw", "gb"}, {"y"}, "gemm");
    kestrel::testing::OnnxBuilder::attr(gemm, "transB", int64_t{1});
    std::ofstream(path("model.onnx"), std::ios::binary) << b.bytes();
  }
  void samples(const std::string& sub, int n, kestrel::core::Dims dims, uint32_t seed = 1) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd;
    fs::create_directories(dir_ / sub);
    for (int i = 0; i < n; ++i) {
      kestrel::core::Tensor t = kestrel::core::Tensor::allocate(kestrel::core::DType::kF32, dims).value();
      for (float& v : t.span<float>()) v = nd(rng);
      ASSERT_TRUE(kestrel::core::write_npy(path(sub + "/s" + std::to_string(10 + i) + ".npy"), t).is_ok());
    }
  }

  struct Result {
    bool exited = false;
    int code = -1;
    std::string out, err;
  };
  static std::string slurp(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  Result run(const std::string& args) {
    const std::string out = path("stdout.txt"), err = path("stderr.txt");
    const std::string cmd =
        std::string("'") + KESTREL_CLI_PATH + "' quantize " + args + " >'" + out + "' 2>'" + err + "'";
    const int status = std::system(cmd.c_str());
    Result r;
    r.exited = status != -1 && WIFEXITED(status);
    r.code = r.exited ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }
  void expect_error(const std::string& args, const std::string& needle) {
    SCOPED_TRACE("kestrel quantize " + args);
    Result r = run(args);
    ASSERT_TRUE(r.exited) << r.err;
    EXPECT_NE(r.code, 0) << r.out;
    EXPECT_NE(r.err.find(needle), std::string::npos) << "stderr:\n" << r.err;
  }

  fs::path dir_;
};

TEST_F(QuantCli, QuantizesAndReports) {
  samples("calib", 10, {1, 2, 8, 8});
  for (const char* method : {"minmax", "kl", "percentile", "ema"}) {
    SCOPED_TRACE(method);
    Result r = run(path("model.onnx") + " --calib " + path("calib") + " --method " + method + " -o " + path("q.kst"));
    ASSERT_TRUE(r.exited);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("calibration " + std::string(method)), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("on 8 samples, 2 held out"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("per-layer report"), std::string::npos);
    EXPECT_NE(r.out.find("size: float .kst (-O2)"), std::string::npos);
    EXPECT_NE(r.out.find("output agreement with float on 2 held-out samples: cosine 0.99"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("top-1 agreement"), std::string::npos);
    EXPECT_NE(r.err.find("calibrating: "), std::string::npos) << r.err;  // the counter (stderr is not a tty)
    auto s = kestrel::runtime::Session::open(path("q.kst"));
    ASSERT_TRUE(s.is_ok()) << s.status().message();
    bool has_dq = false;
    for (const kestrel::ir::Node* n : (*s)->graph().nodes()) has_dq |= n->op_type() == "DequantizeLinear";
    EXPECT_TRUE(has_dq);
  }
  // --per-tensor, --keep-float, auto mode and labels.
  std::ofstream(path("labels.txt")) << "0 1 2 3 4 0 1 2 3 4\n";
  Result r = run(path("model.onnx") + " --calib " + path("calib") + " --per-tensor --keep-float gemm --labels " +
                 path("labels.txt") + " --target-cosine 0.9999 --holdout 0.3 -o " + path("q.kst"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("weights per-tensor"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kept in float: gemm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("accuracy on the held-out samples: float"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 held out"), std::string::npos) << r.out;
  // The weights of layers left in float are stored as f16 unless --f32-float-weights; the file says which.
  for (bool f32 : {false, true}) {
    Result k = run(path("model.onnx") + " --calib " + path("calib") + " --keep-float conv -o " + path("k.kst") +
                   (f32 ? " --f32-float-weights" : ""));
    ASSERT_EQ(k.code, 0) << k.err;
    auto s = kestrel::runtime::Session::open(path("k.kst"));
    ASSERT_TRUE(s.is_ok()) << s.status().message();
    EXPECT_EQ((*s)->graph().metadata().at("quantize.float_layer_weights"), f32 ? "f32" : "f16");
  }
}

TEST_F(QuantCli, BadCalibrationDataAndOptions) {
  const std::string model = path("model.onnx"), out = " -o " + path("q.kst");
  expect_error(model + " --calib " + path("calib") + out, "no .npy or image");
  expect_error(model + " --calib " + path("nowhere") + out, "does not exist");
  samples("calib", 3, {1, 2, 8, 8});
  samples("wrong", 3, {1, 2, 8, 7});
  expect_error(model + " --calib " + path("wrong") + out, "s10.npy");
  std::ofstream(path("calib/s11.npy"), std::ios::trunc) << "garbage";
  expect_error(model + " --calib " + path("calib") + out, "s11.npy");
  fs::remove(path("calib/s11.npy"));
  expect_error(model + " --calib " + path("calib") + " --method median" + out, "median");
  expect_error(model + " --calib " + path("calib") + " --keep-float nosuchnode" + out, "nosuchnode");
  expect_error(model + " --calib " + path("calib") + " --labels " + path("nolabels.txt") + out, "nolabels.txt");
  expect_error(path("missing.onnx") + " --calib " + path("calib") + out, "missing.onnx");
  EXPECT_FALSE(fs::exists(path("q.kst")));
}

}  // namespace
