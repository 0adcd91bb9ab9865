// Session::run allocates nothing for static shapes: every heap allocation of this process is
// counted (src/testing/alloc_counter.h replaces operator new and wraps malloc & co.), and runs
// after the first one, with the outputs bound to caller buffers, must count zero. The counter is
// checked first, so a broken hook cannot make the zero vacuous.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common/onnx_builder.h"
#include "core/buffer.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kestrel/kestrel.hpp"
#include "runtime/session.h"
#include "testing/alloc_counter.h"

namespace kestrel {
namespace {

using core::DType;
using core::Tensor;
using kestrel::testing::alloc_bytes;
using kestrel::testing::alloc_count;
using kestrel::testing::OnnxBuilder;

std::unique_ptr<runtime::Session> open(const std::string& bytes, int threads = 1) {
  runtime::SessionOptions so;
  so.num_threads = threads;
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size(), so);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? std::move(s).value() : nullptr;
}

// x f32[2,8,5,7] -> two branches of unary ops, each a graph output; one intermediate is also an
// output read by a later node. Kernels: reference unary elementwise (they allocate nothing).
std::string static_model() {
  OnnxBuilder b;
  b.input("x", 1, {2, 8, 5, 7});
  b.node("Relu", {"x"}, {"a"});
  b.node("Sigmoid", {"a"}, {"b"});
  b.node("Neg", {"b"}, {"c"});
  b.node("Abs", {"c"}, {"d"});
  b.node("Tanh", {"d"}, {"y"});
  b.node("Exp", {"x"}, {"e"});
  b.node("Neg", {"e"}, {"f"});
  b.node("Sigmoid", {"f"}, {"z"});
  b.node("Abs", {"b"}, {"w"});
  b.output("y").output("z").output("b").output("w");
  return b.bytes();
}

float sigmoid(float v) {
  return 1.0f / (1.0f + std::exp(-v));
}

Tensor input_tensor() {
  Tensor x = Tensor::allocate(DType::kF32, {2, 8, 5, 7}).value();
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = static_cast<float>(i % 13) * 0.25f - 1.5f;
  return x;
}

void check_outputs(const Tensor& x, const std::vector<Tensor>& out) {
  ASSERT_EQ(out.size(), 4u);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    float v = x.data<float>()[i];
    float b = sigmoid(std::max(v, 0.0f));
    ASSERT_NEAR(out[0].data<float>()[i], std::tanh(b), 1e-6f) << i;
    ASSERT_NEAR(out[1].data<float>()[i], sigmoid(-std::exp(v)), 1e-6f) << i;
    ASSERT_NEAR(out[2].data<float>()[i], b, 1e-6f) << i;
    ASSERT_NEAR(out[3].data<float>()[i], b, 1e-6f) << i;
  }
}

// Stores through here keep the compiler from eliding an allocation/free pair.
void* volatile g_sink = nullptr;

TEST(AllocCounter, CountsEveryKindOfAllocation) {
  uint64_t n0 = alloc_count();
  auto* p = new int(3);
  g_sink = p;
  EXPECT_EQ(alloc_count(), n0 + 1);
  delete p;
  std::vector<int> v(100);
  g_sink = v.data();
  EXPECT_EQ(alloc_count(), n0 + 2);
  auto buf = core::allocate_aligned(4096);  // std::aligned_alloc inside the library
  ASSERT_TRUE(buf.is_ok());
  EXPECT_GE(alloc_count(), n0 + 3);
  uint64_t n1 = alloc_count();
  g_sink = std::malloc(10);
  EXPECT_EQ(alloc_count(), n1 + 1);
  std::free(g_sink);
  auto t = Tensor::allocate(DType::kF32, {4, 4});
  ASSERT_TRUE(t.is_ok());
  EXPECT_GT(alloc_count(), n1 + 1);
}

void expect_runs_allocate_nothing(int threads) {
  auto s = open(static_model(), threads);
  ASSERT_TRUE(s);
  Tensor x = input_tensor();
  std::vector<const Tensor*> ins = {&x};
  std::vector<Tensor> out;
  ASSERT_TRUE(s->run(ins, out).is_ok());  // plans, allocates the outputs
  check_outputs(x, out);
  std::vector<const void*> data;
  for (const Tensor& t : out) data.push_back(t.raw_data());

  uint64_t before = alloc_count();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(s->run(ins, out).is_ok());
  uint64_t allocs = alloc_count() - before;
  EXPECT_EQ(allocs, 0u) << "heap allocations in 5 runs of a static-shape model";
  // Written in place: the same buffers, with the right values.
  for (size_t k = 0; k < out.size(); ++k) EXPECT_EQ(out[k].raw_data(), data[k]) << k;
  check_outputs(x, out);
}

