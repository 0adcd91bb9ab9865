// Test helper: builds small ONNX models in memory (for importer, kernel and bad-input tests).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace kestrel::testing {

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int64_t opset = 13) {
    model_.set_ir_version(8);
    model_.set_producer_name("kestrel-tests");
    auto* os = model_.add_opset_import();
    os->set_domain("");
    os->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  // elem_type: ONNX TensorProto data type (1 = float, 7 = int64, 9 = bool ...). A dim < 0 is
  // unknown; dim_params name symbolic dims (empty string: not symbolic).
  OnnxBuilder& input(const std::string& name, int elem_type, const std::vector<int64_t>& dims,
                     const std::vector<std::string>& dim_params = {}) {
    fill_value_info(model_.mutable_graph()->add_input(), name, elem_type, dims, dim_params);
    return *this;
  }
  OnnxBuilder& output(const std::string& name, int elem_type = 1, const std::vector<int64_t>& dims = {},
                      bool has_shape = false) {
    auto* vi = model_.mutable_graph()->add_output();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    if (has_shape)
      for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
    return *this;
  }
  OnnxBuilder& initializer_f32(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float x : v) t->add_float_data(x);
    return *this;
  }
  OnnxBuilder& initializer_i64(const std::string& name, const std::vector<int64_t>& dims,
                               const std::vector<int64_t>& v) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t x : v) t->add_int64_data(x);
    return *this;
  }
  onnx::TensorProto* raw_initializer(const std::string& name) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    return t;
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(model_.graph().node_size()) : name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }
  static void attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, float v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::vector<float>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOATS);
    for (float x : v) a->add_floats(x);
  }

  static void attr(onnx::NodeProto& n, const std::string& name, const onnx::GraphProto& g) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = g;
  }
  // The graph under construction (use another builder's graph() as a subgraph body).
  onnx::GraphProto& graph() { return *model_.mutable_graph(); }

  onnx::ModelProto& model() { return model_; }
  std::string bytes() const { return model_.SerializeAsString(); }

 private:
  static void fill_value_info(onnx::ValueInfoProto* vi, const std::string& name, int elem_type,
                              const std::vector<int64_t>& dims, const std::vector<std::string>& dim_params) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    auto* shape = tt->mutable_shape();
    for (size_t i = 0; i < dims.size(); ++i) {
      auto* d = shape->add_dim();
      if (i < dim_params.size() && !dim_params[i].empty()) d->set_dim_param(dim_params[i]);
      else if (dims[i] >= 0) d->set_dim_value(dims[i]);
    }
  }
  onnx::ModelProto model_;
};

}  // namespace kestrel::testing
