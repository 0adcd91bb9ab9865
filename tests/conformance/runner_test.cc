// Tests of the node-test runner core (tools/onnx_test): output comparison with the ONNX tolerances,
// test discovery, and pass / fail / unsupported outcomes on small generated test folders.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "common/onnx_builder.h"
#include "tools/onnx_test/conformance.h"

namespace kestrel {
namespace {

namespace fs = std::filesystem;
using conformance::Outcome;
using core::DType;
using core::Tensor;
using testing::OnnxBuilder;

const conformance::Tolerance kOnnx;

TEST(ConformanceCompare, OnnxTolerance) {
  Tensor e = Tensor::from_vector<float>({1000.f, 0.f, -2.f});
  // Within atol + rtol * |expected|: 1000 +- 1.0000001, 0 +- 1e-7.
  EXPECT_EQ(conformance::compare_tensors(Tensor::from_vector<float>({1000.99f, 0.f, -2.001f}), e, kOnnx), "");
  std::string why = conformance::compare_tensors(Tensor::from_vector<float>({1001.5f, 0.f, -2.f}), e, kOnnx);
  EXPECT_NE(why.find("1 of 3 values differ"), std::string::npos) << why;
  EXPECT_NE(why.find("[0]"), std::string::npos) << why;
  EXPECT_NE(why.find("1001.5"), std::string::npos) << why;
  EXPECT_NE(conformance::compare_tensors(Tensor::from_vector<float>({1000.f, 1e-6f, -2.f}), e, kOnnx), "");
  conformance::Tolerance loose{1e-2, 1e-5};
  EXPECT_EQ(conformance::compare_tensors(Tensor::from_vector<float>({1005.f, 1e-6f, -2.f}), e, loose), "");
}

TEST(ConformanceCompare, NaNInfShapeAndDtype) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tensor e = Tensor::from_vector<float>({nan, inf, -inf});
  EXPECT_EQ(conformance::compare_tensors(Tensor::from_vector<float>({nan, inf, -inf}), e, kOnnx), "");
  EXPECT_NE(conformance::compare_tensors(Tensor::from_vector<float>({0.f, inf, -inf}), e, kOnnx), "");
  EXPECT_NE(conformance::compare_tensors(Tensor::from_vector<float>({nan, -inf, -inf}), e, kOnnx), "");
  EXPECT_NE(conformance::compare_tensors(Tensor::from_vector<float>({nan, inf, -inf}, {1, 3}), e, kOnnx)
                .find("shape [1,3], expected [3]"),
            std::string::npos);
  EXPECT_NE(conformance::compare_tensors(Tensor::from_vector<double>({1, 2, 3}), e, kOnnx).find("dtype f64"),
            std::string::npos);
  EXPECT_EQ(conformance::compare_tensors(Tensor(), e, kOnnx), "output was not produced");
}

TEST(ConformanceCompare, IntegersBoolsAndStringsAreExact) {
  const int64_t big = (int64_t{1} << 62) + 1;
  EXPECT_EQ(conformance::compare_tensors(Tensor::from_vector<int64_t>({big}), Tensor::from_vector<int64_t>({big}), kOnnx), "");
  EXPECT_NE(conformance::compare_tensors(Tensor::from_vector<int64_t>({big - 1}), Tensor::from_vector<int64_t>({big}), kOnnx), "");
  EXPECT_NE(conformance::compare_tensors(Tensor::from_vector<bool>({true, false}), Tensor::from_vector<bool>({true, true}), kOnnx), "");
  Tensor a = Tensor::allocate(DType::kString, {1}).value(), b = Tensor::allocate(DType::kString, {1}).value();
  a.data<std::string>()[0] = "0.1";
  b.data<std::string>()[0] = "0.10";
  std::string why = conformance::compare_tensors(a, b, kOnnx);
  EXPECT_NE(why.find("\"0.1\""), std::string::npos) << why;
}

TEST(ConformanceCompare, ToleranceTableTakesTheLoosest) {
  conformance::Tolerance t = conformance::tolerance_for({"Add", "Relu"});
  EXPECT_EQ(t.rtol, 1e-3);
  EXPECT_EQ(t.atol, 1e-7);
  for (const auto& o : conformance::tolerance_overrides()) {
    conformance::Tolerance with = conformance::tolerance_for({"Add", o.op_type});
    EXPECT_GE(with.rtol, o.tol.rtol) << o.op_type;
    EXPECT_GE(with.atol, o.tol.atol) << o.op_type;
    EXPECT_NE(std::string(o.why), "") << o.op_type;
  }
}

// A scratch folder under the test temp dir, removed at the end.
class ConformanceRun : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ("kestrel_conformance_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  static void write(const fs::path& p, const std::string& bytes) {
    fs::create_directories(p.parent_path());
    std::ofstream f(p, std::ios::binary);
    f << bytes;
  }
  static std::string tensor_pb(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t.add_dims(d);
    for (float x : v) t.add_float_data(x);
    return t.SerializeAsString();
  }
  // Test `name`: y = Relu(x) on [3] (or `op`), with the given expected output.
  fs::path make_test(const std::string& name, const std::vector<float>& expected, const std::string& op = "Relu") {
    OnnxBuilder b(13);
    b.input("x", 1, {3});
    b.node(op, {"x"}, {"y"});
    b.output("y", 1, {3}, true);
    fs::path dir = root_ / name;
    write(dir / "model.onnx", b.bytes());
    write(dir / "test_data_set_0" / "input_0.pb", tensor_pb("x", {3}, {-1, 0, 2}));
    write(dir / "test_data_set_0" / "output_0.pb", tensor_pb("y", {3}, expected));
    return dir;
  }

