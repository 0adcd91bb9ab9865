// Graph verifier: structural checks run after import and after every pass.
#pragma once

#include "core/status.h"
#include "ir/graph.h"

namespace kestrel::ir {

// Checks that every op is known, every node input is defined before use (topological order),
// values belong to this graph (or name an enclosing graph's value), use lists are consistent,
// graph outputs are defined; recurses into subgraphs. Errors name the node and the value.
core::Status verify_graph(const Graph& g);

}  // namespace kestrel::ir
