// Constant folding: computes every node whose inputs are constants (or, for Shape/Size, whose
// input shape is static) with the reference kernels, and replaces it by constants.
#include "ir/op_schema.h"
#include "passes/pass.h"
#include "passes/rewrite_util.h"

namespace kestrel::passes {

namespace {

// DequantizeLinear of an 8-bit constant is how quantized weights are stored (QDQ models, kestrel
// quantize, weight-only int8): folding it would turn them back into f32 (4x the bytes) and hide
// them from the int8 kernels, which consume the integer weights and scales directly.
bool is_compressed_weight(const ir::Node& n) {
  if (!n.domain().empty() || n.op_type() != "DequantizeLinear" || n.num_inputs() == 0) return false;
  const ir::Value* x = n.input(0);
  return x && x->is_constant() && (x->dtype() == core::DType::kI8 || x->dtype() == core::DType::kU8);
}

class ConstantFolding final : public Pass {
 public:
  const char* name() const override { return "constant-folding"; }

  core::Result<PassStats> run(ir::Graph& g, const PassContext& ctx) override {
    PassStats stats;
    if (!ctx.evaluator) return stats;
    for (ir::Node* n : g.nodes()) {
      const ir::OpSchema* s = ir::OpRegistry::global().find(n->domain(), n->op_type());
      if (!s || s->nondeterministic || !n->subgraphs().empty() || !n->implicit_inputs().empty()) continue;
      if (is_compressed_weight(*n)) continue;
      std::vector<core::Tensor> holders(n->num_inputs());
      std::vector<const core::Tensor*> ins(n->num_inputs(), nullptr);
      bool foldable = true;
      for (size_t i = 0; i < n->num_inputs() && foldable; ++i) {
        ir::Value* v = n->input(i);
        if (!v) continue;
        if (v->is_constant()) {
          ins[i] = &v->constant();
        } else if (s->reads_only_shape(i) && v->shape().fully_known()) {
          holders[i] = core::Tensor::view(v->dtype(), v->shape().concrete(), nullptr);
          ins[i] = &holders[i];
        } else {
          foldable = false;
        }
      }
      if (!foldable) continue;
      // Do not blow up the model: skip outputs larger than the limit (when known up front).
      bool too_big = false;
      for (ir::Value* out : n->outputs()) {
        int64_t ne = out->shape().num_elements();
        if (ne > 0 && static_cast<size_t>(ne) * core::dtype_size(out->dtype()) > ctx.max_folded_bytes) too_big = true;
      }
      if (too_big) continue;
      auto r = (*ctx.evaluator)(*n, ins);
      if (!r.is_ok()) continue;  // leave it to run time, which reports the error with context
      KESTREL_RETURN_IF_ERROR(replace_with_constants(g, n, std::move(r).value()));
      ++stats.removed;
    }
    return stats;
  }
};

}  // namespace

std::unique_ptr<Pass> make_constant_folding() { return std::make_unique<ConstantFolding>(); }

}  // namespace kestrel::passes
