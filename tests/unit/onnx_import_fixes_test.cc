// Regression tests for importer bugs found by the ONNX node tests: ops that exist only as import-time
// rewrites (Constant) must not be rejected as unknown, models that use only non-default domains
// (training ops) are unsupported rather than malformed, and values without a type are unknown.
#include <gtest/gtest.h>

#include "common/onnx_builder.h"
#include "frontend/onnx/onnx_importer.h"
#include "frontend/onnx/onnx_tensor.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

using core::Tensor;
using testing::OnnxBuilder;

TEST(OnnxImportFixes, ConstantNodeBecomesAConstantValue) {
  OnnxBuilder b(13);
  b.input("x", 1, {2});
  auto& c = b.node("Constant", {}, {"c"});
  auto* a = c.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_dims(2);
  a->mutable_t()->add_float_data(10);
  a->mutable_t()->add_float_data(20);
  auto& ci = b.node("Constant", {}, {"ci"});
  OnnxBuilder::attr(ci, "value_float", 0.5f);
  b.node("Add", {"x", "c"}, {"s"});
  b.node("Mul", {"s", "ci"}, {"y"});
  b.output("y");
  std::string bytes = b.bytes();
  auto g = frontend::import_onnx(bytes.data(), bytes.size(), {});
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  for (const ir::Node* n : (*g)->nodes()) EXPECT_NE(n->op_type(), "Constant");
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  std::vector<Tensor> out;
  ASSERT_TRUE((*s)->run({{"x", Tensor::from_vector<float>({1, 2})}}, out).is_ok());
  EXPECT_EQ(out[0].data<float>()[0], 5.5f);
  EXPECT_EQ(out[0].data<float>()[1], 11.f);
}

TEST(OnnxImportFixes, UnknownOpIsStillUnsupported) {
  OnnxBuilder b(13);
  b.input("x", 1, {2});
  b.node("NoSuchOp", {"x"}, {"y"}, "mystery");
  b.output("y");
  std::string bytes = b.bytes();
  auto g = frontend::import_onnx(bytes.data(), bytes.size(), {});
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), core::StatusCode::kUnsupported);
  EXPECT_NE(g.status().message().find("mystery"), std::string::npos) << g.status().message();
}

TEST(OnnxImportFixes, OnlyOtherDomains) {
  OnnxBuilder b(13);
  b.model().clear_opset_import();
  auto* os = b.model().add_opset_import();
  os->set_domain("ai.onnx.preview.training");
  os->set_version(1);
  b.input("x", 1, {2});
  b.node("Adagrad", {"x"}, {"y"}).set_domain("ai.onnx.preview.training");
  b.output("y");
  // The optimizer ops' domain alone is a valid model (the ops need no default opset).
  std::string bytes = b.bytes();
  auto g0 = frontend::import_onnx(bytes.data(), bytes.size(), {});
  EXPECT_TRUE(g0.is_ok()) << g0.status().to_string();

  // Another version of it, or a domain Kestrel does not know: unsupported, naming the domain.
  os->set_version(2);
  bytes = b.bytes();
  auto g = frontend::import_onnx(bytes.data(), bytes.size(), {});
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), core::StatusCode::kUnsupported) << g.status().to_string();
  EXPECT_NE(g.status().message().find("ai.onnx.preview.training"), std::string::npos) << g.status().message();
  os->set_domain("com.example.ops");
  os->set_version(1);
  bytes = b.bytes();
  auto g1 = frontend::import_onnx(bytes.data(), bytes.size(), {});
  ASSERT_FALSE(g1.is_ok());
  EXPECT_EQ(g1.status().code(), core::StatusCode::kUnsupported) << g1.status().to_string();
  EXPECT_NE(g1.status().message().find("com.example.ops"), std::string::npos) << g1.status().message();

  // No opset import for the default domain and nothing else: still a malformed model.
  b.model().clear_opset_import();
  auto* kst = b.model().add_opset_import();
  kst->set_domain("kestrel");
  kst->set_version(1);
  bytes = b.bytes();
  auto g2 = frontend::import_onnx(bytes.data(), bytes.size(), {});
  ASSERT_FALSE(g2.is_ok());
  EXPECT_EQ(g2.status().code(), core::StatusCode::kInvalidModel) << g2.status().to_string();
}

TEST(OnnxImportFixes, ValueWithoutTypeIsUnknown) {
  auto t = frontend::type_from_onnx(onnx::TypeProto());
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->dtype, core::DType::kUndefined);
  EXPECT_FALSE(t->shape.rank_known());
  onnx::TypeProto seq;
  seq.mutable_sequence_type();
  EXPECT_EQ(frontend::type_from_onnx(seq).status().code(), core::StatusCode::kUnsupported);

  // Graph input and output declared without types (as Loop/Scan bodies do): the run decides.
  OnnxBuilder b(13);
  b.model().mutable_graph()->add_input()->set_name("x");
  b.node("Neg", {"x"}, {"y"});
  b.model().mutable_graph()->add_output()->set_name("y");
  std::string bytes = b.bytes();
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  std::vector<Tensor> out;
  ASSERT_TRUE((*s)->run({{"x", Tensor::from_vector<float>({1, -2}, {2})}}, out).is_ok());
  EXPECT_EQ(out[0].dims(), (core::Dims{2}));
  EXPECT_EQ(out[0].data<float>()[1], 2.f);
}

}  // namespace
}  // namespace kestrel
