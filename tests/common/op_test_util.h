// Test helper: runs one op through shape inference, its kernel binding and the reference kernel,
// either all at once with known inputs (runtime::evaluate_node, the plan-time folding path) or as
// a one-node graph in a Session (graph inputs unknown at load: the planner's dynamic path).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"
#include "ir/op_schema.h"
#include "runtime/kernel.h"
#include "runtime/session.h"

namespace kestrel::testing {

using Attrs = std::map<std::string, ir::Attribute>;

template <class T>
core::Tensor make(const core::Dims& dims, const std::vector<T>& v) {
  auto r = core::Tensor::allocate(core::dtype_of<T>, dims);
  EXPECT_TRUE(r.is_ok());
  if (!r.is_ok()) return core::Tensor();
  core::Tensor t = std::move(r).value();
  EXPECT_EQ(static_cast<size_t>(t.num_elements()), v.size())
      << "test data does not fill " << core::dims_to_string(dims);
  for (size_t i = 0; i < v.size() && i < static_cast<size_t>(t.num_elements()); ++i) t.data<T>()[i] = v[i];
  return t;
}

// 0, 1, 2, ... in dims.
template <class T>
core::Tensor iota(const core::Dims& dims) {
  std::vector<T> v(static_cast<size_t>(core::num_elements(dims)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(i);
  return make<T>(dims, v);
}

inline core::Tensor i64s(const std::vector<int64_t>& v) {
  return make<int64_t>({static_cast<int64_t>(v.size())}, v);
}
inline core::Tensor i64_scalar(int64_t v) {
  return make<int64_t>({}, {v});
}

// One-node graph; inputs that are undefined tensors are omitted optional inputs.
struct OneNode {
  std::unique_ptr<ir::Graph> graph = std::make_unique<ir::Graph>("test");
  ir::Node* node = nullptr;
};

// `as_input[i]`: input i is a graph input (value unknown at load) rather than a constant. With
// `unknown_dims`, graph inputs are declared with unknown dims of the right rank.
inline OneNode one_node(const std::string& op, const std::vector<core::Tensor>& inputs, const Attrs& attrs,
                        int num_outputs, const std::vector<bool>& as_input = {}, bool unknown_dims = false) {
  OneNode r;
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    if (!inputs[i].defined()) {
      ins.push_back(nullptr);
    } else if (i < as_input.size() && as_input[i]) {
      ir::Shape s =
          unknown_dims ? ir::Shape(std::vector<ir::Dim>(inputs[i].dims().size())) : ir::Shape(inputs[i].dims());
      ins.push_back(r.graph->add_input(name, ir::ValueType{inputs[i].dtype(), s}));
    } else {
      ins.push_back(r.graph->add_constant(name, inputs[i]));
    }
  }
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i) outs.push_back("out" + std::to_string(i));
  r.node = r.graph->add_node(op, ins, outs, "node_under_test");
  for (const auto& [k, a] : attrs) r.node->set_attr(k, a);
  for (ir::Value* v : r.node->outputs()) r.graph->add_output(v);
  return r;
}

// Everything known: inference with values, then the kernel (what plan-time folding does).
inline core::Result<std::vector<core::Tensor>> eval_op(const std::string& op, const std::vector<core::Tensor>& inputs,
                                                       const Attrs& attrs = {}, int num_outputs = 1) {
  OneNode g = one_node(op, inputs, attrs, num_outputs);
  std::vector<const core::Tensor*> ptrs;
  for (const auto& t : inputs) ptrs.push_back(t.defined() ? &t : nullptr);
  return runtime::evaluate_node(*g.node, ptrs);
}

// Through a Session: inputs flagged in as_input are fed at run time.
inline core::Result<std::vector<core::Tensor>> run_op(const std::string& op, const std::vector<core::Tensor>& inputs,
                                                      const std::vector<bool>& as_input, const Attrs& attrs = {},
                                                      int num_outputs = 1, bool unknown_dims = false) {
  OneNode g = one_node(op, inputs, attrs, num_outputs, as_input, unknown_dims);
  runtime::LoadedModel m;
  m.graph = std::move(g.graph);
  KESTREL_ASSIGN_OR_RETURN(auto session, runtime::Session::from_model(std::move(m)));
  std::vector<const core::Tensor*> feed;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && i < as_input.size() && as_input[i]) feed.push_back(&inputs[i]);
  std::vector<core::Tensor> outs;
  KESTREL_RETURN_IF_ERROR(session->run(feed, outs));
  return outs;
}

