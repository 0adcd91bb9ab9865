// Transpose(Transpose(x, p1), p2) -> Transpose(x, p) with p[i] = p1[p2[i]], or x itself when the
// composition is the identity. The inner Transpose goes too when nothing else uses it.
#include <numeric>

#include "passes/fusion_util.h"
#include "passes/pass.h"
#include "passes/rewrite_util.h"

namespace kestrel::passes {

namespace {

// A Transpose's permutation (empty attribute = reversed axes), or empty if the rank is unknown
// or the attribute is bad.
std::vector<int64_t> perm_of(const ir::Node* t) {
  const ir::Shape& s = t->input(0)->shape();
  auto perm = t->attr_ints("perm", std::vector<int64_t>{});
  if (!perm.is_ok() || !s.rank_known()) return {};
  std::vector<int64_t> p = *perm;
  if (p.empty()) {
    p.resize(static_cast<size_t>(s.rank()));
    for (size_t i = 0; i < p.size(); ++i) p[i] = s.rank() - 1 - static_cast<int64_t>(i);
  }
  if (static_cast<int64_t>(p.size()) != s.rank()) return {};
  std::vector<bool> seen(p.size(), false);
  for (int64_t a : p) {
    if (a < 0 || a >= s.rank() || seen[static_cast<size_t>(a)]) return {};
    seen[static_cast<size_t>(a)] = true;
  }
  return p;
}

class MergeTransposes final : public Pass {
 public:
  const char* name() const override { return "merge-transposes"; }

  core::Result<PassStats> run(ir::Graph& g, const PassContext&) override {
    PassStats stats;
    for (ir::Node* t2 : g.nodes()) {
      if (!t2->domain().empty() || t2->op_type() != "Transpose" || !t2->input(0)) continue;
      ir::Node* t1 = producer_is(t2->input(0), "Transpose");
      if (!t1 || !t1->input(0)) continue;
      std::vector<int64_t> p1 = perm_of(t1), p2 = perm_of(t2);
      if (p1.empty() || p1.size() != p2.size()) continue;
      std::vector<int64_t> p(p1.size());
      for (size_t i = 0; i < p.size(); ++i) p[i] = p1[static_cast<size_t>(p2[i])];
      std::vector<int64_t> id(p.size());
      std::iota(id.begin(), id.end(), 0);
      ir::Value* x = t1->input(0);
      const bool inner_dead = only_consumer(t2->input(0), t2);
      if (p == id) {
        if (!can_forward(t2->output(0), x)) continue;
        forward_value(g, t2->output(0), x);
        KESTREL_RETURN_IF_ERROR(g.remove_node(t2));
        if (inner_dead) KESTREL_RETURN_IF_ERROR(g.remove_node(t1));
        stats.removed += inner_dead ? 2 : 1;
        continue;
      }
      std::vector<ir::Node*> dead{t2};
      if (inner_dead) dead.push_back(t1);
      KESTREL_RETURN_IF_ERROR(replace_chain(g, t2, dead, "Transpose", "", {x}, {{"perm", p}}, t2->name()).status());
      stats.removed += inner_dead ? 1 : 0;
      stats.fused += inner_dead ? 0 : 1;
    }
    return stats;
  }
};

}  // namespace

std::unique_ptr<Pass> make_merge_transposes() {
  return std::make_unique<MergeTransposes>();
}

}  // namespace kestrel::passes
