// Helpers shared by the passes: safe value replacement that keeps graph-output names, attribute
// equality, small predicates on constants.
#pragma once

#include <string>

#include "core/status.h"
#include "ir/graph.h"

namespace kestrel::passes {

// Makes every use of `from` (a node output) use `to` instead, so the node producing `from` can be
// removed. If `from` is a graph output, `to` takes over its name (callers must check
// can_forward() first). Returns false (and changes nothing) when that is impossible.
bool can_forward(const ir::Value* from, const ir::Value* to);
void forward_value(ir::Graph& g, ir::Value* from, ir::Value* to);

// Replaces `node` by a constant for each output (data given), keeping output names.
core::Status replace_with_constants(ir::Graph& g, ir::Node* node, std::vector<core::Tensor> data);

bool attributes_equal(const ir::Attribute& a, const ir::Attribute& b);
bool tensors_equal(const core::Tensor& a, const core::Tensor& b);

// True if v is a constant whose every element equals x (any numeric dtype).
bool is_constant_all(const ir::Value* v, double x);

}  // namespace kestrel::passes