// Output types from inference alone: `values[i]` defined = input i is a constant with that data;
// otherwise input i is a graph input of type types[i] (absent when types[i].dtype is undefined).
inline core::Result<std::vector<ir::ValueType>> infer_op(const std::string& op, const std::vector<ir::ValueType>& types,
                                                         const std::vector<core::Tensor>& values,
                                                         const Attrs& attrs = {}, int num_outputs = 1) {
  ir::Graph g("test");
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < types.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    if (i < values.size() && values[i].defined())
      ins.push_back(g.add_constant(name, values[i]));
    else if (types[i].dtype == core::DType::kUndefined)
      ins.push_back(nullptr);
    else
      ins.push_back(g.add_input(name, types[i]));
  }
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i) outs.push_back("out" + std::to_string(i));
  ir::Node* n = g.add_node(op, ins, outs, "node_under_test");
  for (const auto& [k, a] : attrs) n->set_attr(k, a);
  KESTREL_RETURN_IF_ERROR(ir::infer_graph(g));
  std::vector<ir::ValueType> r;
  for (ir::Value* v : n->outputs()) r.push_back(v->type());
  return r;
}

// Same dtype, dims and elements (numbers compared exactly as doubles; strings as strings).
inline ::testing::AssertionResult tensors_equal(const core::Tensor& got, const core::Tensor& want) {
  if (got.dtype() != want.dtype() || got.dims() != want.dims())
    return ::testing::AssertionFailure() << "got " << got.type_string() << ", want " << want.type_string();
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    if (want.dtype() == core::DType::kString) {
      if (got.data<std::string>()[i] != want.data<std::string>()[i])
        return ::testing::AssertionFailure() << "element " << i << ": got '" << got.data<std::string>()[i]
                                             << "', want '" << want.data<std::string>()[i] << "'";
    } else if (!(got.element_as_double(i) == want.element_as_double(i))) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << got.element_as_double(i) << ", want "
                                           << want.element_as_double(i) << " (" << want.type_string() << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// Success if `st` is an error whose message contains `needle`.
inline ::testing::AssertionResult fails_with(const core::Status& st, const std::string& needle) {
  if (st.is_ok()) return ::testing::AssertionFailure() << "expected an error containing '" << needle << "'";
  if (st.message().find(needle) == std::string::npos)
    return ::testing::AssertionFailure() << "error '" << st.to_string() << "' does not contain '" << needle << "'";
  return ::testing::AssertionSuccess();
}

// Row-major multi-index of flat index i in dims, and back (for naive loops in tests).
inline core::Dims unravel(int64_t i, const core::Dims& dims) {
  core::Dims idx(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = i % dims[d];
    i /= dims[d];
  }
  return idx;
}
inline int64_t ravel(const core::Dims& idx, const core::Dims& dims) {
  int64_t o = 0;
  for (size_t d = 0; d < dims.size(); ++d) o = o * dims[d] + idx[d];
  return o;
}

// Convenience: the single output of eval_op, or a failure.
#define KESTREL_EVAL1(out, ...)                         \
  core::Tensor out;                                     \
  {                                                     \
    auto _r = ::kestrel::testing::eval_op(__VA_ARGS__); \
    ASSERT_TRUE(_r.is_ok()) << _r.status().to_string(); \
    ASSERT_GE(_r->size(), 1u);                          \
    out = (*_r)[0];                                     \
  }

}  // namespace kestrel::testing