  fs::path root_;
};

TEST_F(ConformanceRun, PassFailUnsupported) {
  auto pass = conformance::run_test(make_test("test_ok", {0, 0, 2}).string());
  EXPECT_EQ(pass.outcome, Outcome::kPass) << pass.reason;
  EXPECT_EQ(pass.name, "test_ok");
  EXPECT_EQ(pass.op_types, (std::vector<std::string>{"Relu"}));

  auto fail = conformance::run_test(make_test("test_wrong", {0, 0, 3}).string());
  EXPECT_EQ(fail.outcome, Outcome::kFail);
  EXPECT_NE(fail.reason.find("output 0 'y'"), std::string::npos) << fail.reason;
  EXPECT_NE(fail.reason.find("[2]: got 2, expected 3"), std::string::npos) << fail.reason;

  auto unsup = conformance::run_test(make_test("test_unknown_op", {0, 0, 2}, "NotAnOnnxOp").string());
  EXPECT_EQ(unsup.outcome, Outcome::kUnsupported);
  EXPECT_NE(unsup.reason.find("NotAnOnnxOp"), std::string::npos) << unsup.reason;
}

TEST_F(ConformanceRun, BrokenTestsFailWithoutCrashing) {
  fs::path garbage = make_test("test_garbage_input", {0, 0, 2});
  write(garbage / "test_data_set_0" / "input_0.pb", std::string("\xff\xff\xff\xff not a tensor", 18));
  auto r1 = conformance::run_test(garbage.string());
  EXPECT_EQ(r1.outcome, Outcome::kFail);
  EXPECT_NE(r1.reason, "");

  fs::path wrong_shape = make_test("test_wrong_shape_input", {0, 0, 2});
  write(wrong_shape / "test_data_set_0" / "input_0.pb", tensor_pb("x", {4}, {1, 2, 3, 4}));
  auto r2 = conformance::run_test(wrong_shape.string());
  EXPECT_EQ(r2.outcome, Outcome::kFail);
  EXPECT_NE(r2.reason.find("run failed"), std::string::npos) << r2.reason;

  fs::path no_data = make_test("test_no_data", {0, 0, 2});
  fs::remove_all(no_data / "test_data_set_0");
  EXPECT_EQ(conformance::run_test(no_data.string()).outcome, Outcome::kFail);

  fs::path bad_model = root_ / "test_bad_model";
  write(bad_model / "model.onnx", "not a model at all");
  auto r3 = conformance::run_test(bad_model.string());
  EXPECT_EQ(r3.outcome, Outcome::kFail);
  EXPECT_NE(r3.reason.find("load failed"), std::string::npos) << r3.reason;

  fs::path missing_output = make_test("test_missing_output", {0, 0, 2});
  fs::remove(missing_output / "test_data_set_0" / "output_0.pb");
  EXPECT_EQ(conformance::run_test(missing_output.string()).outcome, Outcome::kFail);

  auto r4 = conformance::run_test((root_ / "does_not_exist").string());
  EXPECT_EQ(r4.outcome, Outcome::kFail);
}

TEST_F(ConformanceRun, FindsTestsInAFolderOrOneTest) {
  make_test("test_b", {0, 0, 2});
  make_test("test_a", {0, 0, 2});
  fs::create_directories(root_ / "not_a_test");
  std::vector<std::string> errors;
  auto all = conformance::find_tests({root_.string()}, &errors);
  EXPECT_TRUE(errors.empty());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(conformance::test_name(all[0]), "test_a");
  EXPECT_EQ(conformance::test_name(all[1]), "test_b");
  auto one = conformance::find_tests({(root_ / "test_b").string() + "/"}, &errors);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(conformance::test_name(one[0]), "test_b");
  conformance::find_tests({(root_ / "not_a_test").string(), (root_ / "missing").string()}, &errors);
  EXPECT_EQ(errors.size(), 2u);
}

}  // namespace
}  // namespace kestrel
