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
  int pass_index = 0;
  for (int round = 0; round < kMaxRounds; ++round) {
    bool changed = false;
    for (auto& p : passes_) {
      if (ctx.on_pass_start) ctx.on_pass_start(p->name(), round, pass_index++);
      auto t0 = std::chrono::steady_clock::now();
      auto r = p->run(g, ctx);
      if (!r.is_ok()) return r.status().with_context(core::str_cat("pass ", p->name()));
      Status st = ir::verify_graph(g);
      if (!st.is_ok())
        return core::internal_error(core::str_cat("pass ", p->name(), " broke the graph: ", st.message()));
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
  if (opt_level < 2) return pm;
  // QDQ patterns are matched on the plain float ops, so the int8 lowering goes first.
  pm.add(make_lower_qdq());
  // Order matters inside a round: BatchNorm and constant Add/Mul go into the conv before the
  // epilogue fusions; patterns that consume MatMul / Add (attention, GELU, LayerNorm) before
  // MatMul + Add; the residual before the activation (the epilogue adds Z, then activates).
  pm.add(make_fold_batch_norm());
  pm.add(make_fold_conv_add_mul());
  pm.add(make_merge_transposes());
  pm.add(make_merge_reshapes());
  pm.add(make_fuse_gelu());
  pm.add(make_fuse_layer_norm());
  pm.add(make_fuse_attention());
  pm.add(make_fuse_matmul_add());
  pm.add(make_fuse_residual_add());
  pm.add(make_fuse_activation());
  pm.add(make_fuse_conv_max_pool());  // after the activation: the pool takes the activated rows
  // Last: takes Conv / FusedConv chains whose epilogues (bias, residual, activations) are complete.
  pm.add(make_fuse_pointwise_depthwise());
  // After it: a chain's projection never reads a squeeze-excite Mul (the depthwise output has other readers).
  pm.add(make_fuse_se_scale());
  pm.add(make_dead_code_elimination());
  return pm;
}

Status optimize(ir::Graph& g, int opt_level, const PassContext& ctx, std::vector<PassReport>* reports) {
  KESTREL_RETURN_IF_ERROR(ir::infer_graph(g, ctx.evaluator));
  PassManager pm = make_pipeline(opt_level);
  return pm.run(g, ctx, reports);
}

}  // namespace kestrel::passes
