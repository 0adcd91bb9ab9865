// End-to-end tests of Session on small in-memory ONNX models: input checks, re-planning on
// shape changes, plan-time folding, output binding.
#include "runtime/session.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/onnx_builder.h"
#include "core/tensor.h"
#include "format/kst_loader.h"
#include "format/kst_writer.h"
#include "frontend/onnx/onnx_importer.h"
#include "kernels/cpu/gemm/bf16_gemm.h"

namespace kestrel {
namespace {

using core::DType;
using core::Tensor;
using testing::OnnxBuilder;

std::unique_ptr<runtime::Session> open(const std::string& bytes) {
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? std::move(s).value() : nullptr;
}

TEST(Session, AddRelu) {
  OnnxBuilder b;
  b.input("x", 1, {2, 3}).initializer_f32("c", {3}, {1, -2, 3});
  b.node("Add", {"x", "c"}, {"s"});
  b.node("Relu", {"s"}, {"y"});
  b.output("y");
  auto s = open(b.bytes());
  ASSERT_TRUE(s);
  Tensor x = Tensor::from_vector<float>({0, 1, -5, -1, 0.5f, 2}, {2, 3});
  std::vector<Tensor> out;
  ASSERT_TRUE(s->run({{"x", x}}, out).is_ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), (core::Dims{2, 3}));
  std::vector<float> want = {1, 0, 0, 0, 0, 5};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(out[0].data<float>()[i], want[static_cast<size_t>(i)]);
}

TEST(Session, SymbolicBatchReplans) {
  OnnxBuilder b;
  b.input("x", 1, {-1, 2}, {"batch", ""});
  b.node("Neg", {"x"}, {"y"});
  b.output("y");
  auto s = open(b.bytes());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->inputs()[0].type.shape.to_string(), "[batch,2]");
  for (int64_t n : {1, 3, 2}) {
    auto x = Tensor::allocate(DType::kF32, {n, 2});
    ASSERT_TRUE(x.is_ok());
    for (int64_t i = 0; i < 2 * n; ++i) x->data<float>()[i] = static_cast<float>(i);
    std::vector<Tensor> out;
    ASSERT_TRUE(s->run({{"x", *x}}, out).is_ok());
    ASSERT_EQ(out[0].dims(), (core::Dims{n, 2}));
    for (int64_t i = 0; i < 2 * n; ++i) EXPECT_EQ(out[0].data<float>()[i], -static_cast<float>(i));
  }
}

TEST(Session, RejectsWrongInputs) {
  OnnxBuilder b;
  b.input("x", 1, {2, 3});
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  auto s = open(b.bytes());
  ASSERT_TRUE(s);
  std::vector<Tensor> out;
  auto bad_name = s->run({{"z", *Tensor::allocate(DType::kF32, {2, 3})}}, out);
  EXPECT_EQ(bad_name.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_name.message().find("'z'"), std::string::npos) << bad_name.message();
  auto bad_shape = s->run({{"x", *Tensor::allocate(DType::kF32, {3, 2})}}, out);
  EXPECT_EQ(bad_shape.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_shape.message().find("[2,3]"), std::string::npos) << bad_shape.message();
  auto bad_dtype = s->run({{"x", *Tensor::allocate(DType::kI64, {2, 3})}}, out);
  EXPECT_EQ(bad_dtype.code(), core::StatusCode::kInvalidArgument);
  auto missing = s->run(std::vector<std::pair<std::string, Tensor>>{}, out);
  EXPECT_EQ(missing.code(), core::StatusCode::kInvalidArgument);
}

TEST(Session, WritesIntoCallerOutputBuffer) {
  OnnxBuilder b;
  b.input("x", 1, {4});
  b.node("Sqrt", {"x"}, {"y"});
  b.output("y");
  auto s = open(b.bytes());
  ASSERT_TRUE(s);
  Tensor x = Tensor::from_vector<float>({1, 4, 9, 16});
  Tensor y = *Tensor::allocate(DType::kF32, {4});
  const void* before = y.raw_data();
  std::vector<Tensor> out{y};
  const Tensor* in[] = {&x};
  ASSERT_TRUE(s->run(in, out).is_ok());
  EXPECT_EQ(out[0].raw_data(), before);
  EXPECT_FLOAT_EQ(y.data<float>()[3], 4.f);
}

