// Folds an inference BatchNormalization into the Conv, ConvTranspose, Gemm or MatMul that feeds
// it: y = (conv(x) - mean) * s + beta with s = scale / sqrt(var + eps) becomes a conv with weights
// scaled per output channel and a new bias. Only f32 constants; the producer's output must have no
// other consumer.
#include <cmath>

#include "passes/fusion_util.h"
#include "passes/pass.h"
#include "passes/rewrite_util.h"

namespace kestrel::passes {

namespace {

struct BnParams {
  std::vector<double> s, shift;  // y = x * s + shift
};

std::optional<BnParams> read_bn(const ir::Node* bn) {
  if (bn->num_inputs() != 5 || !bn->input(0)) return std::nullopt;
  for (size_t i = 1; i < bn->num_outputs(); ++i)
    if (!bn->output(i)->uses().empty() || bn->output(i)->is_graph_output()) return std::nullopt;
  auto training = bn->attr_int("training_mode", 0);
  auto eps = bn->attr_float("epsilon", 1e-5f);
  if (!training.is_ok() || *training != 0 || !eps.is_ok()) return std::nullopt;
  auto scale = f32_constant(bn->input(1)), bias = f32_constant(bn->input(2)), mean = f32_constant(bn->input(3)),
       var = f32_constant(bn->input(4));
  if (!scale || !bias || !mean || !var) return std::nullopt;
  const size_t c = scale->size();
  if (bias->size() != c || mean->size() != c || var->size() != c) return std::nullopt;
  BnParams p;
  p.s.resize(c);
  p.shift.resize(c);
  for (size_t i = 0; i < c; ++i) {
    // Computed in double from the f32 epsilon, as the reference kernel does.
    p.s[i] = (*scale)[i] / std::sqrt((*var)[i] + static_cast<double>(static_cast<float>(*eps)));
    p.shift[i] = (*bias)[i] - (*mean)[i] * p.s[i];
    if (!std::isfinite(p.s[i]) || !std::isfinite(p.shift[i])) return std::nullopt;
  }
  return p;
}

// Conv / ConvTranspose: returns true if folded.
bool fold_into_conv(ir::Graph& g, ir::Node* conv, const BnParams& bn) {
  const bool transpose = conv->op_type() == "ConvTranspose";
  auto w = f32_constant(conv->input(1));
  if (!w || conv->input(1)->constant().rank() < 3) return false;
  const core::Dims wd = conv->input(1)->constant().dims();
  auto group = conv->attr_int("group", 1);
  if (!group.is_ok() || *group < 1) return false;
  // Output channels M and the output channel of each W element.
  const int64_t per_out = core::num_elements(core::Dims(wd.begin() + 2, wd.end()));
  const int64_t m = transpose ? wd[1] * *group : wd[0];
  if (static_cast<int64_t>(bn.s.size()) != m || (transpose && wd[0] % *group != 0)) return false;
  std::optional<std::vector<double>> b;
  if (conv->input(2)) {
    b = f32_constant(conv->input(2));
    if (!b || static_cast<int64_t>(b->size()) != m) return false;
  }
  std::vector<double> nw(*w);
  for (int64_t i = 0; i < wd[0]; ++i)
    for (int64_t j = 0; j < wd[1]; ++j) {
      const int64_t oc = transpose ? (i / (wd[0] / *group)) * wd[1] + j : i;
      for (int64_t k = 0; k < per_out; ++k) nw[static_cast<size_t>((i * wd[1] + j) * per_out + k)] *= bn.s[oc];
    }
  std::vector<double> nb(static_cast<size_t>(m));
  for (size_t i = 0; i < nb.size(); ++i) nb[i] = (b ? (*b)[i] : 0.0) * bn.s[i] + bn.shift[i];
  conv->set_input(1, add_f32_constant(g, conv->input(1)->name() + "_bn", nw, wd));
  ir::Value* bv = add_f32_constant(g, conv->name() + "_bn_bias", nb, {m});
  if (conv->num_inputs() > 2)
    conv->set_input(2, bv);
  else
    conv->add_input(bv);
  return true;
}

// Gemm (any transB, alpha, beta; C absent or per-column) with a constant 2-D B.
bool fold_into_gemm(ir::Graph& g, ir::Node* gemm, const BnParams& bn) {
  auto w = f32_constant(gemm->input(1));
  if (!w || gemm->input(1)->constant().rank() != 2) return false;
  auto tb = gemm->attr_int("transB", 0);
  auto beta = gemm->attr_float("beta", 1.0f);
  if (!tb.is_ok() || !beta.is_ok()) return false;
  const core::Dims wd = gemm->input(1)->constant().dims();
  const int64_t n = *tb ? wd[0] : wd[1];
  if (static_cast<int64_t>(bn.s.size()) != n) return false;
  std::vector<double> c(static_cast<size_t>(n), 0.0);
  if (ir::Value* cv = gemm->input(2)) {
    auto cd = f32_constant(cv);
    if (!cd) return false;
    const core::Dims& dims = cv->constant().dims();
    const bool per_col =
        cd->size() == static_cast<size_t>(n) && (dims.size() == 1 || (dims.size() == 2 && dims[0] == 1));
    if (cd->size() == 1 && dims.size() <= 2) {
      for (auto& x : c) x = (*cd)[0];
    } else if (per_col) {
      c = *cd;
    } else {
      return false;
    }
  }
  std::vector<double> nw(*w);
  for (int64_t r = 0; r < wd[0]; ++r)
    for (int64_t q = 0; q < wd[1]; ++q) nw[static_cast<size_t>(r * wd[1] + q)] *= bn.s[*tb ? r : q];
  for (size_t i = 0; i < c.size(); ++i) c[i] = *beta * c[i] * bn.s[i] + bn.shift[i];
  gemm->set_input(1, add_f32_constant(g, gemm->input(1)->name() + "_bn", nw, wd));
  ir::Value* cv = add_f32_constant(g, gemm->name() + "_bn_bias", c, {n});
  if (gemm->num_inputs() > 2)
    gemm->set_input(2, cv);
  else
    gemm->add_input(cv);
  gemm->set_attr("beta", 1.0f);
  return true;
}

class FoldBatchNorm final : public Pass {
 public:
  const char* name() const override { return "fold-batch-norm"; }

