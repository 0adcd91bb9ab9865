// Graph, Node and Value: construction, use lists and edits.
#include "ir/graph.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/str_util.h"

namespace kestrel::ir {

using core::Result;
using core::Status;
using core::str_cat;

// ---------------------------------------------------------------- Value

void Value::set_constant(core::Tensor data) {
  kind_ = ValueKind::kConstant;
  type_.dtype = data.dtype();
  type_.shape = Shape(data.dims());
  data_ = std::move(data);
  producer_ = nullptr;
  producer_output_ = -1;
}

// ---------------------------------------------------------------- Node

void erase_use(Value* v, Use u) {
  if (!v) return;
  auto& uses = v->uses_;
  auto it = std::find(uses.begin(), uses.end(), u);
  if (it != uses.end()) uses.erase(it);
}

void Node::set_input(size_t i, Value* v) {
  if (i >= inputs_.size()) inputs_.resize(i + 1, nullptr);
  if (inputs_[i]) {
    auto& uses = inputs_[i]->uses_;
    auto it = std::find(uses.begin(), uses.end(), Use{this, static_cast<int>(i)});
    if (it != uses.end()) uses.erase(it);
  }
  inputs_[i] = v;
  if (v) v->uses_.push_back({this, static_cast<int>(i)});
}

void Node::add_input(Value* v) { set_input(inputs_.size(), v); }

void Node::truncate_inputs(size_t n) {
  while (inputs_.size() > n) {
    set_input(inputs_.size() - 1, nullptr);
    inputs_.pop_back();
  }
}

void Node::add_implicit_input(Value* v) {
  if (std::find(implicit_inputs_.begin(), implicit_inputs_.end(), v) != implicit_inputs_.end()) return;
  implicit_inputs_.push_back(v);
  v->uses_.push_back({this, -1});
}

const Attribute* Node::attr(const std::string& name) const {
  auto it = attrs_.find(name);
  return it == attrs_.end() ? nullptr : &it->second;
}

template <class T>
static Result<T> typed_attr(const Node& n, const std::string& name, const std::optional<T>& def,
                            const char* kind_name) {
  const Attribute* a = n.attr(name);
  if (!a) {
    if (def) return *def;
    return core::invalid_model(str_cat(n.describe(), ": missing required attribute '", name, "'"));
  }
  if (!a->is<T>())
    return core::invalid_model(str_cat(n.describe(), ": attribute '", name, "' should be ", kind_name, ", is ",
                                       attr_kind_name(a->kind())));
  return a->get<T>();
}

Result<int64_t> Node::attr_int(const std::string& name, std::optional<int64_t> def) const {
  return typed_attr<int64_t>(*this, name, def, "int");
}
Result<float> Node::attr_float(const std::string& name, std::optional<float> def) const {
  return typed_attr<float>(*this, name, def, "float");
}
Result<std::string> Node::attr_string(const std::string& name, std::optional<std::string> def) const {
  return typed_attr<std::string>(*this, name, def, "string");
}
Result<std::vector<int64_t>> Node::attr_ints(const std::string& name,
                                             std::optional<std::vector<int64_t>> def) const {
  return typed_attr<std::vector<int64_t>>(*this, name, def, "ints");
}
Result<std::vector<float>> Node::attr_floats(const std::string& name, std::optional<std::vector<float>> def) const {
  return typed_attr<std::vector<float>>(*this, name, def, "floats");
}

std::vector<Graph*> Node::subgraphs() const {
  std::vector<Graph*> out;
  for (const auto& [name, a] : attrs_) {
    if (a.is<Attribute::GraphPtr>()) out.push_back(a.get<Attribute::GraphPtr>().get());
    if (a.is<std::vector<Attribute::GraphPtr>>())
      for (const auto& g : a.get<std::vector<Attribute::GraphPtr>>()) out.push_back(g.get());
  }
  return out;
}

std::string Node::describe() const {
  std::string d = domain_.empty() ? op_type_ : domain_ + "." + op_type_;
  return str_cat("node '", name_, "' (", d, ")");
}

// ---------------------------------------------------------------- Graph

Value* Graph::new_value(std::string name, ValueKind kind) {
  if (name.empty() || by_name_.count(name)) name = unique_value_name(name.empty() ? "_v" : name);
  auto v = std::make_unique<Value>();
  v->name_ = name;
  v->kind_ = kind;
  v->graph_ = this;
  Value* p = v.get();
  by_name_[name] = p;
  values_.push_back(std::move(v));
  return p;
}

std::string Graph::unique_value_name(const std::string& hint) {
  if (!hint.empty() && !by_name_.count(hint)) return hint;
  for (;;) {
    std::string n = str_cat(hint, "_", name_counter_++);
    if (!by_name_.count(n)) return n;
  }
}

bool Graph::rename_value(Value* v, const std::string& name) {
  if (name == v->name_) return true;
  if (name.empty() || by_name_.count(name)) return false;
  by_name_.erase(v->name_);
  v->name_ = name;
  by_name_[name] = v;
  return true;
}

Value* Graph::add_input(std::string name, ValueType type) {
  Value* v = new_value(std::move(name), ValueKind::kGraphInput);
  v->type_ = std::move(type);
  inputs_.push_back(v);
  return v;
}

Value* Graph::add_constant(std::string name, core::Tensor data) {
  Value* v = new_value(std::move(name), ValueKind::kConstant);
  v->set_constant(std::move(data));
  return v;
}

Value* Graph::add_outer_scope(std::string name, ValueType type) {
  Value* v = new_value(std::move(name), ValueKind::kOuterScope);
  v->type_ = std::move(type);
  return v;
}

Node* Graph::make_node(std::string op_type, std::vector<Value*> inputs, std::vector<std::string> output_names,
                       std::string name, std::string domain) {
  auto n = std::make_unique<Node>();
  n->op_type_ = std::move(op_type);
  n->domain_ = std::move(domain);
  n->graph_ = this;
  for (Value* v : inputs) n->add_input(v);
  for (size_t i = 0; i < output_names.size(); ++i) {
    Value* v = new_value(output_names[i], ValueKind::kNodeOutput);
    v->producer_ = n.get();
    v->producer_output_ = static_cast<int>(i);
    n->outputs_.push_back(v);
  }
  n->name_ = name.empty() ? str_cat(n->op_type_, "_", name_counter_++) : std::move(name);
  Node* p = n.get();
  nodes_.push_back(std::move(n));
  return p;
}

Node* Graph::add_node(std::string op_type, std::vector<Value*> inputs, std::vector<std::string> output_names,
                      std::string name, std::string domain) {
  return make_node(std::move(op_type), std::move(inputs), std::move(output_names), std::move(name),
                   std::move(domain));
}

Node* Graph::insert_node_before(Node* before, std::string op_type, std::vector<Value*> inputs,
                                std::vector<std::string> output_names, std::string name, std::string domain) {
  Node* n = make_node(std::move(op_type), std::move(inputs), std::move(output_names), std::move(name),
                      std::move(domain));
  auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& p) { return p.get() == before; });
  if (it != nodes_.end()) std::rotate(it, nodes_.end() - 1, nodes_.end());
  return n;
}