// run() points kernels at the caller's tensors only for the call: these are the edges of that.
TEST(Session, GraphInputAsOutputAndRepeatedOutputsAreOwnCopies) {
  OnnxBuilder b;
  b.input("x", 1, {3});
  b.node("Neg", {"x"}, {"y"});
  b.output("x").output("y").output("y");
  auto s = open(b.bytes());
  ASSERT_TRUE(s);
  Tensor x = Tensor::from_vector<float>({1, 2, 3});
  const Tensor* in[] = {&x};
  std::vector<Tensor> out;
  for (int run = 0; run < 2; ++run) {  // the second run has bound outputs
    ASSERT_TRUE(s->run(in, out).is_ok());
    ASSERT_EQ(out.size(), 3u);
    EXPECT_NE(out[0].raw_data(), x.raw_data());  // a copy: writing it must not change x
    EXPECT_NE(out[1].raw_data(), out[2].raw_data());
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(out[0].data<float>()[i], static_cast<float>(i + 1));
      EXPECT_EQ(out[1].data<float>()[i], -static_cast<float>(i + 1));
      EXPECT_EQ(out[2].data<float>()[i], -static_cast<float>(i + 1));
    }
    out[2].data<float>()[0] = 42;  // the caller owns its copies
  }
  EXPECT_EQ(x.data<float>()[0], 1.f);
}

// A run that fails inside a kernel must not leave kernels pointing at that call's tensors: the
// next run reads its own (new) input and writes its own output.
TEST(Session, RunAfterAFailedRunUsesTheNewTensors) {
  OnnxBuilder b;
  b.input("x", 1, {4}).input("i", 7, {2});
  b.node("Gather", {"x", "i"}, {"g"});
  b.node("Neg", {"g"}, {"y"});
  b.output("y");
  auto s = open(b.bytes());
  ASSERT_TRUE(s);
  std::vector<Tensor> out;
  {
    Tensor x = Tensor::from_vector<float>({1, 2, 3, 4});
    Tensor bad = Tensor::from_vector<int64_t>({0, 9}, {2});
    Tensor y = *Tensor::allocate(DType::kF32, {2});
    out = {y};
    const Tensor* in[] = {&x, &bad};
    EXPECT_FALSE(s->run(in, out).is_ok());
  }  // x, bad and y are gone
  Tensor x = Tensor::from_vector<float>({10, 20, 30, 40});
  Tensor idx = Tensor::from_vector<int64_t>({3, 1}, {2});
  std::vector<Tensor> out2;
  const Tensor* in[] = {&x, &idx};
  ASSERT_TRUE(s->run(in, out2).is_ok());
  ASSERT_EQ(out2.size(), 1u);
  EXPECT_EQ(out2[0].data<float>()[0], -40.f);
  EXPECT_EQ(out2[0].data<float>()[1], -20.f);
}

// Bound once, an output buffer is not written by later runs that pass other tensors.
TEST(Session, EarlierOutputBufferIsNotWrittenLater) {
  OnnxBuilder b;
  b.input("x", 1, {2});
  b.node("Neg", {"x"}, {"y"});
  b.output("y");
  auto s = open(b.bytes());
  ASSERT_TRUE(s);
  Tensor x = Tensor::from_vector<float>({1, 2});
  const Tensor* in[] = {&x};
  Tensor first = *Tensor::allocate(DType::kF32, {2});
  std::vector<Tensor> out{first};
  ASSERT_TRUE(s->run(in, out).is_ok());
  EXPECT_EQ(out[0].raw_data(), first.raw_data());
  x.data<float>()[0] = 5;
  std::vector<Tensor> fresh;
  ASSERT_TRUE(s->run(in, fresh).is_ok());
  EXPECT_NE(fresh[0].raw_data(), first.raw_data());
  EXPECT_EQ(fresh[0].data<float>()[0], -5.f);
  EXPECT_EQ(first.data<float>()[0], -1.f);
}

