// Common subexpression elimination: merges identical constants and identical nodes (same op,
// same inputs, same attributes), keeping the first.
#include <map>
#include <unordered_map>

#include "ir/op_schema.h"
#include "passes/pass.h"
#include "passes/rewrite_util.h"

namespace kestrel::passes {

namespace {

constexpr size_t kMaxDedupBytes = 1 << 20;  // constants compared byte for byte up to this size

class CommonSubexpressionElimination final : public Pass {
 public:
  const char* name() const override { return "common-subexpression-elimination"; }

  core::Result<PassStats> run(ir::Graph& g, const PassContext&) override {
    PassStats stats;
    // Constants: bucket by (dtype, dims, bytes), compare contents.
    std::map<std::pair<core::DType, core::Dims>, std::vector<ir::Value*>> buckets;
    for (ir::Value* c : g.constants()) {
      if (c->constant().nbytes() > kMaxDedupBytes || c->is_graph_output()) continue;
      auto& bucket = buckets[{c->dtype(), c->constant().dims()}];
      ir::Value* same = nullptr;
      for (ir::Value* k : bucket)
        if (tensors_equal(k->constant(), c->constant())) same = k;
      if (same) g.replace_all_uses(c, same);
      else bucket.push_back(c);
    }
    // Nodes: in topological order, so inputs are already canonical.
    std::unordered_map<std::string, std::vector<ir::Node*>> seen;
    for (ir::Node* n : g.nodes()) {
      const ir::OpSchema* s = ir::OpRegistry::global().find(n->domain(), n->op_type());
      if (!s || s->nondeterministic || !n->subgraphs().empty()) continue;
      std::string key = n->domain() + "." + n->op_type() + "(";
      for (ir::Value* v : n->inputs()) key += (v ? v->name() : std::string("_")) + ",";
      key += std::to_string(n->num_outputs());
      ir::Node* twin = nullptr;
      for (ir::Node* m : seen[key]) {
        if (m->attributes().size() != n->attributes().size()) continue;
        bool same = true;
        for (const auto& [k, a] : n->attributes()) {
          const ir::Attribute* b = m->attr(k);
          if (!b || !attributes_equal(a, *b)) {
            same = false;
            break;
          }
        }
        if (same) twin = m;
      }
      if (!twin) {
        seen[key].push_back(n);
        continue;
      }
      bool ok = true;
      for (size_t i = 0; i < n->num_outputs(); ++i)
        if (!can_forward(n->output(i), twin->output(i))) ok = false;
      if (!ok) continue;
      for (size_t i = 0; i < n->num_outputs(); ++i) forward_value(g, n->output(i), twin->output(i));
      KESTREL_RETURN_IF_ERROR(g.remove_node(n));
      ++stats.removed;
    }
    g.remove_unused_values();
    return stats;
  }
};

}  // namespace

std::unique_ptr<Pass> make_common_subexpression_elimination() {
  return std::make_unique<CommonSubexpressionElimination>();
}

}  // namespace kestrel::passes
