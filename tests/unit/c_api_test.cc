// Tests of the public C API (include/kestrel/kestrel.h only; the model bytes come from the test
// builder): sessions from memory and files, I/O info, runs, in-place outputs, and every error path
// returning a status code with a message instead of crashing.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/onnx_builder.h"
#include "kestrel/kestrel.h"

namespace {

using kestrel::testing::OnnxBuilder;

// y = relu(x + c), x f32[batch,3].
std::string model_bytes() {
  OnnxBuilder b;
  b.input("x", 1, {-1, 3}, {"batch", ""}).initializer_f32("c", {3}, {1, -2, 3});
  b.node("Add", {"x", "c"}, {"s"});
  b.node("Relu", {"s"}, {"y"});
  b.output("y");
  return b.bytes();
}

struct SessionPtr {
  KestrelSession* s = nullptr;
  ~SessionPtr() { kestrel_session_free(s); }
};

KestrelSession* open_model(SessionPtr& holder) {
  std::string m = model_bytes();
  KestrelOptions o;
  kestrel_options_default(&o);
  EXPECT_EQ(kestrel_session_open_memory(m.data(), m.size(), &o, &holder.s), KESTREL_OK) << kestrel_last_error();
  return holder.s;
}

TEST(CApi, VersionAndDefaults) {
  EXPECT_STRNE(kestrel_version(), "");
  KestrelOptions o;
  std::memset(&o, 0x5a, sizeof o);
  kestrel_options_default(&o);
  EXPECT_EQ(o.num_threads, 1);
  EXPECT_EQ(o.optimization_level, 2);
  EXPECT_EQ(o.reference_kernels, 0);
  EXPECT_EQ(o.isa, nullptr);
  EXPECT_EQ(o.float_math, nullptr);
  kestrel_options_default(nullptr);  // must not crash
}

TEST(CApi, InputAndOutputInfo) {
  SessionPtr h;
  KestrelSession* s = open_model(h);
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(kestrel_session_input_count(s), 1u);
  ASSERT_EQ(kestrel_session_output_count(s), 1u);
  const char* name = nullptr;
  KestrelDType dtype = KESTREL_UNDEFINED;
  const int64_t* shape = nullptr;
  size_t rank = 0;
  ASSERT_EQ(kestrel_session_input_info(s, 0, &name, &dtype, &shape, &rank), KESTREL_OK);
  EXPECT_STREQ(name, "x");
  EXPECT_EQ(dtype, KESTREL_F32);
  ASSERT_EQ(rank, 2u);
  EXPECT_EQ(shape[0], -1);  // symbolic "batch"
  EXPECT_EQ(shape[1], 3);
  ASSERT_EQ(kestrel_session_output_info(s, 0, &name, &dtype, nullptr, nullptr), KESTREL_OK);
  EXPECT_STREQ(name, "y");
  EXPECT_EQ(dtype, KESTREL_F32);
  EXPECT_EQ(kestrel_session_input_info(s, 1, &name, &dtype, &shape, &rank), KESTREL_OUT_OF_RANGE);
  EXPECT_STRNE(kestrel_last_error(), "");
  EXPECT_EQ(kestrel_session_output_info(s, 7, &name, nullptr, nullptr, nullptr), KESTREL_OUT_OF_RANGE);
}

TEST(CApi, RunAllocatesOutputsThenFillsThemInPlace) {
  SessionPtr h;
  KestrelSession* s = open_model(h);
  ASSERT_NE(s, nullptr);
  for (int64_t batch : {2, 1, 4}) {  // the symbolic dim changes between runs
    std::vector<float> x(static_cast<size_t>(batch * 3));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 3.0f;
    int64_t shape[] = {batch, 3};
    KestrelTensor* in = nullptr;
    ASSERT_EQ(kestrel_tensor_create(KESTREL_F32, shape, 2, x.data(), &in), KESTREL_OK) << kestrel_last_error();
    KestrelTensor* out = nullptr;
    ASSERT_EQ(kestrel_session_run(s, &in, 1, &out, 1), KESTREL_OK) << kestrel_last_error();
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(kestrel_tensor_dtype(out), KESTREL_F32);
    ASSERT_EQ(kestrel_tensor_rank(out), 2u);
    EXPECT_EQ(kestrel_tensor_shape(out)[0], batch);
    ASSERT_EQ(kestrel_tensor_num_elements(out), x.size());
    const float c[] = {1, -2, 3};
    auto check = [&](const float* y) {
      for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], std::max(0.0f, x[i] + c[i % 3])) << i;
    };
    check(static_cast<const float*>(kestrel_tensor_data(out)));

    // Second run with the output passed in: same buffer, new values.
    void* data_before = kestrel_tensor_data(out);
    std::memset(data_before, 0x7f, x.size() * sizeof(float));
    ASSERT_EQ(kestrel_session_run(s, &in, 1, &out, 1), KESTREL_OK) << kestrel_last_error();
    EXPECT_EQ(kestrel_tensor_data(out), data_before);
    check(static_cast<const float*>(kestrel_tensor_data(out)));
    kestrel_tensor_free(in);
    kestrel_tensor_free(out);
  }
}

