// Readable text form of a graph (for `kestrel inspect --graph`, tests and debugging).
#pragma once

#include <ostream>
#include <string>

#include "ir/graph.h"

namespace kestrel::ir {

// One line per node: "%y:f32[1,64] = Conv(%x, %w, %b) {kernel_shape=[3,3], ...}".
void print_graph(const Graph& g, std::ostream& os, int indent = 0);
std::string graph_to_string(const Graph& g);

}  // namespace kestrel::ir