// Non-conv fast bindings and the kernels made allocation-free for issue 5: ConvTranspose, Resize,
// MaxPool, a middle-axis ReduceMean, Slice, Concat, Split, Gather, batched MatMul, Transpose,
// Softmax. Static shapes: after the first run, runs allocate nothing (one and two threads).
std::string bindings_model() {
  OnnxBuilder b;
  b.input("x", 1, {1, 4, 6, 6});
  std::vector<float> w(4 * 3 * 3 * 3), bm(8 * 5);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7) * 0.1f - 0.3f;
  for (size_t i = 0; i < bm.size(); ++i) bm[i] = static_cast<float>(i % 5) * 0.2f - 0.4f;
  b.initializer_f32("w", {4, 3, 3, 3}, w).initializer_f32("bias", {3}, {0.1f, -0.2f, 0.3f});
  b.initializer_f32("scales", {4}, {1, 1, 2, 2}).initializer_f32("bm", {8, 5}, bm);
  b.initializer_i64("axes1", {1}, {1}).initializer_i64("st", {1}, {1}).initializer_i64("en", {1}, {9});
  b.initializer_i64("ax3", {1}, {3}).initializer_i64("split", {2}, {2, 4}).initializer_i64("idx", {2}, {0, 2});
  auto& ct = b.node("ConvTranspose", {"x", "w", "bias"}, {"ct"});
  OnnxBuilder::attr(ct, "strides", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(ct, "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxBuilder::attr(b.node("Resize", {"ct", "", "scales"}, {"rz"}), "mode", std::string("linear"));
  auto& mp = b.node("MaxPool", {"rz"}, {"mp"});
  OnnxBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{3, 3});
  OnnxBuilder::attr(mp, "strides", std::vector<int64_t>{2, 2});
  b.node("ReduceMean", {"mp", "axes1"}, {"rm"});
  b.node("Slice", {"mp", "st", "en", "ax3"}, {"sl"});
  OnnxBuilder::attr(b.node("Concat", {"sl", "sl"}, {"cc"}), "axis", int64_t{1});
  OnnxBuilder::attr(b.node("Split", {"cc", "split"}, {"s1", "s2"}), "axis", int64_t{1});
  OnnxBuilder::attr(b.node("Gather", {"s2", "idx"}, {"gt"}), "axis", int64_t{1});
  b.node("MatMul", {"gt", "bm"}, {"mm"});
  OnnxBuilder::attr(b.node("Transpose", {"mm"}, {"tr"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
  b.node("Softmax", {"tr"}, {"y"});
  b.output("rm").output("s1").output("y");
  return b.bytes();
}

TEST(RunAllocations, FastBindingsAllocateNothing) {
  for (int threads : {1, 2}) {
    auto s = open(bindings_model(), threads);
    ASSERT_TRUE(s);
    Tensor x = Tensor::allocate(DType::kF32, {1, 4, 6, 6}).value();
    for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = static_cast<float>(i % 11) * 0.3f - 1.f;
    std::vector<const Tensor*> ins = {&x};
    std::vector<Tensor> out;
    ASSERT_TRUE(s->run(ins, out).is_ok());
    ASSERT_TRUE(s->run(ins, out).is_ok());
    // Two threads: a pool worker grows its per-thread scratch the first time it takes a task of a
    // size; tasks are taken dynamically, so give it a few runs.
    for (int i = 0; i < (threads > 1 ? 20 : 0); ++i) ASSERT_TRUE(s->run(ins, out).is_ok());
    uint64_t before = alloc_count();
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(s->run(ins, out).is_ok());
    EXPECT_EQ(alloc_count() - before, 0u) << threads << " threads: heap allocations in 5 runs";
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[0].dims(), (core::Dims{1, 1, 10, 10}));
    EXPECT_EQ(out[1].dims(), (core::Dims{1, 2, 10, 8}));
    EXPECT_EQ(out[2].dims(), (core::Dims{1, 2, 5, 10}));
  }
}

TEST(RunAllocations, StaticModelOneThread) {
  expect_runs_allocate_nothing(1);
}
TEST(RunAllocations, StaticModelTwoThreads) {
  expect_runs_allocate_nothing(2);
}

TEST(RunAllocations, CallerViewBuffersFromTheFirstRun) {
  auto s = open(static_model());
  ASSERT_TRUE(s);
  Tensor x = input_tensor();
  std::vector<const Tensor*> ins = {&x};
  ASSERT_TRUE(s->prepare(ins).is_ok());
  // The caller's own memory, wrapped as views: kernels write straight into it.
  std::vector<std::vector<float>> storage(4, std::vector<float>(2 * 8 * 5 * 7, 99.0f));
  std::vector<Tensor> out;
  for (auto& buf : storage) out.push_back(Tensor::view(DType::kF32, {2, 8, 5, 7}, buf.data()));
  uint64_t before = alloc_count();
  ASSERT_TRUE(s->run(ins, out).is_ok());
  EXPECT_EQ(alloc_count() - before, 0u);
  for (size_t k = 0; k < out.size(); ++k) EXPECT_EQ(out[k].raw_data(), storage[k].data()) << k;
  check_outputs(x, out);
  EXPECT_NE(storage[0][0], 99.0f);
  // A caller tensor of the wrong shape is replaced, not written out of bounds.
  std::vector<float> small(4, 7.0f);
  out[1] = Tensor::view(DType::kF32, {2, 2}, small.data());
  ASSERT_TRUE(s->run(ins, out).is_ok());
  EXPECT_NE(out[1].raw_data(), small.data());
  EXPECT_EQ(out[1].dims(), (core::Dims{2, 8, 5, 7}));
  EXPECT_EQ(small[0], 7.0f);
  check_outputs(x, out);
}

TEST(RunAllocations, EnabledProfilerThatAllocatesNothingAddsNothing) {
  auto s = open(static_model());
  ASSERT_TRUE(s);
  Tensor x = input_tensor();
  std::vector<const Tensor*> ins = {&x};
  std::vector<Tensor> out;
  ASSERT_TRUE(s->run(ins, out).is_ok());
  int events = 0;
  s->executor().set_profiler([&events](const runtime::Executor::ProfileEvent& e) {
    EXPECT_EQ(e.outputs.size(), 1u);
    EXPECT_LE(e.start, e.end);
    ++events;
  });
  uint64_t before = alloc_count();
  ASSERT_TRUE(s->run(ins, out).is_ok());
  EXPECT_EQ(alloc_count() - before, 0u);
  EXPECT_EQ(events, 9);
  check_outputs(x, out);
}

// The public API binds caller memory both ways: Tensor::view inputs are read where they are and
// view outputs of the right type are written where they are. The API wrappers allocate a few
// small vectors per call, but far fewer bytes than one tensor: no tensor data is copied.
TEST(RunAllocations, PublicApiViewsAreNotCopied) {
  std::string bytes = static_model();
  kestrel::Session s = kestrel::Session::from_memory(bytes.data(), bytes.size());
  Tensor ref_x = input_tensor();
  const size_t n = static_cast<size_t>(ref_x.num_elements());
  std::vector<float> x_buf(ref_x.data<float>(), ref_x.data<float>() + n);
  std::vector<std::vector<float>> out_buf(4, std::vector<float>(n, 99.0f));
  const std::vector<int64_t> shape = {2, 8, 5, 7};
  std::vector<kestrel::Tensor> ins = {kestrel::Tensor::view(kestrel::DType::kF32, shape, x_buf.data())};
  std::vector<kestrel::Tensor> outs;
  for (auto& b : out_buf) outs.push_back(kestrel::Tensor::view(kestrel::DType::kF32, shape, b.data()));
  s.run(ins, outs);  // plans
  uint64_t b0 = alloc_bytes();
  s.run(ins, outs);
  uint64_t copied = alloc_bytes() - b0;
  EXPECT_LT(copied, n * sizeof(float)) << "bytes allocated by one public run";
  std::vector<Tensor> core_out;
  for (size_t k = 0; k < outs.size(); ++k) {
    EXPECT_EQ(outs[k].data(), out_buf[k].data()) << k;
    core_out.push_back(Tensor::view(core::DType::kF32, {2, 8, 5, 7}, out_buf[k].data()));
  }
  check_outputs(ref_x, core_out);
}

// Dispatching work to the pool allocates nothing (FunctionRef, no std::function, no queue).
TEST(RunAllocations, ThreadPoolDispatchAllocatesNothing) {
  core::ThreadPool pool(2);
  std::vector<int64_t> out(1000, 0);
  pool.run(4, [&](int64_t) {});  // the workers are running from here on
  uint64_t before = alloc_count();
  for (int i = 0; i < 200; ++i) {
    pool.parallel_for(1000, 16, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) out[static_cast<size_t>(k)] += k;
    });
    pool.run(3, [&](int64_t t) { out[static_cast<size_t>(t)] += 1; });
  }
  EXPECT_EQ(alloc_count() - before, 0u);
  EXPECT_EQ(out[999], 999 * 200);
  EXPECT_EQ(out[0], 200);
}

// The arena reuses memory along the chain: much less than one buffer per activation.
TEST(RunAllocations, ArenaSmallerThanSumOfActivations) {
  OnnxBuilder b;
  b.input("x", 1, {4, 64});
  std::string prev = "x";
  for (int i = 0; i < 10; ++i) {
    std::string next = "t" + std::to_string(i);
    b.node(i % 2 ? "Relu" : "Neg", {prev}, {next});
    prev = next;
  }
  b.node("Abs", {prev}, {"y"});
  b.output("y");
  auto s = open(b.bytes());
  ASSERT_TRUE(s);
  Tensor x = Tensor::allocate(DType::kF32, {4, 64}).value();
  std::vector<Tensor> out;
  ASSERT_TRUE(s->run(std::vector<const Tensor*>{&x}, out).is_ok());
  const runtime::PlanStats& ps = s->plan_stats();
  EXPECT_EQ(ps.sum_activation_bytes, 10u * 4 * 64 * 4);
  EXPECT_EQ(ps.arena_bytes, 2u * 4 * 64 * 4);  // two live tensors at a time
}

}  // namespace
}  // namespace kestrel
