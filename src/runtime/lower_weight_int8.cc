// Weight-only int8 lowering at session load: DequantizeLinear(int8 W) -> MatMul / Gemm (and their
// fused forms) becomes kestrel.MatMulWeightInt8, so no f32 copy of W is ever folded or packed.
#include "runtime/lower_weight_int8.h"

#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/str_util.h"
#include "ir/op_schema.h"
#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace {

using core::DType;

bool is_op(const ir::Node* n, const char* domain, const char* op) {
  return n && n->domain() == domain && n->op_type() == op;
}

// The per-output-channel scale as floats (length n), or nullopt if DequantizeLinear `dq` is not a
// weight-only int8 dequantization of a rank-2 constant along `out_axis`.
std::optional<std::vector<float>> weight_scale(const ir::Node* dq, int out_axis, int64_t n) {
  const ir::Value* w = dq->input(0);
  const ir::Value* s = dq->input(1);
  if (!w || !w->is_constant() || w->constant().dtype() != DType::kI8 || w->constant().rank() != 2) return std::nullopt;
  if (!s || !s->is_constant() || s->constant().dtype() != DType::kF32) return std::nullopt;
  if (const ir::Value* zp = dq->input(2)) {
    if (!zp->is_constant() || zp->constant().dtype() != DType::kI8) return std::nullopt;
    for (int8_t z : zp->constant().span<int8_t>())
      if (z != 0) return std::nullopt;
  }
  auto bs = dq->attr_int("block_size", 0);
  if (!bs.is_ok() || *bs != 0) return std::nullopt;
  auto axis = dq->attr_int("axis", 1);
  if (!axis.is_ok()) return std::nullopt;
  const int64_t ax = *axis < 0 ? *axis + 2 : *axis;
  const core::Tensor& st = s->constant();
  std::vector<float> out(static_cast<size_t>(n));
  if (st.num_elements() == 1) {
    for (float& x : out) x = st.data<float>()[0];
  } else if (st.rank() == 1 && st.num_elements() == n && ax == out_axis) {
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = st.data<float>()[i];
  } else {
    return std::nullopt;
  }
  for (float x : out)
    if (!std::isfinite(x)) return std::nullopt;
  return out;
}

ir::Value* f32_constant(ir::Graph& g, const std::string& hint, const std::vector<float>& v) {
  core::Tensor t = core::Tensor::allocate(DType::kF32, {static_cast<int64_t>(v.size())}).value();
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = v[i];
  return g.add_constant(g.unique_value_name(hint), std::move(t));
}