// Runs both sessions twice on the inputs (the second run reuses the plan) and compares their f32 outputs.
void expect_same_outputs(runtime::Session& fast, runtime::Session& ref,
                         const std::vector<std::pair<std::string, Tensor>>& inputs) {
  for (int rep = 0; rep < 2; ++rep) {
    std::vector<Tensor> of, orf;
    ASSERT_TRUE(fast.run(inputs, of).is_ok());
    ASSERT_TRUE(ref.run(inputs, orf).is_ok());
    ASSERT_EQ(of.size(), orf.size());
    for (size_t k = 0; k < of.size(); ++k) {
      ASSERT_EQ(of[k].dims(), orf[k].dims()) << "output " << k;
      for (int64_t i = 0; i < of[k].num_elements(); ++i)
        EXPECT_NEAR(of[k].data<float>()[i], orf[k].data<float>()[i], 1e-5f) << "output " << k << " element " << i;
    }
  }
}

// Concat inputs placed at their slices of the output (the producers write there, the Concat copies
// nothing): results must equal the reference kernels' (which copy), including the cases that must
// keep their own memory: an input read by another op too, a graph input, a graph output, a nested
// Concat, slices that do not start on the arena alignment.
TEST(Session, ConcatInputsWrittenInPlace) {
  OnnxBuilder b;
  b.input("x", 1, {1, 4, 4, 4}).input("u", 1, {1, 3, 1, 5});
  b.node("Relu", {"x"}, {"a"});
  b.node("Neg", {"x"}, {"n"});
  OnnxBuilder::attr(b.node("Concat", {"a", "n"}, {"c"}), "axis", int64_t{1});  // in place
  b.node("Sigmoid", {"x"}, {"d"});
  OnnxBuilder::attr(b.node("Concat", {"c", "d"}, {"e"}), "axis", int64_t{-3});  // c has slices of its own: copies
  b.node("Exp", {"x"}, {"h"});
  OnnxBuilder::attr(b.node("Concat", {"h", "x"}, {"f"}), "axis", int64_t{1});  // x is a graph input
  b.node("Tanh", {"h"}, {"t"});                             // h read twice: copies
  b.node("Abs", {"u"}, {"p"});
  b.node("Neg", {"u"}, {"q"});
  OnnxBuilder::attr(b.node("Concat", {"p", "q"}, {"g"}), "axis", int64_t{1});  // 20-byte slices: copies
  b.node("Floor", {"x"}, {"o"});
  OnnxBuilder::attr(b.node("Concat", {"o", "t"}, {"k"}), "axis", int64_t{1});  // o is a graph output: copies
  b.node("Add", {"e", "e"}, {"y"});
  b.output("y").output("f").output("g").output("k").output("o");
  const std::string bytes = b.bytes();
  auto fast = runtime::Session::open_memory(bytes.data(), bytes.size());
  runtime::SessionOptions ro;
  ro.reference_only = true;
  auto ref = runtime::Session::open_memory(bytes.data(), bytes.size(), ro);
  ASSERT_TRUE(fast.is_ok() && ref.is_ok());
  Tensor x = Tensor::allocate(DType::kF32, {1, 4, 4, 4}).value(), u = Tensor::allocate(DType::kF32, {1, 3, 1, 5}).value();
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = static_cast<float>(i % 9) * 0.37f - 1.3f;
  for (int64_t i = 0; i < u.num_elements(); ++i) u.data<float>()[i] = static_cast<float>(i) * 0.5f - 3.f;
  expect_same_outputs(**fast, **ref, {{"x", x}, {"u", u}});
}

