// The int8 path allocates nothing per run: a QDQ model (u8 activations, s8 per-channel weights)
// lowered at load to kestrel.QConv (gemm and depthwise paths), QAdd, QMaxPool, QConcat,
// QGlobalAveragePool, QLookup and the fast Q / DQ loops, run after the first run with the
// outputs bound to caller buffers, must count zero heap allocations.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/onnx_builder.h"
#include "core/tensor.h"
#include "runtime/session.h"
#include "testing/alloc_counter.h"

namespace kestrel {
namespace {

using core::DType;
using core::Tensor;
using kestrel::testing::alloc_count;
using kestrel::testing::OnnxBuilder;

struct QdqBuilder {
  OnnxBuilder b{13};
  int n = 0;
  std::string scalar_f(float v) {
    std::string name = "sf" + std::to_string(n++);
    b.initializer_f32(name, {}, {v});
    return name;
  }
  std::string scalar_u8(uint8_t v) {
    std::string name = "zu" + std::to_string(n++);
    auto* t = b.raw_initializer(name);
    t->set_data_type(onnx::TensorProto::UINT8);
    t->add_int32_data(v);
    return name;
  }
  std::string qdq(const std::string& x, float s, uint8_t z) {
    std::string sn = scalar_f(s), zn = scalar_u8(z), q = x + "_q", d = x + "_dq";
    b.node("QuantizeLinear", {x, sn, zn}, {q});
    b.node("DequantizeLinear", {q, sn, zn}, {d});
    return d;
  }
  std::string weight(const std::vector<int64_t>& dims) {
    std::string name = "w" + std::to_string(n++);
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    auto* t = b.raw_initializer(name);
    t->set_data_type(onnx::TensorProto::INT8);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t i = 0; i < count; ++i) t->add_int32_data(static_cast<int32_t>((i * 37) % 255) - 127);
    std::vector<float> s(static_cast<size_t>(dims[0]), 0.003f);
    b.initializer_f32(name + "_s", {dims[0]}, s);
    auto& node = b.node("DequantizeLinear", {name, name + "_s"}, {name + "_dq"});
    OnnxBuilder::attr(node, "axis", int64_t{0});
    return name + "_dq";
  }
};

std::string int8_model() {
  QdqBuilder q;
  q.b.input("x", 1, {1, 8, 12, 12});
  std::string x = q.qdq("x", 0.02f, 128);
  auto& c1 = q.b.node("Conv", {x, q.weight({16, 8, 3, 3})}, {"c1"});
  OnnxBuilder::attr(c1, "pads", std::vector<int64_t>{1, 1, 1, 1});
  q.b.node("Relu", {"c1"}, {"r1"});
  std::string r1 = q.qdq("r1", 0.05f, 0);
  auto& c2 = q.b.node("Conv", {r1, q.weight({16, 1, 3, 3})}, {"c2"});
  OnnxBuilder::attr(c2, "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxBuilder::attr(c2, "group", int64_t{16});
  std::string d2 = q.qdq("c2", 0.05f, 128);
  q.b.node("Add", {d2, r1}, {"a"});
  std::string a = q.qdq("a", 0.08f, 100);
  auto& mp = q.b.node("MaxPool", {a}, {"m"});
  OnnxBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(mp, "strides", std::vector<int64_t>{2, 2});
  std::string m = q.qdq("m", 0.08f, 100);
  q.b.node("Sigmoid", {m}, {"sg"});
  std::string sg = q.qdq("sg", 1.f / 255, 0);
  auto& cat = q.b.node("Concat", {m, sg}, {"cat"});
  OnnxBuilder::attr(cat, "axis", int64_t{1});
  std::string c = q.qdq("cat", 0.1f, 90);
  q.b.node("GlobalAveragePool", {c}, {"g"});
  std::string g = q.qdq("g", 0.05f, 50);
  q.b.node("Identity", {g}, {"y"});
  q.b.output("y");
  return q.b.bytes();
}

TEST(Int8RunAllocations, LoweredQdqModelAllocatesNothing) {
  const std::string bytes = int8_model();
  for (int threads : {1, 2}) {
    runtime::SessionOptions so;
    so.num_threads = threads;
    auto s = runtime::Session::open_memory(bytes.data(), bytes.size(), so);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    Tensor x = Tensor::allocate(DType::kF32, {1, 8, 12, 12}).value();
    for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = static_cast<float>(i % 29) * 0.1f - 1.4f;
    std::vector<const Tensor*> ins = {&x};
    std::vector<Tensor> out;
    ASSERT_TRUE((*s)->run(ins, out).is_ok());
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].num_elements(), 16 * 2);
    const uint64_t before = alloc_count();
    for (int i = 0; i < 5; ++i) ASSERT_TRUE((*s)->run(ins, out).is_ok());
    EXPECT_EQ(alloc_count() - before, 0u)
        << "heap allocations in 5 runs of the lowered int8 model, threads " << threads;
  }
}

}  // namespace
}  // namespace kestrel
