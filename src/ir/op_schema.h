// Op schemas: arity, flags and the shape/type inference function of every op, looked up by name.
// The IR holds ops in one canonical form (the newest ONNX opset's inputs and attributes); the
// importer rewrites older opsets into it, so there is exactly one schema per op.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/str_util.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "ir/types.h"

namespace kestrel::ir {

class InferContext;
using InferFn = std::function<core::Status(InferContext&)>;

constexpr const char* kKestrelDomain = "kestrel";
// ONNX's optimizer ops (Adagrad, Adam, Momentum), opset 1 of their own domain.
constexpr const char* kOnnxTrainingDomain = "ai.onnx.preview.training";

struct OpSchema {
  std::string domain;  // "" = ONNX, "kestrel" = Kestrel's fused ops, kOnnxTrainingDomain
  std::string name;
  int min_inputs = 0;
  int max_inputs = 0;  // -1: variadic
  int min_outputs = 1;
  int max_outputs = 1;  // -1: variadic
  InferFn infer;
  uint64_t value_inputs = 0;       // bit i: inference needs input i's data (Reshape's shape, Slice's starts, ...)
  uint64_t shape_only_inputs = 0;  // bit i: the op reads only the shape/dtype of input i (Shape, Size)
  bool data_dependent_shape = false;  // output shape depends on input data (NonZero, Unique, ...)
  bool nondeterministic = false;      // random ops: never constant-folded
  std::string doc;                    // one line: what the op computes

  bool needs_value(size_t i) const { return i < 64 && ((value_inputs >> i) & 1); }
  bool reads_only_shape(size_t i) const { return i < 64 && ((shape_only_inputs >> i) & 1); }
};

class OpRegistry {
 public:
  // The registry with every built-in op (registered on first use).
  static const OpRegistry& global();

  void add(OpSchema s);
  const OpSchema* find(std::string_view domain, std::string_view name) const;
  std::vector<const OpSchema*> all() const;

 private:
  std::map<std::pair<std::string, std::string>, OpSchema, std::less<>> schemas_;
};

// Computes a node's outputs from known input values; used to propagate small shape-like values
// (Shape -> Gather -> Concat -> Reshape) through inference. Provided by the runtime or passes.
using NodeEvaluator =
    std::function<core::Result<std::vector<core::Tensor>>(const Node&, std::span<const core::Tensor* const>)>;

class InferContext {
 public:
  InferContext(const Node& node, std::vector<const ValueType*> input_types,
               std::vector<const core::Tensor*> input_values);

  const Node& node() const { return node_; }
  size_t num_inputs() const { return types_.size(); }
  bool has_input(size_t i) const { return i < types_.size() && types_[i] != nullptr; }
  const ValueType& input_type(size_t i) const { return *types_[i]; }
  DType input_dtype(size_t i) const { return types_[i]->dtype; }
  const Shape& input_shape(size_t i) const { return types_[i]->shape; }
  // Input data when known (constant or computed), else nullptr.
  const core::Tensor* input_value(size_t i) const { return i < values_.size() ? values_[i] : nullptr; }

  size_t num_outputs() const { return outputs_.size(); }
  void set_output(size_t i, ValueType t) { outputs_[i] = std::move(t); }
  void set_output(size_t i, DType d, Shape s) { outputs_[i] = ValueType{d, std::move(s)}; }
  std::vector<ValueType>& outputs() { return outputs_; }

  // Attribute shortcuts (errors name the node).
  core::Result<int64_t> attr_int(const std::string& n, std::optional<int64_t> d = std::nullopt) const {
    return node_.attr_int(n, d);
  }
  core::Result<float> attr_float(const std::string& n, std::optional<float> d = std::nullopt) const {
    return node_.attr_float(n, d);
  }
  core::Result<std::string> attr_string(const std::string& n, std::optional<std::string> d = std::nullopt) const {
    return node_.attr_string(n, d);
  }
  core::Result<std::vector<int64_t>> attr_ints(const std::string& n,
                                               std::optional<std::vector<int64_t>> d = std::nullopt) const {
    return node_.attr_ints(n, d);
  }

  // An error that names the node: "node 'conv1' (Conv): <msg>".
  template <class... Args>
  core::Status fail(const Args&... args) const {
    return core::invalid_model(node_.describe() + ": " + core::str_cat(args...));
  }

  // Infers a subgraph's output types given its input types (for If/Loop/Scan). Set by the caller.
  std::function<core::Result<std::vector<ValueType>>(const Graph&, const std::vector<ValueType>&)> infer_subgraph;

 private:
  const Node& node_;
  std::vector<const ValueType*> types_;
  std::vector<const core::Tensor*> values_;
  std::vector<ValueType> outputs_;
};

// Checks arity against the schema, then runs its inference. The result is in ctx.outputs().
core::Status run_inference(const OpSchema& schema, InferContext& ctx);

// Infers every value type in the graph (and its subgraphs) in node order, keeping declared
// information where inference knows less. With an evaluator, small values computable from
// constants and shapes are computed so that shapes depending on them become known.
core::Status infer_graph(Graph& g, const NodeEvaluator* evaluator = nullptr);

// Registration of the op families; each lives in src/ir/ops/<family>.cc.
void register_all_ops(OpRegistry& r);

}  // namespace kestrel::ir
