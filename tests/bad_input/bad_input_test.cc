// Bad input must give a clear error, never a crash: malformed models and wrong inputs through the
// public C++ API, and the same cases through `kestrel run` / `kestrel inspect` (non-zero exit,
// message on stderr naming the file or input). Bad models are built here, not committed.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/onnx_builder.h"
#include "common/temp_dir.h"
#include "core/npy.h"
#include "core/tensor.h"
#include "kestrel/kestrel.hpp"

namespace kestrel {
namespace {

using testing::OnnxBuilder;

// x f32[2,3] + c f32[3] -> Relu -> y: the valid model every case starts from.
OnnxBuilder valid_builder() {
  OnnxBuilder b;
  b.input("x", 1, {2, 3}).initializer_f32("c", {3}, {1, -2, 3});
  b.node("Add", {"x", "c"}, {"s"}, "add");
  b.node("Relu", {"s"}, {"y"}, "relu");
  b.output("y");
  return b;
}

std::string valid_model() {
  return valid_builder().bytes();
}

std::string truncated_model() {
  std::string m = valid_model();
  return m.substr(0, m.size() / 2);
}

std::string random_bytes(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

// c is declared f32[4,4] (64 bytes) but holds 8 bytes.
std::string short_initializer_model() {
  OnnxBuilder b;
  b.input("x", 1, {4, 4});
  auto* t = b.raw_initializer("c");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(4);
  t->add_dims(4);
  t->set_raw_data(std::string(8, '\0'));
  b.node("Add", {"x", "c"}, {"y"}, "add");
  b.output("y");
  return b.bytes();
}

std::string undefined_value_model() {
  OnnxBuilder b;
  b.input("x", 1, {2, 3});
  b.node("Add", {"x", "ghost"}, {"y"}, "add");
  b.output("y");
  return b.bytes();
}

std::string unknown_op_model() {
  OnnxBuilder b;
  b.input("x", 1, {2, 3});
  b.node("NoSuchOp", {"x"}, {"y"}, "mystery");
  b.output("y");
  return b.bytes();
}

Tensor f32_tensor(std::vector<int64_t> shape) {
  Tensor t = Tensor::empty(DType::kF32, std::move(shape));
  for (size_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = static_cast<float>(i) - 2.0f;
  return t;
}

// Runs `f`; expects a kestrel::Error whose message contains every one of `needles`.
template <class F>
void expect_error(F&& f, std::initializer_list<const char*> needles) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_FALSE(msg.empty());
    for (const char* n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
  }
}

using testing::TempDir;

// ------------------------------------------------------------------ C++ API

TEST(BadInputApi, ValidModelRuns) {  // the control: the harness itself works
  std::string m = valid_model();
  Session s = Session::from_memory(m.data(), m.size());
  auto out = s.run({{"x", f32_tensor({2, 3})}});
  const float* y = out.at("y").data<float>();
  // x = [[-2,-1,0],[1,2,3]] + c = [1,-2,3] -> relu [[0,0,3],[2,0,6]]
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[2], 3.0f);
  EXPECT_EQ(y[5], 6.0f);
}

TEST(BadInputApi, TruncatedModel) {
  std::string m = truncated_model();
  expect_error([&] { Session::from_memory(m.data(), m.size()); }, {});
  TempDir dir;
  std::string path = dir.write("truncated.onnx", m);
  expect_error([&] { Session::open(path); }, {"truncated.onnx"});
}

TEST(BadInputApi, EveryPrefixOfAModelFailsCleanly) {
  // Cuts at field boundaries can still parse as a (different) model; none may crash.
  std::string m = valid_model();
  for (size_t n = 0; n < m.size(); ++n) {
    try {
      Session s = Session::from_memory(m.data(), n);
      s.run({{"x", f32_tensor({2, 3})}});
    } catch (const Error& e) {
      EXPECT_STRNE(e.what(), "") << "prefix of " << n << " bytes";
    }
  }
}

TEST(BadInputApi, RandomBytes) {
  std::string junk = random_bytes(1, 1000);
  expect_error([&] { Session::from_memory(junk.data(), junk.size()); }, {});
  TempDir dir;
  std::string path = dir.write("random.onnx", junk);
  expect_error([&] { Session::open(path); }, {"random.onnx"});
  for (uint64_t seed = 2; seed < 50; ++seed) {
    std::string r = random_bytes(seed, static_cast<size_t>(seed * 37 % 700));
    try {
      Session::from_memory(r.data(), r.size());
    } catch (const Error& e) {
      EXPECT_STRNE(e.what(), "");
    }
  }
}

TEST(BadInputApi, InitializerShorterThanItsShape) {
  std::string m = short_initializer_model();
  expect_error([&] { Session::from_memory(m.data(), m.size()); }, {"'c'", "8 bytes"});

  // The same with typed data: 3 floats for a [2,2] tensor.
  OnnxBuilder b;
  b.input("x", 1, {2, 2}).initializer_f32("c", {2, 2}, {1, 2, 3});
  b.node("Add", {"x", "c"}, {"y"});
  b.output("y");
  std::string m2 = b.bytes();
  expect_error([&] { Session::from_memory(m2.data(), m2.size()); }, {"'c'", "3 values"});

  // A huge declared shape with no data must fail before allocating.
  OnnxBuilder h;
  h.input("x", 1, {2});
  auto* t = h.raw_initializer("c");
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < 3; ++i) t->add_dims(int64_t{1} << 20);
  h.node("Add", {"x", "c"}, {"y"});
  h.output("y");
  std::string m3 = h.bytes();
  expect_error([&] { Session::from_memory(m3.data(), m3.size()); }, {"'c'"});
}

TEST(BadInputApi, UndefinedValue) {
  std::string m = undefined_value_model();
  expect_error([&] { Session::from_memory(m.data(), m.size()); }, {"ghost"});
}

TEST(BadInputApi, UnknownOp) {
  std::string m = unknown_op_model();
  expect_error([&] { Session::from_memory(m.data(), m.size()); }, {"mystery", "NoSuchOp", "opset 13"});
}

TEST(BadInputApi, UnknownOptionValues) {
  std::string m = valid_model();
  SessionOptions so;
  so.float_math = "f16";
  expect_error([&] { Session::from_memory(m.data(), m.size(), so); }, {"float math", "'f16'"});
  so.float_math = "f32";
  so.isa = "sse1";
  expect_error([&] { Session::from_memory(m.data(), m.size(), so); }, {"'sse1'"});
}

TEST(BadInputApi, WrongInputName) {
  std::string m = valid_model();
  Session s = Session::from_memory(m.data(), m.size());
  expect_error([&] { s.run({{"z", f32_tensor({2, 3})}}); }, {"'z'", "'x'"});
  expect_error([&] { s.run(std::map<std::string, Tensor>{}); }, {"'x'", "missing"});
}

TEST(BadInputApi, WrongInputShape) {
  std::string m = valid_model();
  Session s = Session::from_memory(m.data(), m.size());
  expect_error([&] { s.run({{"x", f32_tensor({3, 2})}}); }, {"'x'", "[2,3]", "[3,2]"});
  expect_error([&] { s.run({{"x", f32_tensor({2, 3, 1})}}); }, {"'x'", "[2,3]"});
  expect_error([&] { s.run({{"x", f32_tensor({})}}); }, {"'x'"});
  expect_error([&] { s.run({{"x", Tensor()}}); }, {"'x'"});
}

TEST(BadInputApi, WrongInputDtype) {
  std::string m = valid_model();
  Session s = Session::from_memory(m.data(), m.size());
  expect_error([&] { s.run({{"x", Tensor::empty(DType::kI64, {2, 3})}}); }, {"'x'", "f32", "i64"});
  expect_error([&] { s.run({{"x", Tensor::empty(DType::kF16, {2, 3})}}); }, {"'x'", "f16"});
  // The session still works after rejected runs.
  EXPECT_EQ(s.run({{"x", f32_tensor({2, 3})}}).at("y").data<float>()[5], 6.0f);
}

TEST(BadInputApi, MissingModelFile) {
  expect_error([] { Session::open("/nonexistent/dir/model.onnx"); }, {"/nonexistent/dir/model.onnx"});
}

// ------------------------------------------------------------------ CLI

#ifdef KESTREL_CLI_PATH

struct CliResult {
  bool exited = false;  // false: killed by a signal (a crash)
  int code = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

CliResult run_cli(const TempDir& dir, const std::string& args) {
  std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");
  std::string cmd = std::string("'") + KESTREL_CLI_PATH + "' " + args + " >'" + out + "' 2>'" + err + "'";
  int status = std::system(cmd.c_str());
  CliResult r;
  r.exited = status != -1 && WIFEXITED(status);
  r.code = r.exited ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

// Non-zero exit, no crash, no sanitizer report, and stderr names what is wrong.
void expect_cli_error(const TempDir& dir, const std::string& args, std::initializer_list<const char*> needles) {
  SCOPED_TRACE("kestrel " + args);
  CliResult r = run_cli(dir, args);
  if (std::getenv("KESTREL_SHOW_ERRORS")) std::fprintf(stderr, "$ kestrel %s\n%s", args.c_str(), r.err.c_str());
  ASSERT_TRUE(r.exited) << "the CLI died from a signal; stderr:\n" << r.err;
  EXPECT_NE(r.code, 0) << "stdout:\n" << r.out;
  EXPECT_EQ(r.err.find("Sanitizer"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("runtime error"), std::string::npos) << r.err;
  EXPECT_FALSE(r.err.empty());
  for (const char* n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "'" << n << "' not in: " << r.err;
}

std::string q(const std::string& s) {
  return "'" + s + "'";
}

class BadInputCli : public ::testing::Test {
 protected:
  TempDir dir;
  std::string model = dir.write("model.onnx", valid_model());
  std::string x = dir.write_npy("x.npy", core::Tensor::from_vector<float>({-2, -1, 0, 1, 2, 3}, {2, 3}));
};

TEST_F(BadInputCli, ValidModelRuns) {  // the control
  CliResult r = run_cli(dir, "run " + q(model) + " --input x=" + q(x) + " --output-dir " + q(dir.file("out")));
  ASSERT_TRUE(r.exited);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("output y f32[2,3] min=0 max=6 mean=1.83333"), std::string::npos) << r.out;
  auto y = core::read_npy(dir.file("out/y.npy"));
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(y->data<float>()[5], 6.0f);
  CliResult random = run_cli(dir, "run " + q(model));
  EXPECT_EQ(random.code, 0) << random.err;
  CliResult inspect = run_cli(dir, "inspect " + q(model));
  EXPECT_EQ(inspect.code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("parameters: 3 (12 B)"), std::string::npos) << inspect.out;
}

// --float-math overrides the model's float math (bf16 only where the CPU has AVX512_BF16); other values are refused.
TEST_F(BadInputCli, FloatMathOption) {
  for (const char* math : {"f32", "bf16"}) {
    CliResult m = run_cli(dir, "run " + q(model) + " --input x=" + q(x) + " --float-math " + math);
    EXPECT_EQ(m.code, 0) << m.err;
    EXPECT_NE(m.out.find("output y f32[2,3] min=0 max=6 mean=1.83333"), std::string::npos) << m.out;
  }
  expect_cli_error(dir, "run " + q(model) + " --float-math f16", {"--float-math", "f16"});
}

TEST_F(BadInputCli, TruncatedModel) {
  std::string m = dir.write("truncated.onnx", truncated_model());
  expect_cli_error(dir, "run " + q(m), {"truncated.onnx"});
  expect_cli_error(dir, "inspect " + q(m), {"truncated.onnx"});
}

TEST_F(BadInputCli, RandomBytes) {
  std::string m = dir.write("random.onnx", random_bytes(1, 1000));
  expect_cli_error(dir, "run " + q(m), {"random.onnx"});
  expect_cli_error(dir, "inspect " + q(m), {"random.onnx"});
  std::string bin = dir.write("random.bin", random_bytes(2, 1000));
  expect_cli_error(dir, "run " + q(bin), {"random.bin"});
}

TEST_F(BadInputCli, InitializerShorterThanItsShape) {
  std::string m = dir.write("short.onnx", short_initializer_model());
  expect_cli_error(dir, "run " + q(m), {"short.onnx", "'c'"});
  expect_cli_error(dir, "inspect " + q(m), {"short.onnx", "'c'"});
}

TEST_F(BadInputCli, UndefinedValue) {
  std::string m = dir.write("undefined.onnx", undefined_value_model());
  expect_cli_error(dir, "run " + q(m), {"undefined.onnx", "ghost"});
}

TEST_F(BadInputCli, UnknownOp) {
  std::string m = dir.write("unknown_op.onnx", unknown_op_model());
  expect_cli_error(dir, "run " + q(m), {"unknown_op.onnx", "NoSuchOp", "mystery", "opset 13"});
  expect_cli_error(dir, "inspect " + q(m), {"unknown_op.onnx", "NoSuchOp"});
}

TEST_F(BadInputCli, WrongInputName) {
  expect_cli_error(dir, "run " + q(model) + " --input z=" + q(x), {"'z'", "'x'"});
  expect_cli_error(dir, "run " + q(model) + " --shape z=2x3", {"'z'"});
  expect_cli_error(dir, "run " + q(model) + " --input x=" + q(x) + " --input x=" + q(x), {"'x'", "twice"});
}

TEST_F(BadInputCli, WrongInputShape) {
  std::string x32 = dir.write_npy("x32.npy", core::Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2}));
  expect_cli_error(dir, "run " + q(model) + " --input x=" + q(x32), {"'x'", "x32.npy", "[2,3]", "[3,2]"});
  expect_cli_error(dir, "run " + q(model) + " --shape x=3x2", {"'x'", "[2,3]", "[3,2]"});
  expect_cli_error(dir, "run " + q(model) + " --shape x=2by3", {"--shape", "2by3"});
}

TEST_F(BadInputCli, WrongInputDtype) {
  std::string xi = dir.write_npy("xi.npy", core::Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3}));
  expect_cli_error(dir, "run " + q(model) + " --input x=" + q(xi), {"'x'", "xi.npy", "f32", "i64"});
}