TEST(CApi, WrappedCallerMemory) {
  SessionPtr h;
  KestrelSession* s = open_model(h);
  ASSERT_NE(s, nullptr);
  float x[3] = {-5, 5, 0}, y[3] = {-1, -1, -1};
  int64_t shape[] = {1, 3};
  KestrelTensor *in = nullptr, *out = nullptr;
  ASSERT_EQ(kestrel_tensor_wrap(KESTREL_F32, shape, 2, x, &in), KESTREL_OK);
  ASSERT_EQ(kestrel_tensor_wrap(KESTREL_F32, shape, 2, y, &out), KESTREL_OK);
  EXPECT_EQ(kestrel_tensor_data(in), static_cast<void*>(x));
  ASSERT_EQ(kestrel_session_run(s, &in, 1, &out, 1), KESTREL_OK) << kestrel_last_error();
  EXPECT_EQ(kestrel_tensor_data(out), static_cast<void*>(y));  // written into the caller's array
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 3.0f);
  EXPECT_EQ(y[2], 3.0f);
  kestrel_tensor_free(in);
  kestrel_tensor_free(out);
}

TEST(CApi, OpenFromFileAndErrors) {
  std::string path = ::testing::TempDir() + "/kestrel_c_api_test_model.onnx";
  std::string m = model_bytes();
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite(m.data(), 1, m.size(), f);
  std::fclose(f);
  KestrelSession* s = nullptr;
  ASSERT_EQ(kestrel_session_open(path.c_str(), nullptr, &s), KESTREL_OK) << kestrel_last_error();
  EXPECT_STREQ(kestrel_last_error(), "");  // a successful call clears the last error
  kestrel_session_free(s);
  std::remove(path.c_str());

  s = reinterpret_cast<KestrelSession*>(0x1);  // must be reset on failure
  EXPECT_EQ(kestrel_session_open("/nonexistent/model.onnx", nullptr, &s), KESTREL_IO_ERROR);
  EXPECT_EQ(s, nullptr);
  EXPECT_NE(std::string(kestrel_last_error()).find("/nonexistent/model.onnx"), std::string::npos);

  const char junk[] = "definitely not a model";
  EXPECT_NE(kestrel_session_open_memory(junk, sizeof junk, nullptr, &s), KESTREL_OK);
  EXPECT_STRNE(kestrel_last_error(), "");
  EXPECT_EQ(s, nullptr);

  OnnxBuilder b;
  b.input("x", 1, {2});
  b.node("NoSuchOp", {"x"}, {"y"}, "mystery");
  b.output("y");
  std::string bad = b.bytes();
  EXPECT_EQ(kestrel_session_open_memory(bad.data(), bad.size(), nullptr, &s), KESTREL_UNSUPPORTED);
  EXPECT_NE(std::string(kestrel_last_error()).find("NoSuchOp"), std::string::npos) << kestrel_last_error();

  KestrelOptions o;
  kestrel_options_default(&o);
  o.isa = "sse1";
  EXPECT_EQ(kestrel_session_open_memory(m.data(), m.size(), &o, &s), KESTREL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kestrel_last_error()).find("sse1"), std::string::npos) << kestrel_last_error();

  // The float math option reaches the session: a value it does not know is refused by name, the known ones open.
  kestrel_options_default(&o);
  o.float_math = "f16";
  EXPECT_EQ(kestrel_session_open_memory(m.data(), m.size(), &o, &s), KESTREL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kestrel_last_error()).find("f16"), std::string::npos) << kestrel_last_error();
  for (const char* math : {"f32", "bf16", ""}) {
    o.float_math = math;
    ASSERT_EQ(kestrel_session_open_memory(m.data(), m.size(), &o, &s), KESTREL_OK)
        << math << ": " << kestrel_last_error();
    kestrel_session_free(s);
    s = nullptr;
  }
}

TEST(CApi, NullArguments) {
  KestrelSession* s = nullptr;
  EXPECT_EQ(kestrel_session_open(nullptr, nullptr, &s), KESTREL_INVALID_ARGUMENT);
  EXPECT_EQ(kestrel_session_open("x.onnx", nullptr, nullptr), KESTREL_INVALID_ARGUMENT);
  EXPECT_EQ(kestrel_session_open_memory(nullptr, 10, nullptr, &s), KESTREL_INVALID_ARGUMENT);
  EXPECT_EQ(kestrel_session_input_count(nullptr), 0u);
  EXPECT_EQ(kestrel_session_output_count(nullptr), 0u);
  EXPECT_EQ(kestrel_session_input_info(nullptr, 0, nullptr, nullptr, nullptr, nullptr), KESTREL_INVALID_ARGUMENT);
  EXPECT_EQ(kestrel_session_run(nullptr, nullptr, 0, nullptr, 0), KESTREL_INVALID_ARGUMENT);
  EXPECT_EQ(kestrel_tensor_create(KESTREL_F32, nullptr, 2, nullptr, nullptr), KESTREL_INVALID_ARGUMENT);
  KestrelTensor* t = nullptr;
  EXPECT_EQ(kestrel_tensor_create(KESTREL_F32, nullptr, 2, nullptr, &t), KESTREL_INVALID_ARGUMENT);
  EXPECT_EQ(kestrel_tensor_wrap(KESTREL_F32, nullptr, 0, nullptr, &t), KESTREL_INVALID_ARGUMENT);
  EXPECT_EQ(kestrel_tensor_dtype(nullptr), KESTREL_UNDEFINED);
  EXPECT_EQ(kestrel_tensor_rank(nullptr), 0u);
  EXPECT_EQ(kestrel_tensor_shape(nullptr), nullptr);
  EXPECT_EQ(kestrel_tensor_num_elements(nullptr), 0u);
  EXPECT_EQ(kestrel_tensor_data(nullptr), nullptr);
  kestrel_tensor_free(nullptr);
  kestrel_session_free(nullptr);
}

