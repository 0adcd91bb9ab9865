// Graphviz DOT form of a graph (for `kestrel inspect --graph --dot/--svg`): one box per node
// (op type, name, the attributes that matter to a reader, weights as a count), data edges
// labelled with their types, graph inputs and outputs as ellipses. Subgraphs are not drawn.
#pragma once

#include <string>

#include "ir/graph.h"

namespace kestrel::ir {

std::string graph_to_dot(const Graph& g);

// s quoted for a DOT string ("..." with backslashes, quotes and newlines escaped).
std::string dot_quote(const std::string& s);

}  // namespace kestrel::ir
