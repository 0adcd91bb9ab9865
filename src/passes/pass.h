// Graph optimization passes and the pass manager that runs them (kestrel convert, Session load).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"
#include "ir/op_schema.h"

namespace kestrel::passes {

struct PassContext {
  // Computes a node from constant inputs (the runtime's reference kernels); required by folding.
  const ir::NodeEvaluator* evaluator = nullptr;
  // Do not fold constants larger than this many bytes (keeps the file from growing, e.g. Expand).
  size_t max_folded_bytes = size_t{64} << 20;
  // Called before each pass runs (progress display); `index` counts passes run so far.
  std::function<void(const char* pass, int round, int index)> on_pass_start;
};

// What one pass did to the graph.
struct PassStats {
  int removed = 0;  // nodes deleted (dead code, no-ops, folded into constants or other nodes)
  int fused = 0;    // patterns replaced by a fused node
  bool changed() const { return removed != 0 || fused != 0; }
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual const char* name() const = 0;
  virtual core::Result<PassStats> run(ir::Graph& g, const PassContext& ctx) = 0;
};

struct PassReport {
  std::string name;
  PassStats stats;
  size_t nodes_after = 0;  // after the pass's first run (first round)
  double ms = 0;
};

class PassManager {
 public:
  void add(std::unique_ptr<Pass> p) { passes_.push_back(std::move(p)); }
  size_t size() const { return passes_.size(); }
  // Runs the passes in order, then again while any of them changes the graph (at most a few
  // rounds). After each pass the graph is verified and its types re-inferred. Reports are
  // merged per pass name.
  core::Status run(ir::Graph& g, const PassContext& ctx, std::vector<PassReport>* reports = nullptr);

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

// The standard pipeline: -O0 nothing, -O1 cleanups and folding, -O2 also every fusion.
PassManager make_pipeline(int opt_level);

// Runs make_pipeline(opt_level) on g with the runtime's reference evaluator supplied by the caller.
core::Status optimize(ir::Graph& g, int opt_level, const PassContext& ctx, std::vector<PassReport>* reports = nullptr);

// The individual passes (one file each in this folder).
std::unique_ptr<Pass> make_constant_folding();
std::unique_ptr<Pass> make_dead_code_elimination();
std::unique_ptr<Pass> make_common_subexpression_elimination();
std::unique_ptr<Pass> make_remove_noops();
// -O2 int8 lowering of QDQ graphs (docs/quantization.md), before the float fusions.
std::unique_ptr<Pass> make_lower_qdq();
// -O2 fusions (docs/fused_ops.md for the kestrel ops they produce).
std::unique_ptr<Pass> make_fold_batch_norm();
std::unique_ptr<Pass> make_fold_conv_add_mul();
std::unique_ptr<Pass> make_merge_transposes();
std::unique_ptr<Pass> make_merge_reshapes();
std::unique_ptr<Pass> make_fuse_gelu();
std::unique_ptr<Pass> make_fuse_layer_norm();
std::unique_ptr<Pass> make_fuse_attention();
std::unique_ptr<Pass> make_fuse_matmul_add();
std::unique_ptr<Pass> make_fuse_residual_add();
std::unique_ptr<Pass> make_fuse_activation();
std::unique_ptr<Pass> make_fuse_conv_max_pool();
std::unique_ptr<Pass> make_fuse_pointwise_depthwise();
std::unique_ptr<Pass> make_fuse_se_scale();

}  // namespace kestrel::passes