TEST(CApi, BadTensors) {
  KestrelTensor* t = nullptr;
  int64_t negative[] = {2, -3};
  EXPECT_NE(kestrel_tensor_create(KESTREL_F32, negative, 2, nullptr, &t), KESTREL_OK);
  EXPECT_EQ(t, nullptr);
  EXPECT_STRNE(kestrel_last_error(), "");
  int64_t huge[] = {int64_t{1} << 40, int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_NE(kestrel_tensor_create(KESTREL_F32, huge, 3, nullptr, &t), KESTREL_OK);
  EXPECT_EQ(t, nullptr);
  float x[4] = {};
  EXPECT_NE(kestrel_tensor_wrap(KESTREL_F32, negative, 2, x, &t), KESTREL_OK);
  EXPECT_NE(kestrel_tensor_wrap(KESTREL_F32, huge, 3, x, &t), KESTREL_OK);
  int64_t shape[] = {4};
  // 15 is no dtype but still a value a KestrelDType can hold in C++ (its enumerators need 4 bits);
  // farther-out values would make the cast itself undefined behaviour in this C++ test.
  for (int bad : {0, 15}) {
    SCOPED_TRACE(bad);
    EXPECT_NE(kestrel_tensor_create(static_cast<KestrelDType>(bad), shape, 1, nullptr, &t), KESTREL_OK);
    EXPECT_NE(kestrel_tensor_wrap(static_cast<KestrelDType>(bad), shape, 1, x, &t), KESTREL_OK);
  }
}

TEST(CApi, RunErrors) {
  SessionPtr h;
  KestrelSession* s = open_model(h);
  ASSERT_NE(s, nullptr);
  int64_t good[] = {2, 3}, wrong[] = {3, 2};
  KestrelTensor *in = nullptr, *bad_shape = nullptr, *bad_dtype = nullptr, *out = nullptr;
  ASSERT_EQ(kestrel_tensor_create(KESTREL_F32, good, 2, nullptr, &in), KESTREL_OK);
  ASSERT_EQ(kestrel_tensor_create(KESTREL_F32, wrong, 2, nullptr, &bad_shape), KESTREL_OK);
  ASSERT_EQ(kestrel_tensor_create(KESTREL_I64, good, 2, nullptr, &bad_dtype), KESTREL_OK);

  EXPECT_EQ(kestrel_session_run(s, &bad_shape, 1, &out, 1), KESTREL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kestrel_last_error()).find("'x'"), std::string::npos) << kestrel_last_error();
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(kestrel_session_run(s, &bad_dtype, 1, &out, 1), KESTREL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kestrel_last_error()).find("i64"), std::string::npos) << kestrel_last_error();
  KestrelTensor* two[] = {in, in};
  EXPECT_EQ(kestrel_session_run(s, two, 2, &out, 1), KESTREL_INVALID_ARGUMENT);
  EXPECT_EQ(kestrel_session_run(s, &in, 0, &out, 1), KESTREL_INVALID_ARGUMENT);
  KestrelTensor* outs[2] = {nullptr, nullptr};
  EXPECT_EQ(kestrel_session_run(s, &in, 1, outs, 2), KESTREL_INVALID_ARGUMENT);
  KestrelTensor* null_input = nullptr;
  EXPECT_EQ(kestrel_session_run(s, &null_input, 1, &out, 1), KESTREL_INVALID_ARGUMENT);

  // Still usable afterwards.
  ASSERT_EQ(kestrel_session_run(s, &in, 1, &out, 1), KESTREL_OK) << kestrel_last_error();
  kestrel_tensor_free(out);
  kestrel_tensor_free(in);
  kestrel_tensor_free(bad_shape);
  kestrel_tensor_free(bad_dtype);
}

TEST(CApi, LastErrorIsPerThread) {
  KestrelSession* s = nullptr;
  ASSERT_NE(kestrel_session_open("/nonexistent/a.onnx", nullptr, &s), KESTREL_OK);
  std::string other;
  std::thread([&] { other = kestrel_last_error(); }).join();
  EXPECT_EQ(other, "");
  EXPECT_NE(std::string(kestrel_last_error()).find("a.onnx"), std::string::npos);
}

}  // namespace
