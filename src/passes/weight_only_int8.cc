// Weight-only int8: f32 MatMul / Gemm weights -> DequantizeLinear(int8 constant, f32 scale per
// output channel), symmetric (no zero point).
#include "passes/weight_only_int8.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/op_schema.h"

namespace kestrel::passes {

namespace {

using core::DType;

bool is_op(const ir::Node* n, const char* domain, const char* op) {
  return n->domain() == domain && n->op_type() == op;
}

}  // namespace

core::Result<WeightInt8Stats> quantize_weights_int8(ir::Graph& g, const WeightInt8Options& opts) {
  WeightInt8Stats stats;
  std::map<std::pair<const ir::Value*, int>, ir::Value*> done;  // (f32 weight, axis) -> DequantizeLinear output
  for (ir::Node* n : g.nodes()) {
    const bool matmul = is_op(n, "", "MatMul") || is_op(n, ir::kKestrelDomain, "FusedMatMul");
    const bool gemm = is_op(n, "", "Gemm") || is_op(n, ir::kKestrelDomain, "FusedGemm");
    if (!matmul && !gemm) continue;
    ir::Value* w = n->input(1);
    if (!w || !w->is_constant() || w->is_graph_output()) continue;
    const core::Tensor& t = w->constant();
    if (t.dtype() != DType::kF32 || t.rank() != 2 || t.num_elements() < opts.min_elements) continue;
    int axis = 1;
    if (gemm) {
      auto tb = n->attr_int("transB", 0);
      if (!tb.is_ok()) continue;
      axis = *tb != 0 ? 0 : 1;
    }
    auto it = done.find({w, axis});
    if (it != done.end()) {
      n->set_input(1, it->second);
      ++stats.nodes;
      continue;
    }
    const int64_t rows = t.dim(0), cols = t.dim(1), channels = axis == 1 ? cols : rows;
    const float* src = t.data<float>();
    bool finite = true;
    for (int64_t i = 0; i < t.num_elements() && finite; ++i) finite = std::isfinite(src[i]);
    if (!finite) continue;
    std::vector<float> amax(static_cast<size_t>(channels), 0.f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        float& m = amax[static_cast<size_t>(axis == 1 ? c : r)];
        m = std::max(m, std::fabs(src[r * cols + c]));
      }
    KESTREL_ASSIGN_OR_RETURN(core::Tensor q, core::Tensor::allocate(DType::kI8, {rows, cols}));
    KESTREL_ASSIGN_OR_RETURN(core::Tensor s, core::Tensor::allocate(DType::kF32, {channels}));
    float* sd = s.data<float>();
    for (int64_t c = 0; c < channels; ++c) {
      const float m = amax[static_cast<size_t>(c)];
      sd[c] = m > 0.f ? m / 127.f : 1.f;
    }
    int8_t* qd = q.data<int8_t>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const float v = std::nearbyint(src[r * cols + c] / sd[axis == 1 ? c : r]);
        qd[r * cols + c] = static_cast<int8_t>(std::clamp(v, -127.f, 127.f));
      }
    ir::Value* qv = g.add_constant(g.unique_value_name(w->name() + "_int8"), std::move(q));
    ir::Value* sv = g.add_constant(g.unique_value_name(w->name() + "_scale"), std::move(s));
    ir::Node* dq = g.insert_node_before(n, "DequantizeLinear", {qv, sv}, {g.unique_value_name(w->name() + "_dq")},
                                        g.unique_value_name(w->name() + "_dequantize"));
    dq->set_attr("axis", ir::Attribute(int64_t{axis}));
    dq->output(0)->set_type(w->type());
    n->set_input(1, dq->output(0));
    done[{w, axis}] = dq->output(0);
    ++stats.weights;
    ++stats.nodes;
    stats.f32_bytes += t.nbytes();
    stats.int8_bytes += static_cast<uint64_t>(rows * cols) + static_cast<uint64_t>(channels) * 4;
  }
  if (stats.weights > 0) g.remove_unused_values();
  return stats;
}

}  // namespace kestrel::passes
