// The graph IR: Graph owns Nodes and Values; Values know their producer and their uses.
// Nodes are kept in topological order (importer and passes maintain it; topo_sort() restores it).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "ir/attribute.h"
#include "ir/types.h"

namespace kestrel::ir {

class Node;
class Graph;

enum class ValueKind : uint8_t {
  kNodeOutput,   // produced by a node of this graph
  kGraphInput,   // fed by the caller (or, in a subgraph, by the control-flow op)
  kConstant,     // an initializer: data is known
  kOuterScope,   // in a subgraph: a value of an enclosing graph, referenced by name
};

struct Use {
  Node* node;
  int input_index;  // -1 when the use is an implicit (subgraph) input
  bool operator==(const Use& o) const { return node == o.node && input_index == o.input_index; }
};

class Value;
void erase_use(Value* v, Use u);

class Value {
 public:
  const std::string& name() const { return name_; }
  ValueKind kind() const { return kind_; }
  const ValueType& type() const { return type_; }
  void set_type(ValueType t) { type_ = std::move(t); }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }

  Node* producer() const { return producer_; }
  int producer_output() const { return producer_output_; }
  const std::vector<Use>& uses() const { return uses_; }
  bool is_constant() const { return kind_ == ValueKind::kConstant; }
  const core::Tensor& constant() const { return data_; }
  // Turns this value into a constant with the given data (used by importer and constant folding).
  void set_constant(core::Tensor data);
  bool is_graph_output() const { return graph_output_; }
  Graph* graph() const { return graph_; }

 private:
  friend class Graph;
  friend class Node;
  friend void erase_use(Value* v, Use u);
  std::string name_;
  ValueKind kind_ = ValueKind::kNodeOutput;
  ValueType type_;
  Node* producer_ = nullptr;
  int producer_output_ = -1;
  std::vector<Use> uses_;
  core::Tensor data_;
  bool graph_output_ = false;
  Graph* graph_ = nullptr;
};

class Node {
 public:
  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  const std::string& op_type() const { return op_type_; }
  const std::string& domain() const { return domain_; }  // "" for ONNX, "kestrel" for fused ops

  size_t num_inputs() const { return inputs_.size(); }
  // nullptr for an omitted optional input.
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  void set_input(size_t i, Value* v);
  void add_input(Value* v);
  // Drops trailing inputs so there are n.
  void truncate_inputs(size_t n);

  size_t num_outputs() const { return outputs_.size(); }
  Value* output(size_t i) const { return outputs_[i]; }
  const std::vector<Value*>& outputs() const { return outputs_; }

  // Outer-scope values used inside this node's subgraphs (If/Loop/Scan); they count as uses.
  const std::vector<Value*>& implicit_inputs() const { return implicit_inputs_; }
  void add_implicit_input(Value* v);

  const std::map<std::string, Attribute>& attributes() const { return attrs_; }
  bool has_attr(const std::string& name) const { return attrs_.count(name) != 0; }
  const Attribute* attr(const std::string& name) const;
  void set_attr(const std::string& name, Attribute a) { attrs_[name] = std::move(a); }
  void remove_attr(const std::string& name) { attrs_.erase(name); }

  // Typed getters with defaults; a present attribute of the wrong kind is an error.
  core::Result<int64_t> attr_int(const std::string& name, std::optional<int64_t> def = std::nullopt) const;
  core::Result<float> attr_float(const std::string& name, std::optional<float> def = std::nullopt) const;
  core::Result<std::string> attr_string(const std::string& name,
                                        std::optional<std::string> def = std::nullopt) const;
  core::Result<std::vector<int64_t>> attr_ints(const std::string& name,
                                               std::optional<std::vector<int64_t>> def = std::nullopt) const;
  core::Result<std::vector<float>> attr_floats(const std::string& name,
                                               std::optional<std::vector<float>> def = std::nullopt) const;
  // The subgraphs held in attributes, in attribute-name order.
  std::vector<Graph*> subgraphs() const;

  // "Conv 'conv1'" for error messages.
  std::string describe() const;
  Graph* graph() const { return graph_; }

 private:
  friend class Graph;
  std::string name_, op_type_, domain_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::vector<Value*> implicit_inputs_;
  std::map<std::string, Attribute> attrs_;
  Graph* graph_ = nullptr;
};

class Graph {
 public:
  explicit Graph(std::string name = "main", Graph* parent = nullptr) : name_(std::move(name)), parent_(parent) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  Graph* parent() const { return parent_; }
  void set_parent(Graph* p) { parent_ = p; }

  // --- building ---
  Value* add_input(std::string name, ValueType type);
  Value* add_constant(std::string name, core::Tensor data);
  Value* add_outer_scope(std::string name, ValueType type);
  // Creates a node with fresh output values named outputs[i] (empty names get unique ones).
  Node* add_node(std::string op_type, std::vector<Value*> inputs, std::vector<std::string> output_names,
                 std::string name = "", std::string domain = "");
  // Same, inserted right before `before` in node order (for passes).
  Node* insert_node_before(Node* before, std::string op_type, std::vector<Value*> inputs,
                           std::vector<std::string> output_names, std::string name = "", std::string domain = "");
  void add_output(Value* v);
  void set_output(size_t i, Value* v);
  void clear_outputs();
  // Renames a value (the new name must be free); returns false if it is taken.
  bool rename_value(Value* v, const std::string& name);
  // A name no value of this graph has yet, starting from `hint`.
  std::string unique_value_name(const std::string& hint);

  // --- editing ---
  // Points every use of `from` (including graph outputs) at `to`.
  void replace_all_uses(Value* from, Value* to);
  // Removes a node; its outputs must have no uses (they are deleted too unless graph outputs,
  // which then have no producer and must be re-pointed by the caller).
  core::Status remove_node(Node* n);
  // Removes values that are neither used, produced, inputs nor outputs.
  void remove_unused_values();
  // Re-sorts nodes topologically (stable); error if there is a cycle.
  core::Status topo_sort();

  // --- access ---
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  std::vector<Node*> nodes() const;
  size_t num_nodes() const { return nodes_.size(); }
  size_t num_values() const { return values_.size(); }
  std::vector<Value*> values() const;
  // Lookup by name in this graph only.
  Value* find_value(const std::string& name) const;
  // Constant (initializer) values, in creation order.
  std::vector<Value*> constants() const;

  // Graph-wide metadata set by importers (producer, opset imports...).
  std::map<std::string, std::string>& metadata() { return metadata_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  Value* new_value(std::string name, ValueKind kind);
  void erase_value(Value* v);
  Node* make_node(std::string op_type, std::vector<Value*> inputs, std::vector<std::string> output_names,
                  std::string name, std::string domain);

  std::string name_;
  Graph* parent_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::map<std::string, Value*> by_name_;
  std::vector<Value*> inputs_, outputs_;
  std::map<std::string, std::string> metadata_;
  uint64_t name_counter_ = 0;
};

}  // namespace kestrel::ir