// Lowers node n if it matches; returns whether it did.
core::Result<bool> lower_node(ir::Graph& g, ir::Node* n) {
  const bool matmul = is_op(n, "", "MatMul") || is_op(n, ir::kKestrelDomain, "FusedMatMul");
  const bool gemm = is_op(n, "", "Gemm") || is_op(n, ir::kKestrelDomain, "FusedGemm");
  if (!matmul && !gemm) return false;
  ir::Value* a = n->input(0);
  ir::Value* b = n->input(1);
  if (!a || !b || a->dtype() != DType::kF32 || n->num_outputs() != 1) return false;
  ir::Node* dq = b->producer();
  if (!is_op(dq, "", "DequantizeLinear") || b->is_graph_output()) return false;
  if (a->producer() && is_op(a->producer(), "", "DequantizeLinear")) return false;
  const core::Tensor& w = dq->input(0) && dq->input(0)->is_constant() ? dq->input(0)->constant() : core::Tensor();
  if (!w.defined() || w.rank() != 2) return false;

  int64_t trans_b = 0;
  float alpha = 1.f, beta = 1.f;
  if (gemm) {
    auto ta = n->attr_int("transA", 0);
    auto tb = n->attr_int("transB", 0);
    auto al = n->attr_float("alpha", 1.f);
    auto be = n->attr_float("beta", 1.f);
    if (!ta.is_ok() || !tb.is_ok() || !al.is_ok() || !be.is_ok() || *ta != 0) return false;
    if (!a->shape().rank_known() || a->shape().rank() != 2) return false;
    trans_b = *tb != 0 ? 1 : 0;
    alpha = *al;
    beta = *be;
  }
  const int64_t nn = trans_b ? w.dim(0) : w.dim(1);
  std::optional<std::vector<float>> scale = weight_scale(dq, trans_b ? 0 : 1, nn);
  if (!scale) return false;
  for (float& x : *scale) x *= alpha;

  ir::Value* bias = nullptr;
  ir::Value* z = nullptr;
  if (matmul) {
    bias = n->input(2);
    z = n->input(3);
  } else if (ir::Value* c = n->input(2)) {
    // beta * C as a per-column bias: only a constant [N] / [1, N] C.
    if (!c->is_constant() || c->constant().dtype() != DType::kF32 || c->constant().num_elements() != nn ||
        c->constant().rank() > 2 || (c->constant().rank() == 2 && c->constant().dim(0) != 1))
      return false;
    std::vector<float> bv(static_cast<size_t>(nn));
    for (int64_t i = 0; i < nn; ++i) bv[static_cast<size_t>(i)] = beta * c->constant().data<float>()[i];
    bias = f32_constant(g, c->name() + "_bias", bv);
  }

  ir::Value* s = f32_constant(g, dq->input(1)->name() + "_per_channel", *scale);
  std::vector<ir::Value*> inputs = {a, dq->input(0), s, bias, z};
  while (!inputs.empty() && !inputs.back()) inputs.pop_back();
  ir::Value* old_out = n->output(0);
  ir::Node* m = g.insert_node_before(n, "MatMulWeightInt8", inputs, {g.unique_value_name(old_out->name() + "_int8w")},
                                     n->name(), ir::kKestrelDomain);
  m->set_attr("transB", ir::Attribute(trans_b));
  for (const char* attr : {"activation", "activation_params"})
    if (const ir::Attribute* at = n->attr(attr)) m->set_attr(attr, *at);
  m->output(0)->set_type(old_out->type());
  const bool was_output = old_out->is_graph_output();
  const std::string name = old_out->name();
  g.replace_all_uses(old_out, m->output(0));
  if (was_output) {
    g.rename_value(old_out, g.unique_value_name(name + "_old"));
    g.rename_value(m->output(0), name);
  }
  KESTREL_RETURN_IF_ERROR(g.remove_node(n));
  if (dq->output(0)->uses().empty() && !dq->output(0)->is_graph_output()) KESTREL_RETURN_IF_ERROR(g.remove_node(dq));
  return true;
}

}  // namespace

core::Result<int> lower_weight_int8(ir::Graph& g) {
  int count = 0;
  // Producers come before consumers, so a DequantizeLinear removed here was visited already; the
  // set guards the list copy against visiting a removed node anyway.
  std::set<const ir::Node*> removed;
  for (ir::Node* n : g.nodes()) {
    if (removed.count(n)) continue;
    ir::Node* dq = n->num_inputs() > 1 && n->input(1) ? n->input(1)->producer() : nullptr;
    const bool dq_goes = dq && dq->output(0)->uses().size() == 1 && !dq->output(0)->is_graph_output();
    KESTREL_ASSIGN_OR_RETURN(bool done, lower_node(g, n));
    if (!done) continue;
    ++count;
    removed.insert(n);
    if (dq_goes) removed.insert(dq);
  }
  if (count > 0) g.remove_unused_values();
  return count;
}

core::Result<int> fold_weight_dequantize(ir::Graph& g) {
  int count = 0;
  for (ir::Node* n : g.nodes()) {
    if (!n->domain().empty() || n->op_type() != "DequantizeLinear" || n->output(0)->is_graph_output()) continue;
    std::vector<const core::Tensor*> ins;
    bool constant = true;
    for (const ir::Value* v : n->inputs()) {
      if (v && !v->is_constant()) constant = false;
      ins.push_back(v && v->is_constant() ? &v->constant() : nullptr);
    }
    if (!constant) continue;
    KESTREL_ASSIGN_OR_RETURN(std::vector<core::Tensor> out, evaluate_node(*n, ins));
    if (out.size() != 1) return core::internal_error(core::str_cat(n->describe(), ": expected one output"));
    ir::Value* c = g.add_constant(g.unique_value_name(n->output(0)->name() + "_folded"), std::move(out[0]));
    g.replace_all_uses(n->output(0), c);
    KESTREL_RETURN_IF_ERROR(g.remove_node(n));
    ++count;
  }
  if (count > 0) g.remove_unused_values();
  return count;
}

}  // namespace kestrel::runtime
