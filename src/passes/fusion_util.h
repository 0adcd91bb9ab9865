// Helpers shared by the fusion passes: matching single-consumer chains, reading scalar constants,
// and replacing a matched chain by one node while keeping graph-output names.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"

namespace kestrel::passes {

// The node producing v if it is the ONNX op `op` (domain ""), else null.
ir::Node* producer_is(const ir::Value* v, const char* op);
// True if v is used exactly once, by `consumer`, and is not a graph output: fusing v's producer
// into `consumer` then cannot change anything else.
bool only_consumer(const ir::Value* v, const ir::Node* consumer);
// The single consumer of v (null if v has several uses, an implicit use, or is a graph output).
ir::Node* single_consumer(const ir::Value* v);
// The single consumer of v if it is the ONNX op `op`.
ir::Node* single_consumer_is(const ir::Value* v, const char* op);
// The input of a two-input node that is not v (null if neither / both are v).
ir::Value* other_input(const ir::Node* n, const ir::Value* v);

// v is a constant of one element (any rank): its value as double.
std::optional<double> scalar_constant(const ir::Value* v);
bool near(double a, double b, double rel = 1e-5);
// A constant float tensor's elements as doubles (empty optional if v is not an f32 constant).
std::optional<std::vector<double>> f32_constant(const ir::Value* v);
// A new f32 constant of the given dims, named after `hint`.
ir::Value* add_f32_constant(ir::Graph& g, const std::string& hint, const std::vector<double>& data, core::Dims dims);
bool is_float_value(const ir::Value* v);
// Static shape of v, or empty optional.
std::optional<core::Dims> static_dims(const ir::Value* v);

// Removes the given nodes (any order); each must end up with no uses and no graph output.
core::Status remove_nodes(ir::Graph& g, std::vector<ir::Node*> nodes);

// Replaces the chain that ends in `last` by one new node (inserted right before `last`, so every
// value the chain used is already computed): every use of last's output 0 moves to the new
// node's output, which takes over a graph-output name; then the nodes in `dead` (`last` included, any
// order) are removed. The new output gets last's output type.
core::Result<ir::Node*> replace_chain(ir::Graph& g, ir::Node* last, const std::vector<ir::Node*>& dead,
                                      const std::string& op, const std::string& domain,
                                      const std::vector<ir::Value*>& inputs,
                                      const std::map<std::string, ir::Attribute>& attrs, const std::string& node_name);

}  // namespace kestrel::passes