TEST_F(BadInputCli, MalformedNpy) {
  std::string good = core::to_npy_bytes(core::Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  std::string bad_magic = dir.write("bad_magic.npy", "JUNK" + good.substr(4));
  expect_cli_error(dir, "run " + q(model) + " --input x=" + q(bad_magic), {"bad_magic.npy", "magic"});
  std::string short_data = dir.write("short_data.npy", good.substr(0, good.size() - 4));
  expect_cli_error(dir, "run " + q(model) + " --input x=" + q(short_data), {"short_data.npy", "truncated"});
  std::string short_header = dir.write("short_header.npy", good.substr(0, 30));
  expect_cli_error(dir, "run " + q(model) + " --input x=" + q(short_header), {"short_header.npy"});
  std::string fortran = good;
  size_t f = fortran.find("False");
  fortran.replace(f, 5, "True ");
  expect_cli_error(dir, "run " + q(model) + " --input x=" + q(dir.write("fortran.npy", fortran)),
                   {"fortran.npy", "Fortran"});
  std::string empty = dir.write("empty.npy", "");
  expect_cli_error(dir, "run " + q(model) + " --input x=" + q(empty), {"empty.npy"});
  expect_cli_error(dir, "run " + q(model) + " --input x=" + q(dir.file("missing.npy")), {"missing.npy"});
}

TEST_F(BadInputCli, BadCommandLines) {
  expect_cli_error(dir, "", {});
  expect_cli_error(dir, "frobnicate", {});
  expect_cli_error(dir, "run", {"model"});
  expect_cli_error(dir, "run " + q(dir.file("missing.onnx")), {"missing.onnx"});
  expect_cli_error(dir, "inspect " + q(dir.file("missing.onnx")), {"missing.onnx"});
  expect_cli_error(dir, "run " + q(model) + " --input " + q(x), {"--input", "NAME=FILE.npy"});
  expect_cli_error(dir, "run " + q(model) + " --threads 0", {"threads"});
  // --output-dir pointing at an existing file.
  expect_cli_error(dir, "run " + q(model) + " --output-dir " + q(x), {"x.npy"});
}

// `kestrel convert` writes a .kst that runs, prints its per-pass report; bad options fail cleanly.
TEST_F(BadInputCli, ConvertAndInspectGraph) {
  const std::string kst = dir.file("model.kst");
  for (const char* level : {"-O0", "-O1", "-O2"}) {
    CliResult r = run_cli(dir, "convert " + q(model) + " -o " + q(kst) + " " + level + " --fp16-weights");
    ASSERT_TRUE(r.exited);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("nodes"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("wrote"), std::string::npos) << r.out;
    CliResult run = run_cli(dir, "run " + q(kst) + " --input x=" + q(x));
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_NE(run.out.find("max=6"), std::string::npos) << run.out;
  }
  CliResult fixed = run_cli(dir, "convert " + q(model) + " -o " + q(kst) + " --input-shape x=2x3");
  EXPECT_EQ(fixed.code, 0) << fixed.err;
  expect_cli_error(dir, "convert " + q(model) + " -o " + q(kst) + " --input-shape nope=2x3", {"nope", "x"});
  expect_cli_error(dir, "convert " + q(model) + " -o " + q(kst) + " --input-shape x=4x3", {"x", "dim 0"});
  expect_cli_error(dir, "convert " + q(model) + " -o " + q(kst) + " --input-shape x=2x3x1", {"rank"});
  expect_cli_error(dir, "convert " + q(model) + " -o " + q(kst) + " -O3", {"-O"});
  expect_cli_error(dir, "convert " + q(model), {"--output"});
  expect_cli_error(dir, "convert " + q(dir.file("missing.onnx")) + " -o " + q(kst), {"missing.onnx"});
  expect_cli_error(dir, "convert " + q(model) + " -o " + q(dir.file("no/such/dir/m.kst")), {"m.kst"});

  CliResult text = run_cli(dir, "inspect " + q(model) + " -O2 --graph");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("graph "), std::string::npos) << text.out;
  const std::string dot = dir.file("g.dot");
  CliResult d = run_cli(dir, "inspect " + q(kst) + " --graph --dot " + q(dot));
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(slurp(dot).rfind("digraph", 0), 0u) << slurp(dot);
  expect_cli_error(dir, "inspect " + q(model) + " --dot " + q(dot), {"--graph"});
  // Without `dot` on PATH, --svg says what is missing.
  CliResult svg = run_cli(dir, "inspect " + q(model) + " --graph --svg " + q(dir.file("g.svg")));
  if (svg.code == 0)
    EXPECT_NE(slurp(dir.file("g.svg")).find("<svg"), std::string::npos);
  else
    EXPECT_NE(svg.err.find("graphviz"), std::string::npos) << svg.err;
  const std::string no_dot = "PATH=" + dir.file("empty_path") + " ";
  std::string cmd = no_dot + "'" + KESTREL_CLI_PATH + "' inspect " + q(model) + " --graph --svg " +
                    q(dir.file("h.svg")) + " 2>" + q(dir.file("err.txt"));
  int status = std::system(cmd.c_str());
  EXPECT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) != 0);
  EXPECT_NE(slurp(dir.file("err.txt")).find("'dot' program"), std::string::npos) << slurp(dir.file("err.txt"));
}

#endif  // KESTREL_CLI_PATH

}  // namespace
}  // namespace kestrel
