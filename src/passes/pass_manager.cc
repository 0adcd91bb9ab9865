// Pass manager and the standard pipelines.
#include <map>

#include "core/str_util.h"
#include "ir/verifier.h"
#include "passes/pass.h"

namespace kestrel::passes {

using core::Status;

namespace {
constexpr int kMaxRounds = 4;
}

Status PassManager::run(ir::Graph& g, const PassContext& ctx, std::vector<PassReport>* reports) {
  std::map<std::string, size_t> index;
  for (int round = 0; round < kMaxRounds; ++round) {
    bool changed = false;
    for (auto& p : passes_) {
      auto t0 = std::chrono::steady_clock::now();
      auto r = p->run(g, ctx);
      if (!r.is_ok()) return r.status().with_context(core::str_cat("pass ", p->name()));
      Status st = ir::verify_graph(g);
      if (!st.is_ok()) return core::internal_error(core::str_cat("pass ", p->name(), " broke the graph: ", st.message()));
      if (r->changed()) {
        st = ir::infer_graph(g, ctx.evaluator);
        if (!st.is_ok()) return st.with_context(core::str_cat("after pass ", p->name()));
        changed = true;
      }
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (reports) {
        auto it = index.find(p->name());
        if (it == index.end()) {
          index[p->name()] = reports->size();
          reports->push_back({p->name(), *r, g.num_nodes(), ms});
        } else {
          PassReport& rep = (*reports)[it->second];
          rep.stats.removed += r->removed;
          rep.stats.fused += r->fused;
          rep.nodes_after = g.num_nodes();
          rep.ms += ms;
        }
      }
    }
    if (!changed) break;
  }
  return Status::ok();
}

PassManager make_pipeline(int opt_level) {
  PassManager pm;
  if (opt_level <= 0) return pm;
  pm.add(make_remove_noops());
  pm.add(make_constant_folding());
  pm.add(make_common_subexpression_elimination());
  pm.add(make_dead_code_elimination());
  return pm;
}

Status optimize(ir::Graph& g, int opt_level, const PassContext& ctx, std::vector<PassReport>* reports) {
  KESTREL_RETURN_IF_ERROR(ir::infer_graph(g, ctx.evaluator));
  PassManager pm = make_pipeline(opt_level);
  return pm.run(g, ctx, reports);
}

}  // namespace kestrel::passes
