// Canonicalization of ONNX ops across opsets: rewrites an imported node in an older opset's form
// into the one form the IR schemas describe (attributes that later opsets turned into inputs,
// renamed ops, changed defaults). One table entry per op that changed.
#pragma once

#include "core/status.h"
#include "ir/graph.h"

namespace kestrel::frontend {

// Rewrites `n` (just imported, in `opset` of the default ONNX domain) in place. May add constant
// values or helper nodes before `n`; may replace `n` by other nodes (then returns them in order).
core::Status upgrade_node(ir::Graph& g, ir::Node*& n, int64_t opset);

}  // namespace kestrel::frontend