  core::Result<PassStats> run(ir::Graph& g, const PassContext&) override {
    PassStats stats;
    for (ir::Node* bn : g.nodes()) {
      if (!bn->domain().empty() || bn->op_type() != "BatchNormalization") continue;
      ir::Value* x = bn->input(0);
      ir::Node* p = x ? x->producer() : nullptr;
      if (!p || !p->domain().empty() || !only_consumer(x, bn) || x->dtype() != core::DType::kF32) continue;
      const std::string& op = p->op_type();
      if (op != "Conv" && op != "ConvTranspose" && op != "Gemm" && op != "MatMul") continue;
      std::optional<BnParams> params = read_bn(bn);
      if (!params) continue;
      if (op == "MatMul") {
        // [M, K] x [K, N] with BN over N: becomes Gemm(A, B * s, shift).
        if (!x->shape().rank_known() || x->shape().rank() != 2 || !p->input(0)->shape().rank_known() ||
            p->input(0)->shape().rank() != 2)
          continue;
        auto w = f32_constant(p->input(1));
        if (!w || p->input(1)->constant().rank() != 2) continue;
        const core::Dims wd = p->input(1)->constant().dims();
        if (static_cast<int64_t>(params->s.size()) != wd[1]) continue;
        for (int64_t r = 0; r < wd[0]; ++r)
          for (int64_t q = 0; q < wd[1]; ++q) (*w)[static_cast<size_t>(r * wd[1] + q)] *= params->s[q];
        ir::Value* nw = add_f32_constant(g, p->input(1)->name() + "_bn", *w, wd);
        ir::Value* nb = add_f32_constant(g, p->name() + "_bn_bias", params->shift, {wd[1]});
        KESTREL_RETURN_IF_ERROR(
            replace_chain(g, bn, {p, bn}, "Gemm", "", {p->input(0), nw, nb}, {}, p->name()).status());
        ++stats.removed;
        continue;
      }
      if (!x->shape().rank_known() || x->shape().rank() < 2) continue;
      const bool ok = op == "Gemm" ? fold_into_gemm(g, p, *params) : fold_into_conv(g, p, *params);
      if (!ok) continue;
      ir::Value* y = bn->output(0);
      if (!can_forward(y, x)) continue;  // cannot happen: x is a fresh node output used only here
      forward_value(g, y, x);
      KESTREL_RETURN_IF_ERROR(g.remove_node(bn));
      ++stats.removed;
    }
    if (stats.changed()) g.remove_unused_values();
    return stats;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_batch_norm() {
  return std::make_unique<FoldBatchNorm>();
}

}  // namespace kestrel::passes