void Graph::add_output(Value* v) {
  outputs_.push_back(v);
  v->graph_output_ = true;
}

void Graph::set_output(size_t i, Value* v) {
  Value* old = outputs_[i];
  outputs_[i] = v;
  old->graph_output_ = std::find(outputs_.begin(), outputs_.end(), old) != outputs_.end();
  v->graph_output_ = true;
}

void Graph::clear_outputs() {
  for (Value* v : outputs_) v->graph_output_ = false;
  outputs_.clear();
}

void Graph::replace_all_uses(Value* from, Value* to) {
  if (from == to) return;
  std::vector<Use> uses = from->uses_;
  for (const Use& u : uses) {
    if (u.input_index >= 0) {
      u.node->set_input(static_cast<size_t>(u.input_index), to);
    } else {
      erase_use(from, u);
      auto& imp = u.node->implicit_inputs_;
      std::replace(imp.begin(), imp.end(), from, to);
      to->uses_.push_back(u);
    }
  }
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (outputs_[i] == from) set_output(i, to);
}

Status Graph::remove_node(Node* n) {
  for (Value* out : n->outputs_)
    if (!out->uses_.empty())
      return core::internal_error(str_cat("remove_node: output '", out->name(), "' of ", n->describe(), " still used"));
  for (size_t i = 0; i < n->inputs_.size(); ++i) n->set_input(i, nullptr);
  for (Value* v : n->implicit_inputs_) erase_use(v, {n, -1});
  n->implicit_inputs_.clear();
  std::vector<Value*> outs = n->outputs_;
  for (Value* out : outs) {
    out->producer_ = nullptr;
    out->producer_output_ = -1;
  }
  auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& p) { return p.get() == n; });
  if (it != nodes_.end()) nodes_.erase(it);
  for (Value* out : outs)
    if (!out->graph_output_) erase_value(out);
  return Status::ok();
}