// Outputs that are views of their input (Reshape, Flatten, Squeeze, Unsqueeze, Identity, contiguous Slice and
// Split) live in the input's bytes and their steps do not run: results must equal the reference kernels' (which
// copy) on two runs, with the input kept alive until the views' last reader (n is computed after a's last direct
// reader and would otherwise reuse its bytes), and with the cases that must copy: a graph input or output, a
// strided Slice, a Split with a dim > 1 before its axis, a slice off the arena alignment, a view that already
// lives in a Concat's output.
TEST(Session, ViewsShareTheirInputsBytes) {
  OnnxBuilder b;
  b.input("x", 1, {1, 4, 4, 4}).input("w", 1, {2, 4, 4});
  b.initializer_i64("flat", {2}, {1, 64}).initializer_i64("ax0", {1}, {0}).initializer_i64("ax1", {1}, {1});
  b.initializer_i64("ax2", {1}, {2}).initializer_i64("one", {1}, {1}).initializer_i64("three", {1}, {3});
  b.node("Relu", {"x"}, {"a"});
  b.node("Reshape", {"a", "flat"}, {"v"});  // view
  b.node("Neg", {"x"}, {"n"});
  b.node("Reshape", {"n", "flat"}, {"nv"});                                     // view
  b.node("Add", {"v", "nv"}, {"s"});                                            // reads both views after n exists
  b.node("Identity", {"a"}, {"ai"});                                            // view
  b.node("Unsqueeze", {"ai", "ax0"}, {"au"});                                   // view of a view: a's bytes
  b.node("Squeeze", {"au", "ax0"}, {"as"});                                     // again
  OnnxBuilder::attr(b.node("Flatten", {"as"}, {"af"}), "axis", int64_t{2});     // again: [4, 16]
  b.node("Slice", {"a", "one", "three", "ax1"}, {"sc"});                        // channels 1..2: 64-byte aligned, view
  b.node("Slice", {"a", "one", "three", "ax2"}, {"sr"});                        // rows 1..2 of every channel: copies
  b.node("Slice", {"v", "one", "three", "ax1"}, {"su"});                        // contiguous, 4-byte offset: copies
  b.node("Split", {"a"}, {"p0"});                                               // one output, the whole of a: view
  OnnxBuilder::attr(b.node("Split", {"s"}, {"q0", "q1"}), "axis", int64_t{1});  // two 128-byte runs: views
  b.node("Abs", {"w"}, {"wa"});
  OnnxBuilder::attr(b.node("Split", {"wa"}, {"r0", "r1"}), "axis", int64_t{1});  // dim 2 before the axis: copies
  b.node("Reshape", {"x", "flat"}, {"xv"});                                      // a graph input: copies
  b.node("Reshape", {"a", "flat"}, {"ov"});                                      // a graph output: copies
  b.node("Sigmoid", {"x"}, {"g"});
  b.node("Reshape", {"g", "flat"}, {"gv"});  // lives in the Concat's output: copies
  b.node("Tanh", {"x"}, {"t"});
  b.node("Reshape", {"t", "flat"}, {"tv"});
  OnnxBuilder::attr(b.node("Concat", {"gv", "tv"}, {"gt"}), "axis", int64_t{1});
  b.node("Mul", {"q0", "q1"}, {"m"});
  b.node("Neg", {"af"}, {"fo"});
  b.node("Neg", {"p0"}, {"po"});
  b.node("Relu", {"gt"}, {"go"});
  b.node("Neg", {"sc"}, {"d"});
  b.node("Neg", {"sr"}, {"e"});
  b.output("m").output("fo").output("d").output("e").output("su").output("po").output("r0").output("r1").output("xv");
  b.output("ov").output("go");
  const std::string bytes = b.bytes();
  runtime::SessionOptions fo, ro;
  fo.opt_level = ro.opt_level = 0;
  ro.reference_only = true;
  auto fast = runtime::Session::open_memory(bytes.data(), bytes.size(), fo);
  auto ref = runtime::Session::open_memory(bytes.data(), bytes.size(), ro);
  ASSERT_TRUE(fast.is_ok()) << fast.status().to_string();
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  Tensor x = Tensor::allocate(DType::kF32, {1, 4, 4, 4}).value(), w = Tensor::allocate(DType::kF32, {2, 4, 4}).value();
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = static_cast<float>(i % 11) * 0.41f - 2.1f;
  for (int64_t i = 0; i < w.num_elements(); ++i) w.data<float>()[i] = static_cast<float>(i) * 0.25f - 3.f;
  expect_same_outputs(**fast, **ref, {{"x", x}, {"w", w}});
  // v, nv, ai, au, as, af, sc, p0's Split, q0 / q1's Split.
  EXPECT_EQ((*fast)->plan_stats().view_steps, 9);
  EXPECT_EQ((*ref)->plan_stats().view_steps, 0);
}

