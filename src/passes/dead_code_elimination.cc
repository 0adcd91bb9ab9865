// Dead code elimination: removes nodes none of whose outputs reach a graph output.
#include <unordered_set>

#include "ir/op_schema.h"
#include "passes/pass.h"

namespace kestrel::passes {

namespace {

class DeadCodeElimination final : public Pass {
 public:
  const char* name() const override { return "dead-code-elimination"; }

  core::Result<PassStats> run(ir::Graph& g, const PassContext&) override {
    PassStats stats;
    // Walk backwards: a node is dead when no output is used and none is a graph output.
    auto nodes = g.nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      ir::Node* n = *it;
      const ir::OpSchema* s = ir::OpRegistry::global().find(n->domain(), n->op_type());
      if (s && s->nondeterministic) continue;  // keep random ops: removing them changes the stream
      bool live = false;
      for (ir::Value* v : n->outputs())
        if (!v->uses().empty() || v->is_graph_output()) live = true;
      if (live) continue;
      KESTREL_RETURN_IF_ERROR(g.remove_node(n));
      ++stats.removed;
    }
    for (ir::Node* n : g.nodes())
      for (ir::Graph* sub : n->subgraphs()) {
        KESTREL_ASSIGN_OR_RETURN(PassStats s, run(*sub, PassContext{}));
        stats.removed += s.removed;
      }
    g.remove_unused_values();
    return stats;
  }
};

}  // namespace

std::unique_ptr<Pass> make_dead_code_elimination() { return std::make_unique<DeadCodeElimination>(); }

}  // namespace kestrel::passes