void Graph::erase_value(Value* v) {
  by_name_.erase(v->name_);
  auto it = std::find_if(values_.begin(), values_.end(), [&](const auto& p) { return p.get() == v; });
  if (it != values_.end()) values_.erase(it);
}

void Graph::remove_unused_values() {
  std::unordered_set<Value*> keep(inputs_.begin(), inputs_.end());
  keep.insert(outputs_.begin(), outputs_.end());
  std::vector<std::unique_ptr<Value>> kept;
  kept.reserve(values_.size());
  for (auto& v : values_) {
    bool alive = keep.count(v.get()) || !v->uses_.empty() || v->producer_ != nullptr;
    if (alive) {
      kept.push_back(std::move(v));
    } else {
      by_name_.erase(v->name_);
    }
  }
  values_ = std::move(kept);
}

Status Graph::topo_sort() {
  std::unordered_map<const Node*, size_t> pending;
  std::vector<Node*> order;
  order.reserve(nodes_.size());
  std::vector<Node*> ready;
  auto deps = [&](const Node* n) {
    size_t c = 0;
    for (Value* v : n->inputs_)
      if (v && v->producer_) ++c;
    for (Value* v : n->implicit_inputs_)
      if (v->producer_) ++c;
    return c;
  };
  for (auto& n : nodes_) {
    size_t c = deps(n.get());
    pending[n.get()] = c;
  }
  // Stable: repeatedly take the earliest node in the current order whose deps are done.
  std::vector<Node*> remaining;
  for (auto& n : nodes_) remaining.push_back(n.get());
  std::unordered_set<const Node*> done;
  while (!remaining.empty()) {
    bool progressed = false;
    std::vector<Node*> next;
    for (Node* n : remaining) {
      if (pending[n] == 0) {
        order.push_back(n);
        done.insert(n);
        progressed = true;
        for (Value* out : n->outputs_)
          for (const Use& u : out->uses_)
            if (pending.count(u.node) && pending[u.node] > 0) --pending[u.node];
      } else {
        next.push_back(n);
      }
    }
    if (!progressed)
      return core::invalid_model(str_cat("graph '", name_, "' has a cycle through ", next.front()->describe()));
    remaining = std::move(next);
  }
  std::unordered_map<const Node*, std::unique_ptr<Node>> owned;
  for (auto& n : nodes_) owned[n.get()] = std::move(n);
  nodes_.clear();
  for (Node* n : order) nodes_.push_back(std::move(owned[n]));
  return Status::ok();
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

std::vector<Value*> Graph::values() const {
  std::vector<Value*> out;
  out.reserve(values_.size());
  for (const auto& v : values_) out.push_back(v.get());
  return out;
}

Value* Graph::find_value(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<Value*> Graph::constants() const {
  std::vector<Value*> out;
  for (const auto& v : values_)
    if (v->kind_ == ValueKind::kConstant) out.push_back(v.get());
  return out;
}

}  // namespace kestrel::ir