TEST(Session, UnknownOpFailsAtLoadNamingNodeOpAndOpset) {
  OnnxBuilder b(11);
  b.input("x", 1, {2});
  b.node("FancyNewOp", {"x"}, {"y"}, "mystery");
  b.output("y");
  std::string bytes = b.bytes();
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_FALSE(s.is_ok());
  const std::string& m = s.status().message();
  EXPECT_NE(m.find("mystery"), std::string::npos) << m;
  EXPECT_NE(m.find("FancyNewOp"), std::string::npos) << m;
  EXPECT_NE(m.find("opset 11"), std::string::npos) << m;
}

// The float math of a model's 1x1 convs: f32 unless the model's kestrel.float_math metadata or the session option
// says bf16 (then weights and inputs are rounded to bf16 where the CPU has AVX512_BF16); bad values are refused.
TEST(Session, FloatMathFromTheModelOrTheOptions) {
  OnnxBuilder b;
  b.input("x", 1, {1, 16, 12, 12});  // 144 pixels: the plain pointwise path, not the transposed one
  std::vector<float> w(32 * 16);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>((i * 37) % 101) - 0.5f;
  b.initializer_f32("w", {32, 16, 1, 1}, w);
  b.node("Conv", {"x", "w"}, {"y"});
  b.output("y");
  const std::string onnx = b.bytes();
  auto g = frontend::import_onnx(onnx.data(), onnx.size(), {});
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  format::KstWriteOptions wo;
  wo.metadata[runtime::kFloatMathKey] = "bf16";
  auto bf16_kst = format::write_kst(**g, wo);
  wo.metadata[runtime::kFloatMathKey] = "f8";
  auto bad_kst = format::write_kst(**g, wo);
  ASSERT_TRUE(bf16_kst.is_ok() && bad_kst.is_ok());

  Tensor x = *Tensor::allocate(DType::kF32, {1, 16, 12, 12});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = std::sin(0.37f * static_cast<float>(i));
  auto run = [&](const std::string& bytes, const std::string& math) {
    runtime::SessionOptions so;
    so.float_math = math;
    auto s = runtime::Session::open_memory(bytes.data(), bytes.size(), so);
    EXPECT_TRUE(s.is_ok()) << s.status().to_string();
    std::vector<Tensor> out;
    if (s.is_ok()) {
      EXPECT_TRUE((*s)->run({{"x", x}}, out).is_ok());
    }
    return out.empty() ? Tensor() : out[0];
  };
  auto max_diff = [](const Tensor& a, const Tensor& b) {
    double d = 0;
    for (int64_t i = 0; i < a.num_elements(); ++i)
      d = std::max(d, static_cast<double>(std::fabs(a.data<float>()[i] - b.data<float>()[i])));
    return d;
  };
  const Tensor f32 = run(onnx, ""), f32_kst = run(*bf16_kst, "f32"), bf16_kst_run = run(*bf16_kst, ""),
               bf16_opt = run(onnx, "bf16");
  EXPECT_EQ(max_diff(f32, f32_kst), 0.0);  // the option overrides the model
  if (kernels::cpu::bf16_gemm_available()) {
    EXPECT_GT(max_diff(f32, bf16_kst_run), 1e-5);  // rounded: sums of 16 products of ~0.5 move by ~1e-3
    EXPECT_LT(max_diff(f32, bf16_kst_run), 2e-2);
    EXPECT_EQ(max_diff(bf16_kst_run, bf16_opt), 0.0);
  } else {
    EXPECT_EQ(max_diff(f32, bf16_kst_run), 0.0);
  }
  runtime::SessionOptions so;
  so.float_math = "f16";
  auto bad_opt = runtime::Session::open_memory(onnx.data(), onnx.size(), so);
  ASSERT_FALSE(bad_opt.is_ok());
  EXPECT_NE(bad_opt.status().message().find("'f16'"), std::string::npos) << bad_opt.status().message();
  auto bad_model = runtime::Session::open_memory(bad_kst->data(), bad_kst->size());
  ASSERT_FALSE(bad_model.is_ok());
  EXPECT_NE(bad_model.status().message().find("kestrel.float_math"), std::string::npos) << bad_model.status().message();
}

}  // namespace
}  // namespace kestrel
